"""Images kept in a transcript, shown as thumbnails on the transcript page.

A transcript is untrusted, and so are the media type and bytes it claims. Only the raster
types a browser draws without running anything (PNG, JPEG, GIF, WebP) become an ``<img>``
with a ``data:`` URL (the page's CSP allows ``img-src data:``, nothing else is needed); SVG
(which can carry script) and every other type stay a line of text. The base64 must be plain
base64 (the ``data:`` URL cannot be broken out of) and its first bytes must be the declared
format's signature, so a file that lies about its type is not embedded either.
"""

from __future__ import annotations

import binascii
import re
from typing import Any

# Media type -> the signatures its files start with (WebP: RIFF....WEBP, checked below).
SIGNATURES: dict[str, tuple[bytes, ...]] = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),
}
ALIASES = {"image/jpg": "image/jpeg", "image/pjpeg": "image/jpeg"}
# Anthropic's own limit per image; larger payloads would make one page of messages huge.
MAX_INLINE_BYTES = 5 * 1024 * 1024
_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")
_WHITESPACE = re.compile(r"\s+")


def _kind(media_type: str) -> str:
    kind = media_type.strip().lower()
    return ALIASES.get(kind, kind)


def _plain_base64(data: str) -> str | None:
    """The payload without line breaks (some sources wrap base64), or None if it is not
    base64 at all."""
    if not _BASE64.fullmatch(data):
        data = _WHITESPACE.sub("", data)
        if not _BASE64.fullmatch(data):
            return None
    return data if len(data) % 4 == 0 else None


def check(media_type: str, data: str, size: int) -> tuple[str, str]:
    """``(base64 to embed, "")`` for a safe image, else ``("", why it is not shown)``."""
    if not data:
        return "", "no bytes in the transcript"
    kind = _kind(media_type)
    if kind not in SIGNATURES:
        return "", f"{media_type or 'unknown type'} is not shown inline (only PNG, JPEG, GIF, WebP)"
    if size > MAX_INLINE_BYTES:
        return "", f"larger than {MAX_INLINE_BYTES // (1024 * 1024)} MB"
    plain = _plain_base64(data)
    if plain is None:
        return "", "not valid base64"
    head = binascii.a2b_base64(plain[:24])
    if not head.startswith(SIGNATURES[kind]) or (kind == "image/webp" and head[8:12] != b"WEBP"):
        return "", f"the bytes are not {kind}"
    return plain, ""


def thumbnail(block: dict[str, Any]) -> dict[str, Any] | None:
    """``{"src", "media_type", "size"}`` for a media block whose bytes are a safe image."""
    data = block.get("data")
    if block.get("kind") != "media" or not isinstance(data, str):
        return None
    media_type = str(block.get("media_type") or "")
    plain, why = check(media_type, data, int(block.get("size") or 0))
    if why:
        return None
    kind = _kind(media_type)
    return {"src": f"data:{kind};base64,{plain}", "media_type": kind, "size": block.get("size")}


def json_block(block: dict[str, Any]) -> dict[str, Any]:
    """A codec block for the JSON twin: a media block's bytes are left out (the page shows
    them), replaced by ``data_bytes`` and ``thumbnail`` (shown or why not); parts alike."""
    parts = block.get("parts")
    if "data" not in block and not parts:
        return block
    out = dict(block)
    if parts:
        out["parts"] = [json_block(p) for p in parts]
    data = out.pop("data", None)
    if isinstance(data, str) and block.get("kind") == "media":
        _, why = check(str(block.get("media_type") or ""), data, int(block.get("size") or 0))
        out["data_bytes"] = int(block.get("size") or 0)
        out["thumbnail"] = {"shown": not why, **({"refused": why} if why else {})}
    return out
