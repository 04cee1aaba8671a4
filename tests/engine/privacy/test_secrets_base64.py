"""Issue 32.1, the base64 stretch: credentials hidden in base64 are masked, decided by their
context (``Basic``, an ``auth`` key, a secret-named key or variable, a k8s Secret) and by what
they decode to (``user:password``, a private key, a JSON document naming a secret); ordinary
base64 (images, certificates, public keys, plain JSON) stays as it is."""

from __future__ import annotations

import base64
import json

import pytest

from ctxlab.engine.privacy import encoded
from ctxlab.engine.privacy.secrets import find_secrets, find_secrets_exhaustive, mask


def b64(data: str | bytes) -> str:
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


# Made-up values shaped like the real thing; the DER keys are headers over filler bytes.
USER_PASS = b64("deploy:S3cr3t-Passw0rd!")
SERVICE_ACCOUNT = b64(
    json.dumps(
        {
            "type": "service_account",
            "project_id": "demo-project",
            "private_key_id": "0a1b2c3d4e5f",
            "client_email": "ci@demo-project.iam.gserviceaccount.com",
        },
        indent=2,
    )
)
SERVICE_ACCOUNT_COMPACT = b64('{"type":"service_account","client_id":"1234567890"}')
PEM_KEY = b64(
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx7Zq\n-----END RSA PRIVATE KEY-----\n"
)
DER_KEY = b64(b"\x30\x82\x04\xa4\x02\x01\x00\x02\x82\x01\x01\x00" + bytes(range(7, 97)))
OPENSSH_KEY = b64(b"openssh-key-v1\x00\x00\x00\x00\x04none" + bytes(range(40, 90)))
DOCKER_AUTH = b64("robot$ci:Zq7x2Lk9Pw4Rt6Yb")
ENCODED_TOKEN = b64("ghp_4Fq8Lm2Xz9Rt6Wb1Nc7Vd3Kg5Hj0Ps2Ye4Qa")
ENCODED_PASSWORD = b64("hunter2-correct-horse")

SHAPES = {
    "basic": (f"Basic {USER_PASS}", USER_PASS),
    "basic-lower": (f"basic {USER_PASS}", USER_PASS),
    "curl-header": (f"Authorization: Basic {USER_PASS}", USER_PASS),
    "service-account-ewog": (SERVICE_ACCOUNT, SERVICE_ACCOUNT),
    "service-account-eyJ": (SERVICE_ACCOUNT_COMPACT, SERVICE_ACCOUNT_COMPACT),
    "pem-private-key": (PEM_KEY, PEM_KEY),
    "der-private-key": (DER_KEY, DER_KEY),
    "openssh-private-key": (OPENSSH_KEY, OPENSSH_KEY),
    "env-secret": (f"SECRET={ENCODED_PASSWORD}", ENCODED_PASSWORD),
    "env-key-b64": (f"SIGNING_KEY_B64={ENCODED_PASSWORD}", ENCODED_PASSWORD),
    "env-token-base64": (f"DEPLOY_TOKEN_BASE64={ENCODED_PASSWORD}", ENCODED_PASSWORD),
    "env-credentials": (f"GOOGLE_CREDENTIALS={SERVICE_ACCOUNT}", SERVICE_ACCOUNT),
    "json-client-secret": (f'"client_secret": "{ENCODED_PASSWORD}"', ENCODED_PASSWORD),
    "json-private-key": (f'"private_key": "{PEM_KEY}"', PEM_KEY),
    "url-token": (f"https://api.example.com/v1?token={ENCODED_PASSWORD}&page=2", ENCODED_PASSWORD),
    "url-auth": (f"https://registry.example.com/?auth={DOCKER_AUTH}", DOCKER_AUTH),
    "docker-auth": (f'"auth": "{DOCKER_AUTH}"', DOCKER_AUTH),
    "yaml-auth": (f"auth: {DOCKER_AUTH}", DOCKER_AUTH),
    "encoded-token": (f"api_key={ENCODED_TOKEN}", ENCODED_TOKEN),
    "yaml-password": (f"password: {ENCODED_PASSWORD}", ENCODED_PASSWORD),
}
AROUND = [
    ("", ""),
    ("see ", "."),
    ("see ", ","),
    ("(", ")"),
    ("[", "]"),
    ("{", "}"),
    ('"', '"'),
    ("'", "'"),
    ("`", "`"),
    ("<", ">"),
    ("", ";"),
    ("", "\n"),
    ("", "\r\n"),
    ("", "\\n"),
    ("x ", "!"),
    ("", "|"),
]


@pytest.mark.parametrize("shape", SHAPES, ids=list(SHAPES))
@pytest.mark.parametrize("before,after", AROUND)
def test_base64_credential_is_masked_whatever_surrounds_it(
    shape: str, before: str, after: str
) -> None:
    planted, secret = SHAPES[shape]
    text = f"{before}{planted}{after}"
    masked = mask(text)
    assert secret not in masked, masked
    assert masked.startswith(before) and masked.endswith(after), masked
    assert find_secrets(text) == find_secrets_exhaustive(text)


def test_a_pem_body_wrapped_over_lines_is_masked_whole() -> None:
    wrapped = "\n".join(DER_KEY[i : i + 64] for i in range(0, len(DER_KEY), 64))
    masked = mask(f"key body:\n{wrapped}\nthat is all")
    assert not any(line in masked for line in wrapped.splitlines())
    assert masked.endswith("\nthat is all")


K8S_YAML = f"""apiVersion: v1
kind: Secret
metadata:
  name: registry
type: Opaque
data:
  username: {b64("admin-user")}
  tls.key: {PEM_KEY}
  .dockerconfigjson: {b64(json.dumps({"auths": {"ghcr.io": {"auth": DOCKER_AUTH}}}))}
  note: "{b64("quoted value 42")}"
---
apiVersion: v1
kind: ConfigMap
data:
  greeting: {b64("hello world")}
"""


def test_k8s_secret_data_values_are_masked_and_other_kinds_stay() -> None:
    masked = mask(K8S_YAML)
    secret_doc, config_doc = masked.split("---")
    for line in K8S_YAML.split("---")[0].splitlines()[6:]:
        value = line.split(": ", 1)[1].strip('"')
        assert value not in secret_doc, line
    assert "name: registry" in secret_doc and "type: Opaque" in secret_doc
    assert config_doc == K8S_YAML.split("---")[1]  # a ConfigMap is not a Secret
    assert find_secrets(K8S_YAML) == find_secrets_exhaustive(K8S_YAML)


def test_k8s_secret_as_kubectl_json_is_masked() -> None:
    document = json.dumps(
        {"apiVersion": "v1", "kind": "Secret", "data": {"api": b64("k3y-v@lue"), "user": "YWRt"}},
        indent=2,
    )
    masked = mask(document)
    assert b64("k3y-v@lue") not in masked and '"YWRt"' not in masked
    assert '"kind": "Secret"' in masked


PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
CERTIFICATE = b64(
    "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBa\n-----END CERTIFICATE-----\n"
)
DER_CERTIFICATE = b64(b"\x30\x82\x03\x77\x30\x82\x02\x5f\xa0\x03\x02\x01\x02" + bytes(range(60)))
DER_PUBLIC_KEY = b64(b"\x30\x82\x01\x22\x30\x0d\x06\x09\x2a\x86\x48\x86\xf7\x0d" + bytes(range(60)))


@pytest.mark.parametrize(
    "text",
    [
        f"data:image/png;base64,{PNG}",
        f'{{"type": "image", "source": {{"type": "base64", "data": "{PNG * 40}"}}}}',
        f"ca.crt: {CERTIFICATE}",
        CERTIFICATE,
        DER_CERTIFICATE,
        DER_PUBLIC_KEY,
        b64(json.dumps({"alg": "HS256", "typ": "JWT"})),
        b64(json.dumps({"name": "ctxlab", "version": "1.0", "items": [1, 2, 3]}, indent=2)),
        "Basic configuration and Basic usage of the Basic authentication scheme",
        "Basic dGhpcyBpcyBwcm9zZQ==",  # "this is prose": no user:password
        f"kind: ConfigMap\ndata:\n  greeting: {b64('hello world')}",
        '"total_tokens": 25562709, "auth": "required"',
        "MIGRATION_MODULES_DISABLED = True",
        f"checksum: sha256:{'ab12' * 16}",
    ],
    ids=[
        "data-url",
        "image-block",
        "k8s-cert",
        "pem-certificate",
        "der-certificate",
        "der-public-key",
        "jwt-header-alone",
        "plain-json",
        "prose",
        "basic-prose",
        "configmap",
        "counts",
        "migration-word",
        "sha",
    ],
)
def test_ordinary_base64_is_not_a_credential(text: str) -> None:
    assert mask(text) == text, find_secrets(text)
    assert find_secrets(text) == find_secrets_exhaustive(text)


@pytest.mark.parametrize(
    "raw,expected",
    [
        (b"deploy:S3cr3t", True),
        (b":token-only-123", True),
        (b"no colon here", False),
        (b"two\nlines:here", False),
        (b"\xff\xfe:binary", False),
    ],
)
def test_user_password_shape(raw: bytes, expected: bool) -> None:
    assert encoded.is_user_password(raw) is expected


def test_decode_takes_base64url_and_wrapped_lines_and_refuses_the_rest() -> None:
    assert encoded.decode(b64("a:b-c") + "\n") == b"a:b-c"
    assert encoded.decode(base64.urlsafe_b64encode(b"\xfb\xff:x").decode()) == b"\xfb\xff:x"
    assert encoded.decode("not base64!") is None
    assert encoded.decode("abc") is None  # too short to hold anything
    assert encoded.decode(b64("a:b-cd") + "\nx") == b"a:b-cd"  # a stray character after it
