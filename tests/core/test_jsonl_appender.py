"""A held-open append-only file (``core.jsonl.Appender``): one open for a life of records, counted; still a
fresh line after a torn one, a new file when the old one is removed, rotated or replaced under the writer, and
never a write through a planted symlink."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from swarm.core.jsonl import Appender, read_records
from swarm.core.watch import watch_dirs
from swarm.errors import StorageError
from tests.conftest import OpenLog
from tests.core.test_durability import _file_size_limit


def test_a_life_of_records_costs_one_open_and_a_stat_each(tmp_path: Path, os_calls: Counter[str],
                                                          open_log: OpenLog) -> None:
    path = tmp_path / "t" / "mate.jsonl"
    appender = Appender(path)
    with open_log.recording() as opened:
        for n in range(50):
            appender.append({"n": n}, durable=n % 10 == 0)
    assert opened == [str(path)]  # per record before: an open, an fstat, a pread and a close
    assert os_calls["fsync"] == 5  # the durable ones, no more
    assert os_calls["stat mate.jsonl"] == 49  # what notices the file replaced under the writer
    assert os_calls["pread"] == 0  # its own last write ended a line: no last byte to look at
    assert [r["n"] for r in read_records(path)] == list(range(50))


def test_another_writers_torn_line_is_not_swallowed(tmp_path: Path, os_calls: Counter[str]) -> None:
    path = tmp_path / "mate.jsonl"
    appender = Appender(path)
    appender.append({"n": 1}, durable=False)
    with open(path, "ab") as other:
        other.write(b'{"n": 2, "cut off by a cr')  # another writer killed mid-line
    appender.append({"n": 3}, durable=False)
    assert os_calls["pread"] == 1  # the size is not where this writer left it: the last byte is looked at
    assert [r["n"] for r in read_records(path)] == [1, 3]


def test_its_own_short_write_raises_and_the_next_record_starts_a_fresh_line(tmp_path: Path) -> None:
    path = tmp_path / "mate.jsonl"
    appender = Appender(path)
    appender.append({"n": 1}, durable=True)
    size = path.stat().st_size
    with _file_size_limit(size + 100), pytest.raises(StorageError, match="cannot append"):
        appender.append({"n": 2, "text": "x" * 1000}, durable=True)
    appender.append({"n": 3}, durable=True)
    assert [r["n"] for r in read_records(path)] == [1, 3]


def test_a_file_removed_or_moved_under_the_writer_is_opened_again(tmp_path: Path) -> None:
    path = tmp_path / "mate.jsonl"
    appender = Appender(path)
    appender.append({"n": 1}, durable=False)
    path.unlink()
    appender.append({"n": 2}, durable=False)  # not into the removed inode the descriptor still holds
    assert [r["n"] for r in read_records(path)] == [2]
    moved = tmp_path / "moved.jsonl"
    path.rename(moved)
    path.write_bytes(b'{"n": 0}\n')  # someone else's fresh file at the path
    appender.append({"n": 3}, durable=True)
    assert [r["n"] for r in read_records(path)] == [0, 3] and [r["n"] for r in read_records(moved)] == [2]


def test_a_symlink_planted_over_a_held_file_is_never_written_through(tmp_path: Path) -> None:
    path, outside = tmp_path / "mate.jsonl", tmp_path / "outside.txt"
    outside.write_text("precious\n")
    appender = Appender(path)
    appender.append({"n": 1}, durable=False)
    path.unlink()
    path.symlink_to(outside)
    with pytest.raises(StorageError, match="cannot append"):
        appender.append({"n": 2}, durable=False)
    assert outside.read_text() == "precious\n"


def test_a_watcher_of_appended_files_wakes_on_an_append_to_a_held_file(tmp_path: Path) -> None:
    """A held-open file is never closed after a write, so no IN_CLOSE_WRITE tells a follower (``swarm logs -f``,
    a session's teammate view, ``swarm top``) of a new record: its watcher asks for IN_MODIFY (``appended``)."""
    appender = Appender(tmp_path / "mate.jsonl")
    appender.append({"n": 0}, durable=False)  # opened (and created) before anyone watches
    told, deaf = watch_dirs(tmp_path, appended=(tmp_path,)), watch_dirs(tmp_path)
    try:
        appender.append({"n": 1}, durable=False)
        assert told.wait(10.0), "the append did not wake a watcher of appended files"
        assert not deaf.wait(0.2)  # what followers had before: nothing, until a timeout
    finally:
        told.close()
        deaf.close()
