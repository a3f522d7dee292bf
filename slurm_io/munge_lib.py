"""MUNGE through the system's libmunge (ctypes), in process: no `unmunge` fork per request.

Why: the service verifies one credential per request; a fork+exec of `unmunge` costs a few
milliseconds of CPU and, under 50 concurrent clients on two cores, queues behind the Python
work. libmunge talks to the same munged over the same socket, so the checks are munged's own
(key, expiry, replay); only the transport changes. ctypes releases the GIL during the call,
so threads wait on munged in parallel. Loaded once, lazily; `available()` is False when the
library is absent (libmunge2 not installed), and munge.py then uses the binaries.

The messages are those `unmunge` prints: munge_strerror() for the credential's own verdict
(expired, rewound, replayed: unmunge's STATUS line), the context's detailed message for
everything else (unmunge's `Error:` line on stderr), so both backends refuse alike.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

LIBRARY = "libmunge.so.2"
OPT_TTL = 4
OPT_ENCODE_TIME = 6
OPT_SOCKET = 8
EMUNGE_SUCCESS = 0
STATUS_ERRORS = (15, 16, 17)  # expired, rewound, replayed: unmunge prints a STATUS line

_lock = threading.Lock()
_lib: Any = None
_libc: Any = None
_loaded = False


class LibMungeError(Exception):
    """libmunge refused; str() is the message unmunge would print."""


def _load() -> Any:
    global _lib, _libc, _loaded
    with _lock:
        if _loaded:
            return _lib
        _loaded = True
        try:
            lib = ctypes.CDLL(LIBRARY)  # the soname: no ctypes.util.find_library (it forks
            libc = ctypes.CDLL(None)    # ldconfig); free() from the C library already loaded
        except OSError:
            return None
        lib.munge_ctx_create.restype = ctypes.c_void_p
        lib.munge_ctx_create.argtypes = []
        lib.munge_ctx_destroy.restype = None
        lib.munge_ctx_destroy.argtypes = [ctypes.c_void_p]
        lib.munge_ctx_strerror.restype = ctypes.c_char_p
        lib.munge_ctx_strerror.argtypes = [ctypes.c_void_p]
        lib.munge_strerror.restype = ctypes.c_char_p
        lib.munge_strerror.argtypes = [ctypes.c_int]
        # munge_ctx_set/get are variadic: no argtypes, every argument passed as a ctypes
        # object of the C type the option takes (munge.h).
        lib.munge_ctx_set.restype = ctypes.c_int
        lib.munge_ctx_get.restype = ctypes.c_int
        lib.munge_encode.restype = ctypes.c_int
        lib.munge_encode.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p,
                                     ctypes.c_void_p, ctypes.c_int]
        lib.munge_decode.restype = ctypes.c_int
        lib.munge_decode.argtypes = [ctypes.c_char_p, ctypes.c_void_p,
                                     ctypes.POINTER(ctypes.c_void_p),
                                     ctypes.POINTER(ctypes.c_int),
                                     ctypes.POINTER(ctypes.c_uint32),
                                     ctypes.POINTER(ctypes.c_uint32)]
        libc.free.restype = None
        libc.free.argtypes = [ctypes.c_void_p]
        _lib, _libc = lib, libc
        return lib


def available() -> bool:
    """True when libmunge can be loaded in this process."""
    return _load() is not None


def _context(lib: Any, socket: str | None) -> int:
    ctx = lib.munge_ctx_create()
    if not ctx:
        raise LibMungeError("Failed to create a MUNGE context (out of memory)")
    if socket:  # as the binaries: no socket or "" is munge's default
        err = lib.munge_ctx_set(ctypes.c_void_p(ctx), ctypes.c_int(OPT_SOCKET),
                                ctypes.c_char_p(socket.encode()))
        if err != EMUNGE_SUCCESS:
            lib.munge_ctx_destroy(ctx)
            raise LibMungeError(_message(lib, err, ctx))
    return int(ctx)


def _message(lib: Any, err: int, ctx: int) -> str:
    detail = None if err in STATUS_ERRORS else lib.munge_ctx_strerror(ctx)
    text = detail or lib.munge_strerror(err) or b"unknown MUNGE error"
    return str(text.decode("utf-8", "replace"))


def encode(payload: bytes, *, socket: str | None = None, ttl: int | None = None) -> str:
    """A credential for `payload` from the local munged, for this process's uid and gid."""
    lib = _load()
    if lib is None:
        raise LibMungeError("libmunge is not installed")
    ctx = _context(lib, socket)
    try:
        if ttl is not None:
            err = lib.munge_ctx_set(ctypes.c_void_p(ctx), ctypes.c_int(OPT_TTL),
                                    ctypes.c_int(ttl))
            if err != EMUNGE_SUCCESS:
                raise LibMungeError(_message(lib, err, ctx))
        cred = ctypes.c_void_p()
        err = lib.munge_encode(ctypes.byref(cred), ctx, payload, len(payload))
        try:
            if err != EMUNGE_SUCCESS:
                raise LibMungeError(_message(lib, err, ctx))
            return str(ctypes.string_at(cred.value).decode("ascii"))
        finally:
            if cred.value:
                _libc.free(cred)
    finally:
        lib.munge_ctx_destroy(ctx)


def decode(credential: str, *, socket: str | None = None) -> tuple[int, int, int, int, bytes]:
    """(uid, gid, encode time, ttl, payload) of a credential munged accepts; otherwise
    LibMungeError (forged, altered, expired, replayed, munged unreachable)."""
    lib = _load()
    if lib is None:
        raise LibMungeError("libmunge is not installed")
    ctx = _context(lib, socket)
    buf = ctypes.c_void_p()
    length = ctypes.c_int(0)
    uid = ctypes.c_uint32(0)
    gid = ctypes.c_uint32(0)
    try:
        err = lib.munge_decode(credential.encode("ascii", "replace"), ctx, ctypes.byref(buf),
                               ctypes.byref(length), ctypes.byref(uid), ctypes.byref(gid))
        payload = ctypes.string_at(buf.value, length.value) if buf.value else b""
        if err != EMUNGE_SUCCESS:
            raise LibMungeError(_message(lib, err, ctx))
        encoded = ctypes.c_long(0)  # time_t
        ttl = ctypes.c_int(0)
        if (lib.munge_ctx_get(ctypes.c_void_p(ctx), ctypes.c_int(OPT_ENCODE_TIME),
                              ctypes.byref(encoded)) != EMUNGE_SUCCESS
                or lib.munge_ctx_get(ctypes.c_void_p(ctx), ctypes.c_int(OPT_TTL),
                                     ctypes.byref(ttl)) != EMUNGE_SUCCESS):
            raise LibMungeError("libmunge gave no encode time or TTL")
        return uid.value, gid.value, encoded.value, ttl.value, payload
    finally:
        if buf.value:
            _libc.free(buf)
        lib.munge_ctx_destroy(ctx)
