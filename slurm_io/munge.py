"""MUNGE credentials, the way Slurm authenticates: a thin adapter over the local munged.

Two backends, one interface (`encode`, `decode`, `Credential`, `MungeError`): the system's
libmunge in process (munge_lib.py, the default when libmunge.so.2 loads) and the `munge` /
`unmunge` binaries (a fork per call: the fallback, and the reference the tests compare the
library with). Both talk to the local munged over its socket; a credential is minted by the
munged of the host where the client runs (the kernel tells munged the caller's uid) and is
only valid for hosts sharing the key. munged refuses a credential decoded twice (replay) or
after its TTL (expiry); the caller binds the payload to its request
(slurm_io/service/auth.py). `SLURM_IO_MUNGE=exec` forces the binaries (benchmarks, and a
site whose libmunge misbehaves).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from slurm_io import munge_lib

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


def backend() -> str:
    """"lib" (libmunge in process) or "exec" (the munge/unmunge binaries)."""
    if os.environ.get("SLURM_IO_MUNGE") == "exec" or not munge_lib.available():
        return "exec"
    return "lib"


def encode(payload: bytes, *, socket: str | None = None, ttl: int | None = None) -> str:
    """A credential for `payload`, minted by the local munged for the calling process's uid."""
    if backend() == "lib":
        return encode_lib(payload, socket=socket, ttl=ttl)
    return encode_exec(payload, socket=socket, ttl=ttl)


def decode(credential: str, *, socket: str | None = None) -> Credential:
    """Verify `credential` with the local munged; MungeError unless it is valid (right key,
    not expired, never decoded before)."""
    if backend() == "lib":
        return decode_lib(credential, socket=socket)
    return decode_exec(credential, socket=socket)


def encode_lib(payload: bytes, *, socket: str | None = None, ttl: int | None = None) -> str:
    try:
        return munge_lib.encode(payload, socket=socket, ttl=ttl)
    except munge_lib.LibMungeError as e:
        raise MungeError(str(e)) from e


def decode_lib(credential: str, *, socket: str | None = None) -> Credential:
    try:
        return Credential(*munge_lib.decode(credential, socket=socket))
    except munge_lib.LibMungeError as e:
        raise MungeError(str(e)) from e


def encode_exec(payload: bytes, *, socket: str | None = None, ttl: int | None = None) -> str:
    """`encode` by the `munge` binary."""
    from slurm_io import procs  # the exec path only: subprocess costs the lib path start-up

    cmd = ["munge", *_socket_args(socket)]
    if ttl is not None:
        cmd += ["--ttl", str(ttl)]
    try:
        proc = procs.run(cmd, input=payload, timeout=TIMEOUT)
    except (OSError, procs.Timeout) as e:
        raise MungeError(f"munge: {e}") from e
    if proc.returncode != 0:
        raise MungeError(_message(proc.stderr) or f"munge exited {proc.returncode}")
    return proc.stdout.decode("ascii").strip()


def decode_exec(credential: str, *, socket: str | None = None) -> Credential:
    """`decode` by the `unmunge` binary (its output parsed)."""
    from slurm_io import procs

    try:
        proc = procs.run(["unmunge", *_socket_args(socket)],
                         input=credential.encode("ascii", "replace"), timeout=TIMEOUT)
    except (OSError, procs.Timeout) as e:
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
