"""What client and service agree on: the schema version and the credential's payload.

Pure and tiny, imported by both sides (the client must not import the service's server).
"""

from __future__ import annotations

import hashlib

SCHEMA = "slurm-io/1"  # the "schema" member of every document; bumped on incompatible change
AUTH_SCHEME = "MUNGE"  # Authorization: MUNGE <credential>


def request_payload(method: str, target: str, body: bytes) -> bytes:
    """The payload a request's credential must carry: the schema, the method, the target
    (path and query, exactly as sent) and the body's SHA-256. A credential therefore
    authorises one request and nothing else."""
    digest = hashlib.sha256(body).hexdigest()
    return f"{SCHEMA}\n{method.upper()}\n{target}\n{digest}".encode()
