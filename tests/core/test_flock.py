"""The lock every JSON file is changed under."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import filelock
import pytest

from swarm.core.flock import LockTimeout, locked


def test_bounded_wait_then_timeout(tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    with locked(path, 1.0):
        start = time.monotonic()
        with pytest.raises(LockTimeout):
            with locked(path, 0.2):
                pass
        assert 0.2 <= time.monotonic() - start < 2.0
    with locked(path, 0.2):  # released: free again
        pass


def test_threads_of_one_process_exclude_each_other(tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    inside, overlaps = [0], [0]

    def work() -> None:
        for _ in range(200):
            with locked(path, 10.0):
                inside[0] += 1
                if inside[0] > 1:
                    overlaps[0] += 1
                time.sleep(0)
                inside[0] -= 1

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert overlaps[0] == 0


def test_excludes_and_is_excluded_by_filelock(tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    other = filelock.FileLock(str(path))
    with other:
        with pytest.raises(LockTimeout):
            with locked(path, 0.1):
                pass
    with locked(path, 1.0):
        with pytest.raises(filelock.Timeout):
            filelock.FileLock(str(path), timeout=0.1).acquire()


def test_a_directory_where_the_lock_file_belongs_is_a_clear_error(tmp_path: Path) -> None:
    from swarm.core.codecs import InboxCodec
    from swarm.core.jsonfile import LockedJsonFile
    from swarm.errors import LockTimeoutError

    inbox = tmp_path / "bob.json"
    (tmp_path / "bob.json.lock").mkdir()  # how Claude Code locks: a directory
    with pytest.raises(LockTimeoutError, match="cannot use the lock file .*bob.json.lock"):
        LockedJsonFile(inbox, InboxCodec()).update(lambda entries: None)
    assert not inbox.exists()
