"""The hook environment -> JobRecord, for the values users and Slurm really put there: bytes
that are not UTF-8, Slurm's placeholders, ids and uids out of range, other scripts' digits,
het job components and array tasks (forms as in Slurm 24.11's captures). A record that
cannot be stored raises RecordError, a ValueError, with the reason."""

from __future__ import annotations

import pytest

from slurm_io.jobs.hookenv import record_from_hook_env

# EpilogSlurmctld of a plain job (22.05 layout, fixtures/slurm/22.05/dumps)
ENV = {
    "SLURM_JOB_ID": "41", "SLURM_JOBID": "41", "SLURM_JOB_UID": "1000",
    "SLURM_JOB_USER": "alice", "SLURM_JOB_ACCOUNT": "research", "SLURM_JOB_PARTITION": "debug",
    "SLURM_JOB_NAME": "io", "SLURM_JOB_NODELIST": "node[01-02]",
    "SLURM_JOB_WORK_DIR": "/home/alice", "SLURM_JOB_EXIT_CODE2": "0:0",
    "SLURM_JOB_EXIT_CODE": "0", "SLURM_SCRIPT_CONTEXT": "epilog_slurmctld",
}


def env(**over: str) -> dict[str, str]:
    e = {**ENV, **over}
    return {k: v for k, v in e.items() if v is not None}


def test_a_job_name_and_work_dir_with_bytes_that_are_not_utf8_are_stored_escaped():
    # `sbatch -J $'x\xffy'`: os.environ carries the byte as a surrogate (surrogateescape)
    r = record_from_hook_env(env(SLURM_JOB_NAME="x\udcffy", SLURM_JOB_WORK_DIR="/d/\udce9t\udce9",
                                 SLURM_JOB_USER="alice"))
    assert (r.name, r.work_dir) == ("x\\xffy", "/d/\\xe9t\\xe9")
    r.name.encode("utf-8")  # storable: PostgreSQL text takes it
    assert record_from_hook_env(env(SLURM_JOB_NAME="résumé-ü-日本")).name == "résumé-ü-日本"


@pytest.mark.parametrize(("var", "value", "reason"), [
    ("SLURM_JOB_UID", "4294967296", "SLURM_JOB_UID 4294967296 is out of range"),
    ("SLURM_JOB_UID", "2147483648", "uid columns (integer) cannot hold"),
    ("SLURM_JOB_UID", "²", "SLURM_JOB_UID '²' is not a number"),
    ("SLURM_JOB_ID", "²", "SLURM_JOB_ID '²' is not a number"),
    ("SLURM_JOB_ID", "٣", "SLURM_JOB_ID '٣' is not a number"),  # int('٣') == 3
    ("SLURM_JOB_ID", "12345678901234567890", "SLURM_JOB_ID 12345678901234567890 is out of"),
    ("SLURM_JOB_ID", "0", "SLURM_JOB_ID 0 is out of range"),
    ("SLURM_JOB_END_TIME", "99999999999999", "SLURM_JOB_END_TIME 99999999999999 is out of"),
])
def test_ids_uids_and_times_that_cannot_be_stored_refuse_the_record_saying_why(var, value,
                                                                                reason):
    over = {var: value, **({"SLURM_JOBID": value} if var == "SLURM_JOB_ID" else {})}
    with pytest.raises(ValueError, match=reason.replace("(", r"\(").replace(")", r"\)")):
        record_from_hook_env(env(**over))


def test_the_largest_storable_uid_and_job_id_are_kept():
    r = record_from_hook_env(env(SLURM_JOB_UID="2147483647", SLURM_JOB_ID="9223372036854775807"))
    assert (r.uid, r.job) == (2147483647, 9223372036854775807)


@pytest.mark.parametrize("placeholder", ["(null)", "Unknown", "None assigned", "None", ""])
def test_slurm_placeholders_become_null(placeholder):
    r = record_from_hook_env(env(SLURM_JOB_ACCOUNT=placeholder, SLURM_JOB_PARTITION=placeholder,
                                 SLURM_JOB_USER=placeholder, SLURM_JOB_UID=placeholder,
                                 SLURM_JOB_WORK_DIR=placeholder,
                                 SLURM_JOB_NODELIST=placeholder))
    assert (r.account, r.partition, r.user, r.uid, r.work_dir, r.nodes) == (
        None, None, None, None, None, ())


def test_a_job_name_a_user_chose_is_kept_even_when_it_reads_like_a_placeholder():
    assert record_from_hook_env(env(SLURM_JOB_NAME="None")).name == "None"
    assert record_from_hook_env(env(SLURM_JOB_NAME="(null)")).name is None


def test_a_het_component_is_its_own_job_with_the_display_id_j_plus_offset():
    # fixtures/slurm/24.11/dumps/epilog_slurmctld.10.ctld.env: component 9+1, raw id 10
    comp = env(SLURM_JOB_ID="10", SLURM_JOBID="10", SLURM_HET_JOB_ID="9",
               SLURM_HET_JOB_OFFSET="1", SLURM_PACK_JOB_ID="9", SLURM_PACK_JOB_OFFSET="1")
    r = record_from_hook_env(comp)
    assert (r.job, r.jobid, r.array_job, r.array_task) == (10, "9+1", None, None)
    leader = record_from_hook_env(env(SLURM_JOB_ID="9", SLURM_PACK_JOB_ID="9",
                                      SLURM_PACK_JOB_OFFSET="0"))
    assert (leader.job, leader.jobid) == (9, "9+0")
    with pytest.raises(ValueError, match="SLURM_HET_JOB_OFFSET"):
        record_from_hook_env({**comp, "SLURM_HET_JOB_OFFSET": "x"})


def test_an_array_task_keeps_its_raw_id_and_gets_the_display_id_a_underscore_t():
    r = record_from_hook_env(env(SLURM_JOB_ID="13", SLURM_ARRAY_JOB_ID="5",
                                 SLURM_ARRAY_TASK_ID="1"))
    assert (r.job, r.jobid, r.array_job, r.array_task) == (13, "5_1", 5, "1")
    with pytest.raises(ValueError, match="SLURM_ARRAY_TASK_ID"):
        record_from_hook_env(env(SLURM_ARRAY_JOB_ID="5", SLURM_ARRAY_TASK_ID="²"))


def test_exit_codes_are_taken_in_ascii_digits_only():
    assert record_from_hook_env(env(SLURM_JOB_EXIT_CODE2="3:0")).exit_code == "3:0"
    r = record_from_hook_env(env(SLURM_JOB_EXIT_CODE2="٣:0", SLURM_JOB_EXIT_CODE="768"))
    assert r.exit_code == "3:0"


def test_a_node_list_with_a_newline_is_a_node_list_error_not_endless_recursion():
    # found by bench/fuzz_intake.py: python-hostlist recursed until RecursionError
    with pytest.raises(ValueError, match="bad node list"):
        record_from_hook_env(env(SLURM_JOB_NODELIST="node[02-0\n3]"))
