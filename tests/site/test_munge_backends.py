"""libmunge in process and the `munge`/`unmunge` binaries say the same about every credential.

Both backends of slurm_io/munge.py run against real munged daemons of our own (one with the
site's key, one with another key: the forger). Each credential is minted by one backend (or
by `munge` run as alice) and verified by the other; good ones give the same uid, gid, TTL and
payload, bad ones (forged, altered, expired, replayed, munged unreachable) the same refusal.
"""

from __future__ import annotations

import concurrent.futures as cf
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from slurm_io import munge, munge_lib
from tests import needs
from tests.privacy.privacy_db import RUNUSER
from tests.site.services import private_munged

pytestmark = [needs.root("runs munged daemons and munge as alice"),
              needs.program("munged", "/usr/sbin/munged")]
ROOT = Path(__file__).resolve().parents[2]
Encode = Callable[..., str]
Decode = Callable[..., munge.Credential]
ENCODERS: dict[str, Encode] = {"lib": munge.encode_lib, "exec": munge.encode_exec}
DECODERS: dict[str, Decode] = {"lib": munge.decode_lib, "exec": munge.decode_exec}
PAIRS = [(e, d) for e in ENCODERS for d in DECODERS]


@pytest.fixture(scope="module")
def daemons() -> Iterator[tuple[str, str]]:
    base = Path(tempfile.mkdtemp(prefix="slurm-io-munge-", dir="/tmp"))  # munged (as user
    base.chmod(0o755)  # munge) must reach its socket: not under root's 0700 pytest dir
    try:
        with private_munged(base, "site") as sock, private_munged(base, "forger") as forger:
            yield sock, forger
    finally:
        shutil.rmtree(base, ignore_errors=True)


def refusal(decode: Decode, credential: str, sock: str) -> str:
    with pytest.raises(munge.MungeError) as e:
        decode(credential, socket=sock)
    return str(e.value)


def test_libmunge_is_there_and_chosen_by_default() -> None:
    assert munge_lib.available()
    assert munge.backend() == "lib"


@pytest.mark.parametrize(("enc", "dec"), PAIRS)
def test_a_credential_from_either_backend_is_verified_alike_by_either(
        daemons: tuple[str, str], enc: str, dec: str) -> None:
    sock, _ = daemons
    payload = b"slurm-io/1\nGET\n/v1/show?jobid=1\n\x00\xff binary" + bytes(range(256))
    t = int(time.time())
    cred = DECODERS[dec](ENCODERS[enc](payload, socket=sock, ttl=120), socket=sock)
    assert (cred.uid, cred.gid, cred.ttl, cred.payload) == (os.getuid(), os.getgid(), 120,
                                                             payload)
    assert t - 1 <= cred.encode_time <= time.time() + 1


def test_alices_credential_names_alice_in_both_backends(daemons: tuple[str, str]) -> None:
    import pwd

    sock, _ = daemons
    alice = pwd.getpwnam("alice")
    creds = [subprocess.run([RUNUSER, "-u", "alice", "--", "munge", "-S", sock, "-t", "60"],
                            input=b"payload", capture_output=True, check=True
                            ).stdout.decode().strip() for _ in DECODERS]
    seen = [DECODERS[name](c, socket=sock) for name, c in zip(DECODERS, creds, strict=True)]
    assert {(c.uid, c.gid, c.ttl, c.payload) for c in seen} == {
        (alice.pw_uid, alice.pw_gid, 60, b"payload")}


@pytest.mark.parametrize(("enc", "dec"), PAIRS)
def test_a_credential_is_accepted_once_whichever_backend_decodes_it_again(
        daemons: tuple[str, str], enc: str, dec: str) -> None:
    sock, _ = daemons
    cred = ENCODERS[enc](b"once", socket=sock)
    DECODERS[enc](cred, socket=sock)
    assert refusal(DECODERS[dec], cred, sock) == "Replayed credential"


def test_forged_altered_expired_and_unreachable_are_refused_alike(
        daemons: tuple[str, str]) -> None:
    sock, forger = daemons

    def both(make: Callable[[], str], socket: str = sock) -> list[str]:
        return [refusal(d, make(), socket) for d in DECODERS.values()]

    forged = both(lambda: munge.encode_lib(b"x", socket=forger))
    assert forged[0] == forged[1] and forged[0]

    def altered() -> str:
        c = munge.encode_lib(b"x", socket=sock)
        i = len(c) // 2
        return c[:i] + ("A" if c[i] != "A" else "B") + c[i + 1:]

    changed = both(altered)
    assert changed[0] == changed[1] and changed[0]
    expiring = [munge.encode_exec(b"x", socket=sock, ttl=1) for _ in DECODERS]
    time.sleep(2.5)
    assert [refusal(d, c, sock) for d, c in zip(DECODERS.values(), expiring, strict=True)
            ] == ["Expired credential"] * 2
    garbage = both(lambda: "MUNGE:not-a-credential")
    assert garbage[0] == garbage[1] and "armor" in garbage[0]
    gone = both(lambda: "MUNGE:x:", socket=str(Path(sock).with_name("absent.socket")))
    assert gone[0] == gone[1] and "absent.socket" in gone[0]


def test_many_threads_decode_at_once_through_libmunge(daemons: tuple[str, str]) -> None:
    sock, _ = daemons
    payloads = [f"request {i}".encode() for i in range(200)]
    creds = [munge.encode_lib(p, socket=sock) for p in payloads]
    with cf.ThreadPoolExecutor(16) as pool:
        got = list(pool.map(lambda c: munge.decode_lib(c, socket=sock).payload, creds))
    assert got == payloads


@pytest.mark.parametrize("how", ["SLURM_IO_MUNGE=exec", "libmunge absent"])
def test_without_libmunge_the_binaries_do_the_work(daemons: tuple[str, str], how: str) -> None:
    sock, _ = daemons
    code = ("import sys\nfrom slurm_io import munge, munge_lib\n"
            + ("munge_lib.LIBRARY = 'libmunge-absent.so.9'\n" if how != "SLURM_IO_MUNGE=exec"
               else "")
            + "c = munge.encode(b'fallback', socket=sys.argv[1])\n"
            "print(munge.backend(), munge.decode(c, socket=sys.argv[1]).payload.decode(), "
            "'ctypes' in sys.modules)\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if how == "SLURM_IO_MUNGE=exec":
        env["SLURM_IO_MUNGE"] = "exec"
    out = subprocess.run([sys.executable, "-c", code, sock], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    assert out[:2] == ["exec", "fallback"]
