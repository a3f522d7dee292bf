"""What client and service agree on: the schema version and the credential's payload.

Pure and tiny, imported by both sides (the client must not import the service's server).
"""

from __future__ import annotations

SCHEMA = "slurm-io/1"  # the "schema" member of every document; bumped on incompatible change
AUTH_SCHEME = "MUNGE"  # Authorization: MUNGE <credential>
# SHA-256 of b"": every request the client sends is a GET without a body, and hashlib (with
# OpenSSL's _hashlib) is ~1.2 ms of a client's start-up (issue 25)
EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def request_payload(method: str, target: str, body: bytes) -> bytes:
    """The payload a request's credential must carry: the schema, the method, the target
    (path and query, exactly as sent) and the body's SHA-256. A credential therefore
    authorises one request and nothing else."""
    if body:
        import hashlib

        digest = hashlib.sha256(body).hexdigest()
    else:
        digest = EMPTY_SHA256
    return f"{SCHEMA}\n{method.upper()}\n{target}\n{digest}".encode()
