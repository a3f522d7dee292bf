"""The configuration door (slurm_io.config.load): whatever a config file holds -- any known key
with any TOML value, or any bytes at all -- it is a Config or one ConfigError (which the CLI
prints as one line), never another exception (docs/security.md, "config files")."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from slurm_io.config import _KEYS, Config, ConfigError, load

SCALARS = st.one_of(
    st.integers(-(2**70), 2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(
        lambda f: "nan" if f != f else ("inf" if f == float("inf") else
                                         "-inf" if f == float("-inf") else repr(f))),
    st.text(max_size=40).map(json.dumps),
    st.sampled_from(["true", "false", "1979-05-27T07:32:00Z", "07:32:00", "1979-05-27",
                     '""', '"16KiB"', '"1e999"', '"-1"', '"0.0.0.0:99999"', '"[::1]:x"']),
)
VALUES = st.one_of(SCALARS, st.lists(SCALARS, max_size=4).map(lambda v: f"[{', '.join(v)}]"),
                   st.dictionaries(st.sampled_from(["a", "b"]), SCALARS, max_size=2).map(
                       lambda d: "{" + ", ".join(f"{k} = {v}" for k, v in d.items()) + "}"))


def _toml(entries: dict[str, str]) -> str:
    sections: dict[str, list[str]] = {}
    for key, value in entries.items():
        section, _, name = key.rpartition(".")
        sections.setdefault(section, []).append(f"{name} = {value}")
    out = sections.pop("", [])
    for section, lines in sections.items():
        out += [f"[{section}]", *lines]
    return "\n".join(out) + "\n"


def _load(text: bytes) -> Config | ConfigError:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "config.toml"
        path.write_bytes(text)
        try:
            return load(path)
        except ConfigError as e:
            assert "\n" not in str(e), str(e)  # one line
            return e


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.sampled_from(sorted(_KEYS)), VALUES, min_size=1, max_size=3))
def test_any_value_of_a_known_key_is_a_config_or_one_config_error(entries: dict[str, str]
                                                                   ) -> None:
    assert isinstance(_load(_toml(entries).encode()), Config | ConfigError)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_are_a_config_or_one_config_error(data: bytes) -> None:
    assert isinstance(_load(data), Config | ConfigError)
