"""An exclusive ``flock(2)`` on a lock file, with a bounded wait.

This is the lock every swarm JSON file is changed under (``<file>.lock``). It
takes the same kind of lock as ``filelock``'s Unix locks on the same path, so
either excludes the other, but costs a few microseconds instead of hundreds
(measured: ~4 µs against ~380 µs per acquire/release with filelock 4.x), which
matters on the send path. A lock held by a process that dies is released by
the kernel.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from swarm.core.home import FILE_MODE

FIRST_RETRY = 0.0001
"""Seconds before the first retry of a busy lock; doubled up to ``MAX_RETRY``."""
MAX_RETRY = 0.001


class LockTimeout(Exception):
    """The lock was still held by someone else when the wait ran out."""


def acquire(path: Path, timeout: float) -> int:
    """Take an exclusive lock on ``path`` (created 0600 if missing); return the descriptor holding it.

    Waits at most ``timeout`` seconds, retrying with a short backoff; raises
    ``LockTimeout`` after that (and ``OSError`` if the lock file cannot be
    opened). Each holder opens its own descriptor, so the lock also excludes
    other threads of this process.
    """
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
    try:
        _acquire(fd, timeout)
    except BaseException:
        os.close(fd)
        raise
    return fd


def release(fd: int) -> None:
    """Give the lock back and close its descriptor."""
    try:
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


@contextmanager
def locked(path: Path, timeout: float) -> Iterator[None]:
    """Hold the lock on ``path`` for the ``with`` body (see ``acquire``)."""
    fd = acquire(path, timeout)
    try:
        yield
    finally:
        release(fd)


def _acquire(fd: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    delay = FIRST_RETRY
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise LockTimeout from None
            time.sleep(delay)
            delay = min(delay * 2, MAX_RETRY)
