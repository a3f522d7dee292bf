"""One request to the jobio service, authenticated by a MUNGE credential bound to it.

The credential's payload is `auth.request_payload(method, target, body)`: the service
refuses it for any other request, and munged refuses it a second time. Every failure (the
service down, a refusal, a credential munged would not make) becomes a ServiceError whose
message is the one line the user sees.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from slurm_io import munge
from slurm_io.service.protocol import AUTH_SCHEME, request_payload


class ServiceError(Exception):
    """The request got no answer, or a refusal; str() is the message for the user."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def call(server: str, method: str, path: str, params: list[tuple[str, str]] | None = None,
         *, munge_socket: str | None = None, ca_file: Path | None = None,
         timeout: float = 60.0, credential: str | None = None) -> Any:
    """The decoded JSON answer of `method path?params`. `credential` replaces the one
    minted here (tests send forged or replayed ones)."""
    target = path + ("?" + urllib.parse.urlencode(params) if params else "")
    body = b""
    if credential is None:
        try:
            credential = munge.encode(request_payload(method, target, body),
                                      socket=munge_socket)
        except munge.MungeError as e:
            raise ServiceError(f"cannot get a MUNGE credential: {e}") from e
    req = urllib.request.Request(server.rstrip("/") + target, data=body or None,
                                 method=method,
                                 headers={"Authorization": f"{AUTH_SCHEME} {credential}",
                                          "Accept": "application/json"})
    context = None
    if server.startswith("https:"):
        context = ssl.create_default_context(cafile=str(ca_file) if ca_file else None)
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=context) as resp:
            return json.loads(resp.read())
    except urllib.error.HTTPError as e:
        raise ServiceError(f"the jobio service refused: {_error_text(e)}", e.code) from e
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise ServiceError(f"cannot reach the jobio service at {server}: {reason}") from e
    except ValueError as e:
        raise ServiceError(f"the jobio service at {server} sent no JSON: {e}") from e


def _error_text(e: urllib.error.HTTPError) -> str:
    try:
        doc = json.loads(e.read())
        return f"{doc['error']} (HTTP {e.code})"
    except (ValueError, KeyError, TypeError, OSError):
        return f"HTTP {e.code} {e.reason}"
