"""Classify and repair job_ids against the site's `jobid_name` grammar (pure functions).

Lustre builds the id from `jobid_name` (`%j:%u:%H` at most Slurm sites) and falls back to
`%e.%u` for processes without the job variable. Production ids are often damaged (see the
broken-id table in LUSTRE-JOBSTATS.md): the job is missing, the host is a FQDN, the tail is
truncated, a trailing separator is left over. Each damage has one of three outcomes: repaired
in place (FQDN shortened, trailing separator dropped), recoverable later by attribution
(`:uid:host` -> uid + node + time), or unrecoverable (stored as load of nobody).

The grammar is compiled once into regexes; `classify` is cached by callers per raw id.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from slurm_io.model import IdClass, JobId

DEFAULT_FORMATS: tuple[str, ...] = ("%j:%u:%H", "%e.%u")
# `jobid_var=procname_uid` makes Lustre print `%e.%u` for every process.
PROCNAME_UID: tuple[str, ...] = ("%e.%u",)

_FIELD_RE = {
    "j": r"\d*",
    "u": r"\d*",
    "g": r"\d*",
    "p": r"\d*",
    "h": r"[A-Za-z0-9_.\-]*",
    "H": r"[A-Za-z0-9_.\-]*",
    "e": r".+",
}
_FIELD_NAME = {"j": "job", "u": "uid", "g": "gid", "p": "pid", "h": "host", "H": "host",
               "e": "exe"}


class GrammarError(ValueError):
    """The configured jobid_name cannot be understood."""


def _tokens(fmt: str) -> list[tuple[str, str]]:
    """`%j:%u:%H` -> [("field", "j"), ("lit", ":"), ...]."""
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(fmt):
        c = fmt[i]
        if c == "%":
            if i + 1 >= len(fmt):
                raise GrammarError(f"dangling % in {fmt!r}")
            f = fmt[i + 1]
            if f == "%":
                out.append(("lit", "%"))
            elif f in _FIELD_RE:
                out.append(("field", f))
            else:
                raise GrammarError(f"unknown jobid_name field %{f} in {fmt!r}")
            i += 2
        else:
            out.append(("lit", c))
            i += 1
    return out


@dataclass(frozen=True)
class _Format:
    text: str
    regex: re.Pattern[str]
    fields: tuple[str, ...]  # field letters in order
    seps: frozenset[str]


def _compile(fmt: str) -> _Format:
    """Compile a format so that trailing parts may be missing (ids truncated by Lustre)."""
    toks = _tokens(fmt)
    fields = tuple(v for k, v in toks if k == "field")
    if not fields:
        raise GrammarError(f"jobid_name {fmt!r} has no field")
    seps = frozenset(v for k, v in toks if k == "lit")
    # a field pattern must not swallow a separator that follows it, except %e (greedy, the
    # regex engine backtracks to the last separator)
    parts: list[str] = []
    for k, v in toks:
        if k == "lit":
            parts.append(re.escape(v))
        else:
            pat = _FIELD_RE[v]
            excl = "".join(re.escape(s) for s in sorted(seps) if s != ".")
            if v in ("h", "H") and excl:
                pat = rf"[^\s{excl}]*"
            parts.append(f"(?P<{_FIELD_NAME[v]}>{pat})")
    if "j" not in fields:
        # `%e.%u`-like forms are not truncated by Lustre; a greedy %e must backtrack to the
        # last separator, which optional tails would prevent
        return _Format(fmt, re.compile("".join(parts), re.S), fields, seps)
    # nest: first field mandatory, every later (sep + field) group optional (truncated ids)
    regex = ""
    closing = ""
    seen_field = False
    for p in parts:
        if p.startswith("(?P<"):
            regex += p
            seen_field = True
        elif seen_field:
            regex += "(?:" + p
            closing += ")?"
        else:
            regex += p
    regex += closing
    return _Format(fmt, re.compile(regex, re.S), fields, seps)


@dataclass(frozen=True)
class JobIdGrammar:
    """The site's job id grammar plus what counts as a system uid."""

    formats: tuple[str, ...] = DEFAULT_FORMATS
    system_uid_max: int = 999
    system_uids: frozenset[int] = frozenset({65534})

    def __post_init__(self) -> None:
        object.__setattr__(self, "_compiled", tuple(_compile(f) for f in self.formats))

    @classmethod
    def from_config(cls, formats: Sequence[str] | str | None = None, system_uid_max: int = 999,
                    system_uids: Iterable[int] = (65534,)) -> JobIdGrammar:
        if formats is None:
            fmts = DEFAULT_FORMATS
        elif isinstance(formats, str):
            fmts = PROCNAME_UID if formats == "procname_uid" else (formats,)
        else:
            fmts = tuple(PROCNAME_UID[0] if f == "procname_uid" else f for f in formats)
        return cls(fmts, system_uid_max, frozenset(system_uids))

    def is_system(self, uid: int) -> bool:
        return uid <= self.system_uid_max or uid in self.system_uids

    def classify(self, job_id: str) -> JobId:
        """Classify a decoded job_id; repair what can be repaired."""
        if not job_id.strip():
            return JobId(IdClass.EMPTY, None, None, None, None, False)
        for candidate, trimmed in _candidates(job_id, self._compiled):  # type: ignore[attr-defined]
            for fmt in self._compiled:  # type: ignore[attr-defined]
                m = fmt.regex.fullmatch(candidate)
                if m is None:
                    continue
                res = self._judge(fmt, m.groupdict(), trimmed or job_id[-1] in fmt.seps)
                if res is not None:
                    return res
        return JobId(IdClass.UNRECOVERABLE, None, None, None, None, False)

    def _judge(self, fmt: _Format, g: dict[str, str | None], trimmed: bool) -> JobId | None:
        """Turn one format's match into a classification, or None if it does not fit."""
        job_s, uid_s, host, exe = g.get("job"), g.get("uid"), g.get("host"), g.get("exe")
        uid = int(uid_s) if uid_s else None
        fqdn = bool(host) and "." in host  # type: ignore[operator]
        host = host.split(".", 1)[0] if host else None  # short name; None when absent
        if fqdn and not host:
            return None
        repaired = trimmed or fqdn
        if "j" in fmt.fields:
            if job_s:
                job = int(job_s)
                wanted = {_FIELD_NAME[f] for f in fmt.fields}
                present = {k for k, v in (("job", job_s), ("uid", uid_s), ("host", host),
                                          ("gid", g.get("gid")), ("pid", g.get("pid")),
                                          ("exe", exe)) if v}
                if wanted <= present:
                    cls = IdClass.FQDN if fqdn else IdClass.EXACT
                elif uid is not None:
                    cls = IdClass.JOB_UID
                else:
                    cls = IdClass.JOB_ONLY
                return JobId(cls, job, uid, host, exe, repaired)
            # job missing: recoverable by attribution only with both uid and host
            if uid is not None and host is not None:
                cls = IdClass.SYSTEM if self.is_system(uid) else IdClass.JOB_MISSING
                return JobId(cls, None, uid, host, exe, repaired)
            return None
        if "e" in fmt.fields and exe:
            if "u" in fmt.fields and uid is None:
                return None
            cls = IdClass.SYSTEM if uid is not None and self.is_system(uid) else IdClass.EXE
            return JobId(cls, None, uid, host, exe, repaired)
        return None


def _candidates(job_id: str, formats: Iterable[_Format]) -> list[tuple[str, bool]]:
    """The id itself, then the id without one trailing separator (`123:`, `lfs.0.`)."""
    out = [(job_id, False)]
    seps: set[str] = set()
    for f in formats:
        seps |= f.seps
    if job_id and job_id[-1] in seps:
        out.append((job_id[:-1], True))
    return out


class ClassifyCache:
    """Memoises `classify` per raw id: ids repeat in every read of every target.

    Why generations: a job's ids stop coming once its entries leave lctl, and a collector
    that runs for months sees millions of jobs; a cache of every id ever read grew its RSS
    all through the 30-day soak (bench/soak.py, bench/README.md). `rotate()`, called once per
    read, starts a new generation every ROTATE_EVERY reads: an id is looked up in the
    current generation, then in the one before (and moved to the current), else classified
    again. The cache thus holds the ids of the last ROTATE_EVERY to 2 x ROTATE_EVERY reads,
    i.e. the live entries, whatever the history. `max_size` still bounds one generation.
    """

    ROTATE_EVERY = 16

    def __init__(self, grammar: JobIdGrammar, max_size: int = 1_000_000) -> None:
        self.grammar = grammar
        self._cache: dict[str, JobId] = {}
        self._old: dict[str, JobId] = {}
        self._max = max_size
        self._reads = 0

    def rotate(self) -> None:
        """A read begins: every ROTATE_EVERY reads the current generation becomes the old one
        and the ids not seen since the generation before it are forgotten."""
        self._reads += 1
        if self._reads % self.ROTATE_EVERY == 0:
            self._old, self._cache = self._cache, {}

    def many(self, job_ids: Iterable[str]) -> list[JobId]:
        """Classify many ids; cache hits are looked up in C (map over dict.get)."""
        ids = list(job_ids)
        out = list(map(self._cache.get, ids))
        for i, r in enumerate(out):
            if r is None:
                out[i] = self(ids[i])
        return out  # type: ignore[return-value]

    def __call__(self, job_id: str) -> JobId:
        r = self._cache.get(job_id)
        if r is None:
            r = self._old.get(job_id)
            if r is None:
                r = self.grammar.classify(job_id)
            if len(self._cache) >= self._max:
                self._cache.clear()
            self._cache[job_id] = r
        return r

    def __len__(self) -> int:
        return len(self._cache) + len(self._old)
