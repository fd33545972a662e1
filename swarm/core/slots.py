"""N slots shared by processes: holding one is an exclusive ``flock`` on one of N files.

What a team's cap on model requests in flight is made of
(``swarm.models.team_gate``). A process that wants a slot tries each file
without blocking, in an order of its own (so waiters spread out), and polls
with a short, growing sleep while all are taken. The kernel drops a flock
when its holder dies, so a ``kill -9`` mid-request never keeps a slot taken.
Nothing is held, opened or running while nobody asks: idle costs nothing.
"""

from __future__ import annotations

import fcntl
import os
import random
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from swarm.core.fileio import storage_error
from swarm.core.home import FILE_MODE, ensure_dir

FIRST_POLL = 0.01
"""Seconds between tries while every slot is taken, doubled up to ``MAX_POLL``."""
MAX_POLL = 0.1


class Slots:
    """``count`` slots as the files ``slot-0`` … ``slot-<count-1>`` in ``directory``."""

    def __init__(self, directory: Path, count: int) -> None:
        if count < 1:
            raise ValueError(f"a slot pool needs at least one slot, not {count}")
        self.directory = directory
        self.count = count

    @contextmanager
    def hold(self, cancel: threading.Event | None = None) -> Iterator[int]:
        """Wait for a free slot and hold it for the ``with`` body; yields its number.

        ``cancel`` set while waiting ends the wait with ``InterruptedError``.
        """
        fd, number = self._take(cancel)
        try:
            yield number
        finally:
            os.close(fd)  # closing the only descriptor drops the flock

    def _take(self, cancel: threading.Event | None) -> tuple[int, int]:
        ensure_dir(self.directory)
        order = list(range(self.count))
        random.shuffle(order)
        delay = FIRST_POLL
        while True:
            for number in order:
                fd = self._open(number)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    continue
                return fd, number
            if cancel is not None and cancel.wait(delay):
                raise InterruptedError("cancelled while waiting for a free request slot")
            if cancel is None:
                time.sleep(delay)
            delay = min(delay * 2, MAX_POLL)

    def _open(self, number: int) -> int:
        path = self.directory / f"slot-{number}"
        try:
            return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, FILE_MODE)
        except OSError as exc:
            raise storage_error(exc, path, "open") from exc
