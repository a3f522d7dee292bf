"""MUNGE credentials, the way Slurm authenticates: a thin adapter over `munge`/`unmunge`.

Why the binaries: they are the cluster's own, installed with munged on every node, and they
talk to the local munged over its socket; a credential is minted by the munged of the host
where the client runs (the kernel tells munged the caller's uid) and is only valid for hosts
sharing the key. One fork per request costs a few milliseconds, well inside the service's
budget. munged refuses a credential decoded twice (replay) or after its TTL (expiry); the
caller binds the payload to its request (slurm_io/service/auth.py).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass

STATUS_RE = re.compile(r"^STATUS:\s+(.*?)\s+\((\d+)\)\s*$", re.M)
FIELD_RE = re.compile(r"^([A-Z_]+):\s+.*\((-?\d+)\)\s*$", re.M)
TTL_RE = re.compile(r"^TTL:\s+(\d+)\s*$", re.M)
TIMEOUT = 10.0


class MungeError(Exception):
    """munged refused or could not be reached; the message says which, in munge's words."""


@dataclass(frozen=True)
class Credential:
    """What munged vouches for: who encoded the payload, when, for how long."""

    uid: int
    gid: int
    encode_time: int
    ttl: int
    payload: bytes


def _socket_args(socket: str | None) -> list[str]:
    return ["--socket", socket] if socket else []


def encode(payload: bytes, *, socket: str | None = None, ttl: int | None = None) -> str:
    """A credential for `payload`, minted by the local munged for the calling process's uid."""
    cmd = ["munge", *_socket_args(socket)]
    if ttl is not None:
        cmd += ["--ttl", str(ttl)]
    try:
        proc = subprocess.run(cmd, input=payload, capture_output=True, timeout=TIMEOUT,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise MungeError(f"munge: {e}") from e
    if proc.returncode != 0:
        raise MungeError(_message(proc.stderr) or f"munge exited {proc.returncode}")
    return proc.stdout.decode("ascii").strip()


def decode(credential: str, *, socket: str | None = None) -> Credential:
    """Verify `credential` with the local munged; MungeError unless it is valid (right key,
    not expired, never decoded before)."""
    try:
        proc = subprocess.run(["unmunge", *_socket_args(socket)],
                              input=credential.encode("ascii", "replace"),
                              capture_output=True, timeout=TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise MungeError(f"unmunge: {e}") from e
    head, _, payload = proc.stdout.partition(b"\n\n")
    text = head.decode("utf-8", "replace")
    status = STATUS_RE.search(text)
    if proc.returncode != 0 or status is None or status.group(2) != "0":
        reason = status.group(1) if status else _message(proc.stderr)
        raise MungeError(reason or f"unmunge exited {proc.returncode}")
    fields = {m.group(1): int(m.group(2)) for m in FIELD_RE.finditer(text)}
    ttl = TTL_RE.search(text)
    try:
        return Credential(fields["UID"], fields["GID"], fields["ENCODE_TIME"],
                          int(ttl.group(1)) if ttl else 0, payload)
    except KeyError as e:
        raise MungeError(f"unmunge printed no {e.args[0]}") from e


def _message(stderr: bytes) -> str:
    text = stderr.decode("utf-8", "replace").strip().splitlines()
    return text[-1].removeprefix("munge: ").removeprefix("unmunge: ").removeprefix(
        "Error: ") if text else ""
