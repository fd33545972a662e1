"""Wake-ups relayed by the host: one LISTEN connection per host instead of one per teammate.

A LISTEN needs a database session of its own, which a transaction-mode
pooler cannot give, so a teammate that LISTENs costs a direct connection
just to be woken. On a machine where ``swarm host serve`` runs, the host
holds the only LISTEN session (``swarm.runtime.hosts.wake_relay``) and wakes
its teammates through files in ``<home>/run/pg-wake/``:

- a waiter registers by creating ``<channel>.<pid>.<n>`` (empty), and
  watches that file (inotify);
- the relay LISTENs on every channel that has a file, and writes one byte
  into a new file once it listens — the waiter's acknowledgement, so a send
  made after the waiter was built is never missed;
- on a NOTIFY it rewrites the channel's files (``IN_CLOSE_WRITE`` wakes the
  waiters); after its connection was lost and made again it rewrites all of
  them (NOTIFY does not replay: every waiter reads again);
- the relay holds an ``flock`` on ``relay.lock`` for its life and touches
  it at least every ``relay.TICK`` s. A waiter that finds no relay, or
  whose relay went away or hangs (no touch for ``STALE_AFTER`` s; checked
  every ``RELAY_CHECK`` s of waiting), LISTENs itself (``NotifyWatcher``)
  and reads again — so a teammate whose host froze with it still wakes,
  and its fence (``teammate.fence``) can stop it.

A waiter removes its file when closed; the relay removes the files of
processes that are gone.
"""

from __future__ import annotations

import fcntl
import itertools
import os
import time
from collections.abc import Callable
from pathlib import Path

from swarm.core.watch import ChangeWatcher, FileWatcher
from swarm.errors import StorageError

DIR_NAME = "pg-wake"
LOCK_NAME = "relay.lock"
ACK_SECONDS = 2.0
"""How long a waiter waits for the relay to say it listens before it LISTENs itself."""
RELAY_CHECK = 2.0
"""Seconds of waiting after which a relayed waiter checks that its relay still runs."""
STALE_AFTER = 3.0
"""A relay that has not touched its lock for this long is taken as hung (frozen, stopped)."""


def relay_dir(run_dir: Path) -> Path:
    """Where a home's relayed wake-ups are (under its ``run`` directory)."""
    return run_dir / DIR_NAME


def relay_running(directory: Path) -> bool:
    """Does a relay hold ``directory``'s lock now, and has it touched it lately?"""
    try:
        fd = os.open(directory / LOCK_NAME, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return time.time() - os.fstat(fd).st_mtime < STALE_AFTER
    finally:
        os.close(fd)  # also drops a shared lock taken just now
    return False


def parse(name: str) -> tuple[str, int] | None:
    """(channel, pid) of a waiter's file name, or None for anything else."""
    parts = name.split(".")
    if len(parts) != 3 or not parts[0].startswith("swarm_") or not parts[1].isdigit():
        return None
    return parts[0], int(parts[1])


class RelayedWatcher:
    """A ``ChangeWatcher`` on one channel, woken through the host's relay (or, once it is gone, by LISTEN)."""

    _serial = itertools.count()

    def __init__(self, directory: Path, channel: str, fallback: Callable[[], ChangeWatcher]) -> None:
        self._directory = directory
        self._fallback = fallback
        self._path = directory / f"{channel}.{os.getpid()}.{next(self._serial)}"
        self._inner: ChangeWatcher = FileWatcher(self._path)
        self.relayed = True
        fd = os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        os.close(fd)
        deadline = time.monotonic() + ACK_SECONDS
        while not self._acknowledged():
            if time.monotonic() >= deadline or not relay_running(directory):
                self._leave()
                return
            self._inner.wait(0.05)

    def _acknowledged(self) -> bool:
        try:
            return self._path.stat().st_size > 0
        except FileNotFoundError:
            return False

    def _leave(self) -> None:
        """LISTEN ourselves from now on (StorageError, still relayed, when the database cannot be reached)."""
        own = self._fallback()
        self._inner.close()
        self._path.unlink(missing_ok=True)
        self._inner = own
        self.relayed = False

    def wait(self, timeout: float) -> bool:
        if not self.relayed:
            return self._inner.wait(timeout)
        deadline = time.monotonic() + max(timeout, 0.0)
        while True:
            if self._inner.wait(min(RELAY_CHECK, max(deadline - time.monotonic(), 0.0))):
                return True
            if not relay_running(self._directory) or not self._path.exists():
                try:
                    self._leave()
                except StorageError:
                    pass  # the database is away too (a partition): the caller's read waits for it
                return True  # read again: a wake-up may have been lost with the relay
            if time.monotonic() >= deadline:
                return False

    def close(self) -> None:
        self._inner.close()
        if self.relayed:
            self._path.unlink(missing_ok=True)


def relayed_watcher(directory: Path | None, channel: str,
                    fallback: Callable[[], ChangeWatcher]) -> ChangeWatcher:
    """A watcher on ``channel`` through the relay of ``directory`` when one runs there, else ``fallback()``."""
    if directory is None or not relay_running(directory):
        return fallback()
    try:
        return RelayedWatcher(directory, channel, fallback)
    except (ImportError, OSError):
        return fallback()
