"""The one rule for text that comes from Slurm and Lustre (job names, work dirs, ids, `%e`).

Users choose these strings, and neither Slurm nor Lustre promises they are UTF-8: a job name
can hold any byte but NUL (`sbatch -J $'x\\xffy'`), a Lustre job id before 2.15.2 is printed
raw, and Python hands such bytes over as lone surrogates (`surrogateescape` from
`os.environ`, `surrogatepass` from the parser). PostgreSQL's `text` takes neither a NUL nor
invalid UTF-8, and one such value used to stop a whole spool or collector.

The rule, applied where text enters the program (never deep inside the store):

- valid UTF-8 without NUL is kept exactly, control characters included (newlines in job
  names are real);
- every byte that is not part of valid UTF-8, and every NUL, becomes the four characters
  `\\xHH` (lower-case hex), the notation Lustre itself uses for odd bytes in quoted job ids;
- nothing else changes, so the stored text of a valid name is the name itself.

A literal backslash in the original is left as it is: `\\xff` in a stored name is either the
byte 0xff or those four characters. That is the one ambiguity, accepted because escaping every
backslash would change the stored text of ordinary names that contain one (Windows-style paths
in job names). `display()` is for terminals: it also escapes control characters so that a job
name cannot move an admin's cursor or change their terminal's colours.
"""

from __future__ import annotations

import codecs
import re

_ERRORS = "slurmio-hex"


def _hex_escape(err: UnicodeError) -> tuple[str, int]:
    """Codec error handler: each offending byte (or surrogate-carried byte) as `\\xHH`."""
    if isinstance(err, UnicodeDecodeError):
        bad = err.object[err.start:err.end]
        return "".join(f"\\x{b:02x}" for b in bad), err.end
    raise err


codecs.register_error(_ERRORS, _hex_escape)

_SURROGATE = re.compile("[\ud800-\udfff]")
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Everything that may end a line somewhere: C0 and C1 controls, DEL, and the Unicode line and
# paragraph separators (str.splitlines() splits on \x1c-\x1e, \x85, U+2028 and U+2029 too,
# and so does the email package before it refuses a header).
_LINE_BREAKING = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]+")


def _surrogate_bytes(s: str) -> bytes:
    """Bytes of a str that may carry raw bytes as surrogates (either Python convention).

    U+DC80..U+DCFF are `surrogateescape`'s stand-ins for single bytes 0x80..0xff; any other
    surrogate came from `surrogatepass` (CESU-style bytes such as ED A0 80) and is given back
    as those three bytes.
    """
    out = bytearray()
    for ch in s:
        cp = ord(ch)
        if 0xDC80 <= cp <= 0xDCFF:
            out.append(cp - 0xDC00)
        elif 0xD800 <= cp <= 0xDFFF:
            out += ch.encode("utf-8", "surrogatepass")
        else:
            out += ch.encode("utf-8")
    return bytes(out)


def clean(value: str | bytes) -> str:
    """`value` as storable text under the rule above (always valid UTF-8, never a NUL)."""
    if isinstance(value, bytes):
        if b"\x00" not in value:
            try:
                return value.decode("utf-8")
            except UnicodeDecodeError:
                pass
        text = value.decode("utf-8", _ERRORS)
        return text.replace("\x00", "\\x00")
    if "\x00" not in value and not _SURROGATE.search(value):
        return value  # the common case: one C-level scan, no copy
    if _SURROGATE.search(value):
        value = _surrogate_bytes(value).decode("utf-8", _ERRORS)
    return value.replace("\x00", "\\x00")


def clean_optional(value: str | bytes | None) -> str | None:
    """`clean()` that passes None through."""
    return None if value is None else clean(value)


def needs_cleaning(value: str) -> bool:
    """Whether `clean(value)` would differ from `value` (a NUL or a carried raw byte)."""
    return "\x00" in value or _SURROGATE.search(value) is not None


def display(value: str) -> str:
    """`clean(value)` with control characters shown as `\\xHH` (tab and newline kept)."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", clean(value))


def header(value: str | bytes, limit: int = 200) -> str:
    """`value` as one line fit for a mail header (Subject, a name in From): `clean(value)`
    with every run of control or line-breaking characters made one space, stripped, and cut
    to `limit` characters (an ellipsis ends a cut one).

    A job name is the user's text and may hold a newline, a CR or any other byte; put into a
    header raw it either forges a header or makes the email package refuse the whole
    message, which used to stop every other user's alert. Applied to every header a mail of
    slurm-io carries whose value comes from a job or from configuration.
    """
    s = _LINE_BREAKING.sub(" ", clean(value)).strip()
    return s if len(s) <= limit else s[: max(0, limit - 1)] + "\u2026"


_LOG_UNSAFE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")


def log_text(value: str) -> str:
    """`clean(value)` fit for one line of a log: every control or line-breaking character
    (newline and CR included, tab kept) as `\\xHH`. A log record's message goes through it, so
    that text a user chose (a job name, a request path) can never start a line that reads as
    another record (journald cuts a daemon's stderr at each newline)."""
    return _LOG_UNSAFE.sub(lambda m: f"\\x{ord(m.group()):02x}", clean(value))


def log_continuation(text: str) -> str:
    """A traceback or stack under a log record: each line kept (they are the program's), but
    indented by `  | ` and cleaned like `log_text`, so that none reads as a record of its own."""
    return "\n".join("  | " + log_text(line) for line in text.split("\n"))
