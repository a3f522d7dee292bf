"""Who sent a request: a MUNGE credential, checked by munged and bound to the request.

munged refuses forged credentials (wrong key, altered bytes), expired ones (past their TTL)
and replayed ones (decoded before). The service adds what munged cannot know: the payload
must name this very request (protocol.request_payload), the TTL may not exceed the site's
limit, and a credential is accepted once by this process even if munged's replay cache
were lost (a restart of munged).
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable

from slurm_io import munge
from slurm_io.service.protocol import AUTH_SCHEME, request_payload


class Unauthorized(Exception):
    """401: the message says why, for the client to print."""


class ReplayCache:
    """Digests of the credentials accepted, kept until they expire."""

    def __init__(self) -> None:
        self._seen: dict[str, float] = {}
        self._lock = threading.Lock()

    def first_use(self, credential: str, expires: float, now: float) -> bool:
        key = hashlib.sha256(credential.encode()).hexdigest()
        with self._lock:
            if len(self._seen) > 10_000:
                self._seen = {k: t for k, t in self._seen.items() if t > now}
            if key in self._seen:
                return False
            self._seen[key] = expires
            return True


def authenticate(header: str | None, method: str, target: str, body: bytes, *,
                 decode: Callable[[str], munge.Credential], replay: ReplayCache,
                 max_ttl: int, now: float | None = None) -> munge.Credential:
    """The verified credential of a request, or Unauthorized."""
    if not header:
        raise Unauthorized("no credential: the request needs `Authorization: MUNGE <cred>`")
    scheme, _, credential = header.strip().partition(" ")
    if scheme != AUTH_SCHEME or not credential.strip():
        raise Unauthorized(f"not a MUNGE credential (Authorization: {AUTH_SCHEME} <cred>)")
    credential = credential.strip()
    try:
        cred = decode(credential)
    except munge.MungeError as e:
        raise Unauthorized(f"MUNGE credential refused: {e}") from e
    if cred.payload != request_payload(method, target, body):
        raise Unauthorized("MUNGE credential refused: it was not made for this request")
    if cred.ttl > max_ttl:
        raise Unauthorized(f"MUNGE credential refused: TTL {cred.ttl} s is over the "
                           f"service's limit of {max_ttl} s")
    now = time.time() if now is None else now
    if not replay.first_use(credential, cred.encode_time + cred.ttl + 1, now):
        raise Unauthorized("MUNGE credential refused: Replayed credential")
    return cred
