"""durable_replace: the new file or the old one, never a mix, and no temporary file left."""

from __future__ import annotations

import stat

import pytest

from slurm_io.fsutil import durable_replace


def test_the_new_content_replaces_the_old_with_the_given_mode(tmp_path):
    path = tmp_path / "state"
    path.write_bytes(b"old")
    with durable_replace(path, 0o600) as f:
        f.write(b"new")
    assert path.read_bytes() == b"new"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["state"]


def test_a_failing_writer_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "state"
    path.write_bytes(b"old")
    with pytest.raises(RuntimeError), durable_replace(path) as f:
        f.write(b"half")
        raise RuntimeError("disk full")
    assert path.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["state"]
