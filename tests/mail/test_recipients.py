"""Who gets the I/O mail (slurm_io/mail/recipients.py): Slurm's mail fields, address rules,
the site policy."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from slurm_io.mail import recipients as rc
from slurm_io.mail.recipients import SlurmMail, SlurmMailLookup
from tests import needs

# `scontrol show job -o` of Slurm 22.05.8 (the testbed of scripts/setup-slurm.sh), verbatim
# but for the middle of the lines.
_MIDDLE = ("Priority=4294901732 Nice=0 Account=research QOS=normal JobState=COMPLETED "
           "Reason=None Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 "
           "ExitCode=0:0 RunTime=00:00:02 TimeLimit=UNLIMITED TimeMin=N/A "
           "SubmitTime=2026-11-21T07:18:27 StartTime=2026-11-21T07:18:28 "
           "EndTime=2026-11-21T07:18:30 Partition=debug NodeList=node01 BatchHost=node01 "
           "NumNodes=1 NumCPUs=1 NumTasks=1 WorkDir=/tmp StdIn=/dev/null")
WITH_MAIL = (f"JobId=43 JobName=my job|x UserId=alice(1001) GroupId=alice(1001) "
             f"MCS_label=N/A {_MIDDLE} StdOut=/var/lib/slurm-testbed/jobs/alice/o-43.txt "
             "Power= MailUser=alice@example.org MailType=END,FAIL \n")
NO_MAIL = (f"JobId=44 JobName=wrap UserId=bob(1002) GroupId=bob(1002) MCS_label=N/A {_MIDDLE} "
           "StdOut=/var/lib/slurm-testbed/jobs/bob/o-44.txt Power= \n")
# --mail-type=ALL without --mail-user, and a comment that looks like a mail field
DEFAULT_USER = (f"JobId=45 JobName=wrap UserId=alice(1001) GroupId=alice(1001) "
                f"{_MIDDLE} Comment=hello MailUser=x@y Power= MailUser=alice "
                "MailType=INVALID_DEPEND,BEGIN,END,FAIL,REQUEUE,STAGE_OUT \n")


def test_scontrol_mail_fields():
    m = rc.parse_scontrol(WITH_MAIL)
    assert m == SlurmMail("alice@example.org", frozenset({"END", "FAIL"}), "scontrol")
    assert m.wants_end
    m = rc.parse_scontrol(NO_MAIL)
    assert m == SlurmMail(None, frozenset(), "scontrol") and not m.wants_end
    m = rc.parse_scontrol(DEFAULT_USER)
    assert m is not None and m.user == "alice" and m.wants_end  # the last MailUser= counts
    assert rc.parse_scontrol("slurm_load_jobs error: Invalid job id specified\n") is None
    assert rc.parse_scontrol("") is None


def test_sacct_mail_fields():
    assert rc.parse_sacct("43|alice@example.org|END,FAIL\n") == SlurmMail(
        "alice@example.org", frozenset({"END", "FAIL"}), "sacct")
    assert rc.parse_sacct("44||NONE\n") == SlurmMail(None, frozenset(), "sacct")
    assert rc.parse_sacct("47|bob|ALL\n").wants_end
    assert rc.parse_sacct("") is None


@pytest.mark.parametrize(("kw", "expected"), [
    ({}, "alice"),  # local delivery, like Slurm's own default
    ({"domain": "example.org"}, "alice@example.org"),
    ({"domain": "@example.org"}, "alice@example.org"),
    ({"domain": "{user}@hpc.example.org"}, "alice@hpc.example.org"),
    ({"address": "{user}@example.org"}, "alice@example.org"),
    ({"address": "u{uid}@example.org", "domain": "ignored.org"}, "u1001@example.org"),
])
def test_site_address_rule(kw, expected):
    assert rc.apply_rule("alice", uid=1001, **kw) == expected


def test_the_jobs_mail_user_goes_first_and_bare_names_get_the_rule():
    slurm = SlurmMail("alice.smith@uni.example", frozenset({"END"}), "scontrol")
    assert rc.address_for("alice", slurm, domain="example.org") == ["alice.smith@uni.example"]
    slurm = SlurmMail("alice", frozenset({"END"}), "scontrol")  # Slurm's default MailUser
    assert rc.address_for("alice", slurm, domain="example.org") == ["alice@example.org"]
    slurm = SlurmMail("a@x.org,b@y.org", frozenset({"END"}), "scontrol")
    assert rc.address_for("alice", slurm) == ["a@x.org", "b@y.org"]
    assert rc.address_for("alice", None, domain="example.org") == ["alice@example.org"]
    assert rc.address_for(None, None, domain="example.org") == []


def test_addresses_that_could_break_headers_are_dropped():
    for bad in ("a b@x.org", "a@x.org\nBcc: c@y.org", "<a@x.org>", "a@x.org;b", "a@", "@x"):
        assert not rc.valid_address(bad), bad
    evil = SlurmMail("x@y.org\r\nBcc: z@w.org", frozenset({"END"}), "scontrol")
    assert rc.address_for("alice", evil, domain="example.org") == ["alice@example.org"]


def _decide(policy, **kw):
    args = {"user": "alice", "total_bytes": 10 << 30, "min_bytes": 1 << 30, "slurm": None,
            "enabled": None, "to": ["alice@example.org"], **kw}
    return rc.decide(policy, **args)


def test_policies():
    end = SlurmMail("alice@example.org", frozenset({"END"}), "scontrol")
    fail_only = SlurmMail("alice@example.org", frozenset({"FAIL"}), "scontrol")
    assert _decide("all").send
    assert not _decide("off").send
    assert _decide("above_size").send
    d = _decide("above_size", total_bytes=(1 << 30) - 1)
    assert not d.send and "less than 1.0 GiB" in d.reason
    assert _decide("mail_type_end", slurm=end).send
    assert "--mail-type" in _decide("mail_type_end", slurm=end).reason
    assert not _decide("mail_type_end", slurm=fail_only).send
    assert not _decide("mail_type_end", slurm=None).send  # Slurm forgot the job: no mail
    assert _decide("mail_type_end", slurm=SlurmMail("a", frozenset({"ALL"}), "sacct")).send


def test_the_users_opt_out_wins_over_every_policy_and_opt_in_over_none():
    for policy in ("all", "above_size", "mail_type_end"):
        d = _decide(policy, enabled=False,
                    slurm=SlurmMail("alice", frozenset({"END"}), "scontrol"))
        assert not d.send and "turned these mails off" in d.reason
    assert not _decide("off", enabled=True).send  # the site's off is off
    assert not _decide("all", to=[]).send
    with pytest.raises(ValueError, match="unknown mail policy"):
        _decide("sometimes")


def _script(path: Path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_lookup_asks_scontrol_then_sacct(tmp_path):
    log = tmp_path / "calls"
    scontrol = _script(tmp_path / "scontrol",
                       f'echo "scontrol $*" >> {log}\n'
                       f"[ \"$4\" = 43 ] && printf '%s' '{WITH_MAIL.strip()}' && exit 0\n"
                       'echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1\n')
    sacct = _script(tmp_path / "sacct", f'echo "sacct $*" >> {log}\n'
                    "[ \"$5\" = 50 ] && echo '50|carol@example.org|END' ; exit 0\n")
    lookup = SlurmMailLookup(scontrol=scontrol, sacct=sacct)
    assert lookup(43).user == "alice@example.org"
    assert log.read_text().splitlines() == ["scontrol show job -o 43"]
    m = lookup(50)
    assert m is not None and m.source == "sacct" and m.user == "carol@example.org"
    assert lookup(51) is None
    assert "sacct -X -n -P -j 51 -o JobIDRaw,MailUser,MailType" in log.read_text()


def test_lookup_without_slurm_is_none(tmp_path):
    missing = str(tmp_path / "nope")
    assert SlurmMailLookup(scontrol=missing, sacct=missing)(43) is None
    hang = _script(tmp_path / "hang", "sleep 5\n")
    assert SlurmMailLookup(scontrol=hang, sacct=missing, timeout=0.2)(43) is None


@needs.root("the Slurm testbed needs root")
def test_lookup_on_the_slurm_testbed(slurm_cluster, monkeypatch):
    """A real job submitted with --mail-type=END --mail-user, read back from slurmctld."""
    monkeypatch.setenv("SLURM_CONF", slurm_cluster.env["SLURM_CONF"])
    out = slurm_cluster.job_dir("alice") / "mail-%j.out"
    job = slurm_cluster.submit("alice", ["--mail-type=END", "--mail-user=alice@example.org",
                                         "-J", "mail test", "-o", str(out), "--wrap", "true"])
    other = slurm_cluster.submit("bob", ["-o", str(out), "--wrap", "true"])
    lookup = SlurmMailLookup(scontrol=slurm_cluster.command("scontrol"),
                             sacct=slurm_cluster.command("sacct"))
    m = lookup(job)
    assert m == SlurmMail("alice@example.org", frozenset({"END"}), "scontrol")
    assert lookup(other) == SlurmMail(None, frozenset(), "scontrol")
