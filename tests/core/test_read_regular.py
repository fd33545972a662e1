"""``fileio.read_regular``: every byte of a regular file, in one read when it does not change, never a hang.

The size ``fstat`` gave is only where the reading starts: a file another
program rewrites in place (Claude Code's ``config.json``) may have grown or
shrunk by the time it is read, and what is read is what is there at the end.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from swarm.core import fileio
from swarm.core.fileio import NotRegularFileError, read_regular


@pytest.mark.parametrize("size", [0, 1, 7, 4096, 100_000, (1 << 20) + 3])
def test_every_byte_and_the_mode_and_at_most_limit_plus_one(tmp_path: Path, size: int) -> None:
    data = os.urandom(size)
    path = tmp_path / "f.json"
    path.write_bytes(data)
    path.chmod(0o640)
    assert read_regular(path) == (data, 0o640)
    for limit in (0, 3, size, size + 5):
        found = read_regular(path, limit=limit)
        assert found is not None and found[0] == data[:limit + 1]


def _stat_says(monkeypatch: pytest.MonkeyPatch, size: int) -> None:
    real = os.fstat

    def fstat(fd: int) -> Any:
        info = real(fd)
        return os.stat_result((info.st_mode, info.st_ino, info.st_dev, info.st_nlink, info.st_uid, info.st_gid,
                               size, info.st_atime, info.st_mtime, info.st_ctime))

    monkeypatch.setattr(fileio.os, "fstat", fstat)


def test_a_file_that_grew_after_its_size_was_taken_is_read_to_its_end(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = os.urandom(3 * fileio.READ_CHUNK + 17)
    path = tmp_path / "f.json"
    path.write_bytes(data)
    _stat_says(monkeypatch, 10)  # the size it had when the fstat ran
    found = read_regular(path)
    assert found is not None and found[0] == data
    found = read_regular(path, limit=len(data) - 2)
    assert found is not None and found[0] == data[:len(data) - 1]


def test_a_file_that_shrank_after_its_size_was_taken_reads_as_it_is(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "f.json"
    path.write_bytes(b"[1]")
    _stat_says(monkeypatch, 5000)
    assert read_regular(path) == (b"[1]", path.stat().st_mode & 0o777)


def test_a_fifo_is_refused_without_a_hang_and_a_missing_file_is_none(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")  # no writer: a blocking open or read would hang here
    with pytest.raises(NotRegularFileError):
        read_regular(tmp_path / "fifo")
    with pytest.raises(NotRegularFileError):
        read_regular(tmp_path)
    assert read_regular(tmp_path / "missing") is None
