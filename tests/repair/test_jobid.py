"""Every id form of the shared broken-id table, and the configurable grammar."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slurm_io.model import IdClass
from slurm_io.repair.jobid import ClassifyCache, GrammarError, JobIdGrammar

G = JobIdGrammar()

TABLE = [
    # id, class, job, uid, host, repaired
    ("11317854:17627127:r01c01", IdClass.EXACT, 11317854, 17627127, "r01c01", False),
    (":17627127:r01c01", IdClass.JOB_MISSING, None, 17627127, "r01c01", False),
    ("11317854", IdClass.JOB_ONLY, 11317854, None, None, False),
    ("11317854:", IdClass.JOB_ONLY, 11317854, None, None, True),
    ("11317854:17627127", IdClass.JOB_UID, 11317854, 17627127, None, False),
    ("11317854:17627127:", IdClass.JOB_UID, 11317854, 17627127, None, True),
    ("11317854:17627127:r01c01.bullx", IdClass.FQDN, 11317854, 17627127, "r01c01", True),
    (":17627127:r01c01.bullx", IdClass.JOB_MISSING, None, 17627127, "r01c01", True),
    # a duplicated character cannot be told from a real job id here: attribution flags it
    ("113178544", IdClass.JOB_ONLY, 113178544, None, None, False),
    (":1317854:17627127:r01c01", IdClass.UNRECOVERABLE, None, None, None, False),
]


@pytest.mark.parametrize(("raw", "cls", "job", "uid", "host", "repaired"), TABLE)
def test_shared_table_forms_are_classified(raw, cls, job, uid, host, repaired):
    r = G.classify(raw)
    assert (r.id_class, r.job, r.uid, r.host, r.repaired) == (cls, job, uid, host, repaired)


@pytest.mark.parametrize(("raw", "cls", "uid", "exe"), [
    ("wget.17627127", IdClass.EXE, 17627127, "wget"),
    ("rsync.2001", IdClass.EXE, 2001, "rsync"),
    ("mount.lustre.0", IdClass.SYSTEM, 0, "mount.lustre"),
    ("backup rsync\n.0", IdClass.SYSTEM, 0, "backup rsync\n"),
    ("@odd.0", IdClass.SYSTEM, 0, "@odd"),
    ("lfs.0.", IdClass.SYSTEM, 0, "lfs"),
    ("nfsd.65534", IdClass.SYSTEM, 65534, "nfsd"),
])
def test_executable_uid_ids_are_login_or_system_load(raw, cls, uid, exe):
    r = G.classify(raw)
    assert (r.id_class, r.uid, r.exe, r.job) == (cls, uid, exe, None)


def test_job_missing_with_system_uid_is_system_load_of_a_host():
    r = G.classify(":0:node012")
    assert (r.id_class, r.uid, r.host) == (IdClass.SYSTEM, 0, "node012")


@pytest.mark.parametrize("raw", ["cluster-testjob1", "SLURM_JOB_m176_2453:0:mac", "a.b", "::",
                                 "12:ab:cd:ef"])
def test_foreign_forms_are_unrecoverable(raw):
    assert G.classify(raw).id_class == IdClass.UNRECOVERABLE


def test_empty_id_is_its_own_class():
    assert G.classify("").id_class == IdClass.EMPTY
    assert G.classify("   ").id_class == IdClass.EMPTY


def test_plain_job_grammar_treats_the_number_as_exact():
    g = JobIdGrammar.from_config("%j")
    assert g.classify("4242").id_class == IdClass.EXACT
    assert g.classify("4242").job == 4242
    assert g.classify("x4242").id_class == IdClass.UNRECOVERABLE


def test_procname_uid_grammar():
    g = JobIdGrammar.from_config("procname_uid")
    r = g.classify("dd.1000")
    assert (r.id_class, r.exe, r.uid) == (IdClass.EXE, "dd", 1000)
    assert g.classify("1234:1000:n1").id_class == IdClass.UNRECOVERABLE


def test_custom_grammar_with_other_separators():
    g = JobIdGrammar.from_config(["%j@%u@%H"])
    r = g.classify("77@1001@gpu03.example.org")
    assert (r.id_class, r.job, r.uid, r.host) == (IdClass.FQDN, 77, 1001, "gpu03")


def test_system_uid_threshold_is_configurable():
    g = JobIdGrammar.from_config(None, system_uid_max=499, system_uids=())
    assert g.classify("cron.600").id_class == IdClass.EXE
    assert G.classify("cron.600").id_class == IdClass.SYSTEM


def test_bad_grammar_is_a_clear_error():
    with pytest.raises(GrammarError, match="%q"):
        JobIdGrammar.from_config("%j:%q")


def test_cache_returns_the_grammar_result():
    c = ClassifyCache(G, max_size=2)
    for raw, *_ in TABLE:
        assert c(raw) == G.classify(raw)


def test_the_cache_holds_the_ids_of_recent_reads_not_every_id_ever_read():
    """A collector's months of jobs: each read names the jobs of its time; ids not read for
    two generations leave the cache, the ones still read stay (same results)."""
    c = ClassifyCache(G)
    every = ClassifyCache.ROTATE_EVERY
    sizes = []
    for read in range(20 * every):
        c.rotate()
        ids = [f"{read // 8 * 100 + i}:1000:n{i}" for i in range(100)]  # jobs of 8 reads
        assert c.many(ids) == [G.classify(i) for i in ids]
        assert c("system") == G.classify("system")  # read every time: always cached
        sizes.append(len(c))
    assert max(sizes) <= 2 * (every // 8 + 1) * 100 + 2
    assert max(sizes[-every:]) == max(sizes[2 * every:3 * every])  # flat, not growing


@given(st.integers(1, 10**9), st.integers(0, 10**8), st.from_regex(r"[a-z][a-z0-9]{0,10}",
                                                                    fullmatch=True))
def test_well_formed_ids_round_trip(job, uid, host):
    r = G.classify(f"{job}:{uid}:{host}")
    assert (r.id_class, r.job, r.uid, r.host) == (IdClass.EXACT, job, uid, host)


@given(st.text(max_size=60))
def test_any_text_gets_a_class(text):
    assert isinstance(G.classify(text).id_class, IdClass)
