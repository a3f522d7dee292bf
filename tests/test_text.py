"""The one text rule (slurm_io.text): any bytes a user can choose become storable text."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from slurm_io.text import clean, display, header, needs_cleaning


def test_valid_utf8_is_kept_exactly_with_controls_and_backslashes() -> None:
    for s in ["job", "héllo wörld", "a\nb\tc", "C:\\path", "日本語", ""]:
        assert clean(s) == s
        assert clean(s.encode()) == s
        assert not needs_cleaning(s)


def test_invalid_bytes_and_nul_become_hex_escapes() -> None:
    assert clean(b"x\xffy") == "x\\xffy"
    assert clean(b"a\x00b") == "a\\x00b"
    assert clean(b"\xed\xa0\x80") == "\\xed\\xa0\\x80"  # a surrogate's CESU bytes


def test_surrogates_of_either_python_convention_give_the_bytes_back() -> None:
    raw = b"x\xffy\xed\xa0\x80"
    assert clean(raw.decode("utf-8", "surrogateescape")) == clean(raw)
    assert clean("a\ud800b") == "a\\xed\\xa0\\x80b"  # from surrogatepass
    assert needs_cleaning("x\udcffy")


def test_display_escapes_terminal_controls_but_keeps_newline_and_tab() -> None:
    assert display("a\x1b[31mred\x07") == "a\\x1b[31mred\\x07"
    assert display("a\nb\tc") == "a\nb\tc"


@given(st.binary(max_size=200))
def test_any_bytes_give_valid_utf8_without_nul(data: bytes) -> None:
    out = clean(data)
    out.encode("utf-8")  # no surrogate left
    assert "\x00" not in out
    assert clean(data.decode("utf-8", "surrogateescape")) == out


@given(st.text(max_size=100))
def test_text_without_nul_or_surrogates_is_unchanged(s: str) -> None:
    if "\x00" not in s:
        assert clean(s) == s


def test_header_is_one_bounded_line_whatever_the_name() -> None:
    assert header("nl\nname\r\nBcc: x@y") == "nl name Bcc: x@y"
    assert header("a\u2028b\x85c\x1cd\u2029e\x00f") == "a b c d e\\x00f"
    assert header(b"x\xffy") == "x\\xffy"
    assert header("  ") == ""
    assert header("y" * 500, 60) == "y" * 59 + "\u2026"


@given(st.one_of(st.text(), st.binary()), st.integers(1, 300))
def test_a_header_value_never_breaks_a_line(value: str | bytes, limit: int) -> None:
    from email.message import EmailMessage

    h = header(value, limit)
    assert len(h) <= limit and len(h.splitlines()) <= 1
    msg = EmailMessage()
    msg["Subject"] = h  # the email package refuses anything that would break the line
    assert msg.as_bytes().count(b"\nSubject") == 0
