"""Credentials hidden in base64: what an encoded value decodes to decides whether it is one.

Long base64 is everyday transcript content (images, archives, hashes), so an encoded value is
never masked for being base64. It is masked when its context names a credential (``Basic``,
an ``auth`` key, a secret-named key or variable) *and* it decodes to a credential's shape, or
when it starts like an encoded credential and decodes to one:

- ``user:password`` (HTTP Basic, docker's ``"auth"``);
- a PEM private key (``LS0tLS1CRUdJTi`` is ``-----BEGIN``; certificates and public keys are
  not secrets and stay);
- a DER private key (the body of a PEM block without its header lines: a SEQUENCE whose
  first element is the version INTEGER 0 or 1; a certificate or public key starts with a
  SEQUENCE) or an OpenSSH private key (``openssh-key-v1``);
- a JSON document holding a secret-named key (a service-account key file, a docker
  ``auths`` config: ``eyJ…``/``ewog…`` are ``{"``/``{\\n``).

Nothing here knows the text patterns; ``secrets.py`` calls these checks on what it matched.
"""

from __future__ import annotations

import base64
import binascii
import re

# Decoding is bounded: every check needs only the start (JSON keys within the first 64 KB).
MAX_DECODED_CHARS = 88_000
_WRAPPING = re.compile(r"\s+|\\r|\\n")
_B64 = re.compile(r"[A-Za-z0-9+/\-_]+={0,2}")
_USER_PASS = re.compile(r"[^\s:\x00-\x1f\x7f]{0,256}:[^\s\x00-\x1f\x7f]{3,512}")
_SECRET_JSON_KEY = re.compile(
    r'(?i)"(?:private_?key|client_?secret|secret(?:_?key)?|secret_access_key|password|passwd'
    r"|pwd|token|access_?token|refresh_?token|id_token|session_?token|api_?key|auths?"
    r'|credentials?)"\s*:\s*(?:"[^"\s]{4,}|\{)'
)
_SERVICE_ACCOUNT = re.compile(r'"type"\s*:\s*"(?:service_account|authorized_user)"')
_PEM_PRIVATE = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")


def decode(value: str) -> bytes | None:
    """The bytes of a base64 (or base64url) value, line breaks ignored; None if it is not."""
    compact = _WRAPPING.sub("", value[:MAX_DECODED_CHARS])
    if len(compact) < 4 or not _B64.fullmatch(compact):
        return None
    body = compact.rstrip("=")
    if len(body) % 4 == 1:  # a stray character after the value: read what precedes it
        body = body[:-1]
    padded = body + "=" * (-len(body) % 4)
    try:
        if "-" in body or "_" in body:
            return base64.urlsafe_b64decode(padded)
        return base64.b64decode(padded, validate=True)
    except (binascii.Error, ValueError):
        return None


def _text(raw: bytes) -> str | None:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def is_user_password(raw: bytes) -> bool:
    """``user:password`` (the user may be empty: ``:token``), printable, one line."""
    text = _text(raw)
    return text is not None and _USER_PASS.fullmatch(text) is not None


def is_private_key(raw: bytes) -> bool:
    """A PEM private key, a DER private key (PKCS#1, PKCS#8, SEC1) or an OpenSSH one."""
    if raw.startswith(b"-----BEGIN"):
        head = raw[:120].decode("ascii", errors="replace")
        return _PEM_PRIVATE.match(head) is not None
    if raw.startswith(b"openssh-key-v1\x00"):
        return True
    return _der_private_key(raw)


def _der_private_key(raw: bytes) -> bool:
    """SEQUENCE { INTEGER 0|1, ... } of a plausible length: PKCS#1/PKCS#8/SEC1 private keys
    start so; certificates, public keys and encrypted keys start with a nested SEQUENCE."""
    if len(raw) < 40 or raw[0] != 0x30:
        return False
    first = raw[1]
    if first < 0x80:
        at = 2
    elif first in (0x81, 0x82):
        at = 2 + (first - 0x80)
    else:
        return False
    return raw[at : at + 3] in (b"\x02\x01\x00", b"\x02\x01\x01")


def is_secret_json(raw: bytes) -> bool:
    """A JSON document naming a secret (a service-account key, a docker ``auths`` config)."""
    text = _text(raw)
    if text is None or not text.lstrip().startswith("{"):
        return False
    return bool(_SECRET_JSON_KEY.search(text) or _SERVICE_ACCOUNT.search(text))


def decoded_text(raw: bytes) -> str | None:
    """The decoded bytes as text, for a scan of what they hold (None if not UTF-8)."""
    return _text(raw)
