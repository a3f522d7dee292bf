"""render -> parse round trip for every release format (hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from slurm_io.model import ByteStats, Entry
from slurm_io.parse.jobstats import parse
from slurm_io.parse.render import RELEASES, counter_names, param_name, render_target

IDS = st.one_of(
    st.builds(lambda j, u, h: f"{j}:{u}:{h}", st.integers(1, 10**8), st.integers(0, 10**7),
              st.from_regex(r"[a-z][a-z0-9]{0,8}(\.[a-z]{2,5})?", fullmatch=True)),
    st.builds(lambda u, h: f":{u}:{h}", st.integers(0, 10**7),
              st.from_regex(r"[a-z][a-z0-9]{0,8}", fullmatch=True)),
    st.builds(lambda e, u: f"{e}.{u}", st.from_regex(r"[a-z][a-z0-9_ .@-]{0,12}", fullmatch=True),
              st.integers(0, 10**7)),
    st.from_regex(r"[0-9]{1,9}:?", fullmatch=True),
)
BIG = st.integers(0, 2**40)


@st.composite
def entries(draw, release: str, kind: str):
    names = counter_names(release, kind)
    ids = draw(st.lists(IDS, min_size=0, max_size=6, unique=True))
    out = []
    for i, jid in enumerate(ids):
        samples = tuple(draw(st.integers(0, 10**9)) for _ in names)
        stats = {}
        for n in ("read_bytes", "write_bytes"):
            if n in names:
                k = samples[names.index(n)]
                s = draw(BIG)
                hist = None
                if release in ("2.16", "2.17"):
                    hist = tuple(draw(st.lists(
                        st.tuples(st.sampled_from(["4K", "64K", "1M", "4M"]),
                                  st.integers(1, 10**6)),
                        max_size=3, unique_by=lambda x: x[0])))
                stats[n] = ByteStats(k, draw(BIG), draw(BIG), s,
                                     draw(BIG) if release not in ("2.10", "2.12") else None,
                                     hist)
        snap = 1_700_000_000 + i
        start = snap - 100.5 if release not in ("2.10", "2.12", "2.14") else None
        if release in ("2.15.2", "2.16", "2.17"):
            snap = snap + 0.25
        out.append(Entry("fs-OST0001" if kind == "OST" else "fs-MDT0000", "", jid, float(snap),
                         start, names, samples, stats))
    return out


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_render_then_parse_gives_the_entries_back(data):
    release = data.draw(st.sampled_from(RELEASES))
    kind = data.draw(st.sampled_from(("MDT", "OST")))
    es = data.draw(entries(release, kind))
    target = es[0].target if es else ("fs-OST0001" if kind == "OST" else "fs-MDT0000")
    boot = 1_600_000_000.0 if release == "2.15.0" else 0.0
    text = render_target(param_name(target, kind), es, release, kind, boot_time=boot)
    r = parse(text)
    assert not r.problems
    got = r.targets[target]
    assert [g.job_id for g in got] == [e.job_id for e in es]
    for g, e in zip(got, es, strict=True):
        assert g.names == e.names and tuple(g.samples) == e.samples
        for n, s in e.stats.items():
            assert g.stats[n].sum == s.sum and g.stats[n].samples == s.samples
            assert (g.stats[n].min, g.stats[n].max) == (s.min, s.max)
            assert g.stats[n].sumsq == s.sumsq
            assert (g.stats[n].hist or ()) == (s.hist or ())
        if release != "2.15.0":
            assert g.snapshot_time == e.snapshot_time
        else:
            assert abs(g.snapshot_time + boot - e.snapshot_time) < 1e-6
