"""The message (slurm_io/mail/builder.py + templates/): structure, headers, HTML rules for
mail clients, site template overrides, the [mail] configuration."""

from __future__ import annotations

import email
import re
from email import policy
from pathlib import Path

import pytest

from slurm_io import config as config_mod
from slurm_io.config import Config, ConfigError
from slurm_io.mail.builder import MailBuilder, MailSettings, html_part, text_part
from slurm_io.mail.view import READ_COLOUR, WRITE_COLOUR
from tests.mail.reports import healthy_streamer, metadata_storm, small_writer, typed


def _builder(**cfg) -> MailBuilder:
    return MailBuilder(Config(**cfg), lookup=lambda job: None, clock=lambda: 1_795_100_000.0)


def test_a_multipart_alternative_message_with_text_and_html():
    r = small_writer(jobid=4711, name="tiny_writes", write_bytes=int(1.2 * (1 << 40)),
                     read_bytes=int(3.4 * (1 << 30)))
    msg = _builder(mail_from="hpc-io@example.org").message(
        typed(r), to=["alice@example.org"], reason="your job read and wrote at least 1.0 GiB")
    assert msg.get_content_type() == "multipart/alternative"
    parts = list(msg.iter_parts())
    assert [p.get_content_type() for p in parts] == ["text/plain", "text/html"]
    assert all(p.get_content_charset() == "utf-8" for p in parts)
    assert msg["Subject"] == "[slurm-io] job 4711 (tiny_writes): 1.2 TiB written, 3.4 GiB read"
    assert msg["From"] == "hpc-io@example.org"
    assert msg["To"] == "alice@example.org"
    assert msg["Auto-Submitted"] == "auto-generated"
    assert msg["Date"]
    assert msg["Message-ID"] is None  # the reporter's, deterministic per job
    # survives the trip through bytes (what SMTP and .eml files carry)
    back = email.message_from_bytes(msg.as_bytes(), policy=policy.default)
    assert back.get_content_type() == "multipart/alternative"
    assert text_part(back) == text_part(msg)
    text = text_part(msg)
    assert "Lustre I/O of job 4711 (tiny_writes)" in text
    assert "Many small writes" in text and "MPI_File_write_all" in text
    assert "because your job read and wrote at least 1.0 GiB" in text
    assert "jobio mail off" in text
    assert max(len(line) for line in text.splitlines()) <= 100


def test_the_text_part_has_the_ascii_timeline():
    text = text_part(_builder().message(typed(healthy_streamer())))
    lines = text.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("TIMELINE  (one row per "))
    assert _scale(text).endswith("/s")
    chart = lines[head + 2:]
    rows = [ln for ln in chart[:13] if re.match(r"  \d\d:\d\d ", ln)]
    assert len(rows) >= 12
    assert all("=" in ln and "#" in ln and "|" in ln for ln in rows[:-1])
    assert "I/O pattern: no advice." in text


def _scale(text: str) -> str:
    return re.search(r"a full bar is (.+?)\)", text).group(1)


def test_the_html_part_is_safe_for_mail_clients():
    html = html_part(_builder().message(typed(metadata_storm()), to=["a@b.org"]))
    low = html.lower()
    for banned in ("<script", "<img", "<link", "<style", "<iframe", "javascript:", "url(",
                   "http://", "https://", "@import"):
        assert banned not in low, banned
    assert low.startswith("<!doctype html>")
    assert 'role="presentation"' in html
    # the timeline's bars: table cells with a width and a background colour
    bars = re.findall(r'width="(\d+)%"[^>]*><tr><td height="\d+" bgcolor="(#[0-9a-f]{6})"', html)
    assert {c for _, c in bars} >= {READ_COLOUR}
    assert all(0 < int(w) <= 100 for w, _ in bars)
    assert "Heavy metadata load" in html and "1,000,000 opens" in html


def test_both_bar_colours_in_a_job_that_reads_and_writes():
    html = html_part(_builder().message(typed(healthy_streamer())))
    for colour in (READ_COLOUR, WRITE_COLOUR):
        assert len(re.findall(f'bgcolor="{colour}"', html)) >= 12
    assert "Healthy I/O pattern" in html


def test_user_text_is_escaped_in_html_and_kept_in_text():
    r = healthy_streamer(name="<b>x</b> & <script>y</script>")
    msg = _builder().message(typed(r))
    html = html_part(msg)
    assert "<script>" not in html and "&lt;script&gt;y&lt;/script&gt;" in html
    assert "<b>x</b> & <script>y</script>" in text_part(msg)


def test_a_site_template_dir_overrides_by_file_name(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "job_report.txt.j2").write_text(
        "Dear {{ v.user }}, job {{ v.jobid }} wrote {{ v.written }}.\n"
        "{% for a in v.advice %}- {{ a.title }}\n{% endfor %}")
    msg = _builder(mail_template_dir=site).message(typed(small_writer()))
    assert text_part(msg) == "Dear alice, job 123 wrote 8.0 GiB.\n- Many small writes\n"
    assert "Lustre I/O report" in html_part(msg)  # the packaged HTML part still applies
    (site / "job_report.html.j2").write_text("<p>{{ v.name }} at {{ mail.sender }}</p>\n")
    msg = _builder(mail_template_dir=site, mail_from="io@example.org").message(
        typed(small_writer(name="a<b")))
    assert html_part(msg) == "<p>a&lt;b at io@example.org</p>\n"  # autoescaped


def test_a_template_error_is_loud(tmp_path):
    (tmp_path / "job_report.txt.j2").write_text("{{ v.no_such_field }}")
    with pytest.raises(Exception, match="no_such_field"):
        _builder(mail_template_dir=tmp_path).message(typed(healthy_streamer()))


def test_mail_configuration_from_toml(tmp_path):
    f = tmp_path / "config.toml"
    f.write_text(f"""
[mail]
policy = "mail_type_end"
min_bytes = "10GiB"
domain = "example.org"
from = "hpc@example.org"
template_dir = "{tmp_path}"
slurm_lookup = false

[mail.advice]
kb_ops = 32
small_share = 0.75
metadata_per_node_hour = 50000
min_requests = 100
min_metadata_ops = 1000
""")
    s = MailSettings.from_config(config_mod.load(f))
    assert (s.policy, s.min_bytes, s.domain, s.from_address) == (
        "mail_type_end", 10 << 30, "example.org", "hpc@example.org")
    assert s.template_dir == tmp_path and not s.slurm_lookup
    t = s.thresholds
    assert (t.kb_ops, t.small_share, t.metadata_per_node_hour, t.min_requests,
            t.min_metadata_ops) == (32, 0.75, 50000, 100, 1000)
    f.write_text('[mail]\npolicy = "sometimes"\n')
    with pytest.raises(ConfigError, match="sometimes"):
        config_mod.load(f)
    f.write_text('[mail]\nmin_bytes = "lots"\n')
    with pytest.raises(ConfigError, match="not a size"):
        config_mod.load(f)


def test_bad_address_rules_and_template_dirs_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match=r"mail\.address"):
        MailSettings.from_config(Config(mail_address="{username}@example.org"))
    with pytest.raises(ConfigError, match="template_dir"):
        MailSettings.from_config(Config(mail_template_dir=Path(tmp_path / "missing")))
    assert MailSettings.from_config(Config()).policy == "above_size"
