"""The Slurm seam (slurm_io.slurm) against each real release, and its errors."""

from __future__ import annotations

import pytest

from slurm_io.jobs.sacct import parse_sacct
from slurm_io.jobs.source import SacctSource
from slurm_io.slurm import Slurm, SlurmError, parse_version
from slurm_io.slurm.fields import SACCT_FIELDS, SACCT_FIELDS_SLUID
from tests import needs

root_only = needs.root("the Slurm testbeds need root")


@pytest.mark.parametrize(("text", "expected"), [
    ("slurm-wlm 22.05.8\n", (22, 5)), ("slurm 24.11.5", (24, 11)), ("slurm 26.05.5", (26, 5)),
    ("", None), ("sacct: error: something", None),
])
def test_version_text_gives_major_and_minor(text, expected):
    assert parse_version(text) == expected


def test_a_missing_command_is_one_clear_error(tmp_path):
    slurm = Slurm(sacct=str(tmp_path / "nope"))
    with pytest.raises(SlurmError, match=r"nope: not found \(give the path with --sacct"):
        slurm.run("sacct", ["--version"])
    assert slurm.try_run("sacct", ["--version"]) is None
    assert slurm.release() is None
    assert slurm.sacct_fields() == SACCT_FIELDS  # unknown release: only the 22.05 fields
    with pytest.raises(ValueError, match="unknown Slurm command"):
        slurm.run("squeue", [])


def test_without_a_controller_to_ask_the_cluster_is_unknown(tmp_path):
    assert Slurm(scontrol=str(tmp_path / "nope")).cluster() is None


@root_only
def test_the_seam_knows_the_release_it_talks_to(slurm_cluster):
    slurm = Slurm(sacct=slurm_cluster.command("sacct"),
                  scontrol=slurm_cluster.command("scontrol"))
    assert slurm.release() == slurm_cluster.version
    expected = SACCT_FIELDS_SLUID if slurm_cluster.version >= (24, 11) else SACCT_FIELDS
    assert slurm.sacct_fields() == expected


@root_only
def test_sacct_records_carry_the_sluid_and_the_cluster_scontrol_names(slurm_cluster):
    c = slurm_cluster
    job = c.submit("alice", ["-J", "sluid", "--wrap", "true"])
    c.wait_finished([job])
    slurm = Slurm(sacct=c.command("sacct"), scontrol=c.command("scontrol"))
    records, problems = parse_sacct(slurm.sacct_jobs(jobs=[job]), source="sacct")
    assert problems == [] and [r.job for r in records] == [job]
    # the cluster whose jobs a plain sacct lists is the one scontrol names (where jobs sync
    # resumes)
    assert records[0].cluster and slurm.cluster() == records[0].cluster
    assert SacctSource(slurm=slurm).cluster() == records[0].cluster
    if c.version >= (24, 11):
        assert records[0].sluid and records[0].sluid.startswith("s")
    else:
        assert records[0].sluid is None
    # jobs sync's source asks the same release-dependent fields
    since = (records[0].submit or 0) - 60
    synced = [r for r in SacctSource(slurm=slurm).jobs(since, None) if r.job == job]
    assert [r.sluid for r in synced] == [records[0].sluid]


def test_the_config_names_the_commands_every_caller_uses(tmp_path):
    from slurm_io import config
    from slurm_io.notify.reporter import ReporterSettings

    path = tmp_path / "c.toml"
    path.write_text("[slurm]\nsacct = '/opt/slurm/bin/sacct'\n"
                    "scontrol = '/opt/slurm/bin/scontrol'\n")
    cfg = config.load(path)
    slurm = Slurm.from_config(cfg)
    assert (slurm.sacct, slurm.scontrol) == ("/opt/slurm/bin/sacct", "/opt/slurm/bin/scontrol")
    assert ReporterSettings.from_config(cfg).sacct == "/opt/slurm/bin/sacct"
    default = Slurm.from_config(config.Config())
    assert (default.sacct, default.scontrol) == ("/usr/bin/sacct", "/usr/bin/scontrol")


@pytest.mark.parametrize("job", [0, 2**32, 2**32 + 4, -1])
def test_a_number_slurm_would_wrap_round_never_reaches_slurm(tmp_path, job):
    # Slurm reads job ids into 32 bits: 2^32 + 4 would be job 4. A row key (sql/0020) passed
    # where a raw id belongs is refused before any command runs.
    ran = tmp_path / "ran"
    fake = tmp_path / "scontrol"
    fake.write_text(f"#!/bin/sh\ntouch {ran}\n")
    fake.chmod(0o755)
    s = Slurm(scontrol=str(fake), sacct=str(fake))
    for call in (lambda: s.show_job(job), lambda: s.sacct_mail(job),
                 lambda: s.sacct_jobs(jobs=[job])):
        with pytest.raises(ValueError, match="not a Slurm job id"):
            call()
    assert not ran.exists()


def test_a_sacct_given_by_path_brings_the_scontrol_beside_it(tmp_path):
    from slurm_io.config import Config

    for tool in ("sacct", "scontrol"):
        (tmp_path / tool).write_text("#!/bin/sh\n")
        (tmp_path / tool).chmod(0o755)
    slurm = Slurm.from_config(Config(), sacct=str(tmp_path / "sacct"))
    assert slurm.scontrol == str(tmp_path / "scontrol")
    # a configured scontrol stays; without a sibling the default stays
    cfg = Config(scontrol="/opt/slurm/bin/scontrol")
    assert Slurm.from_config(cfg, sacct=str(tmp_path / "sacct")).scontrol == \
        "/opt/slurm/bin/scontrol"
    (tmp_path / "scontrol").unlink()
    assert Slurm.from_config(Config(), sacct=str(tmp_path / "sacct")).scontrol == \
        "/usr/bin/scontrol"
