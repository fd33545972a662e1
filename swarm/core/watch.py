"""Wake up when a file in a directory changes: inotify, or polling as a fallback.

Writers replace files atomically (``os.replace``), so the directory is watched,
not the file: the rename shows up as ``IN_MOVED_TO`` for the file's name. A
file its writer keeps open and appends to (``core.jsonl.Appender``: live
events) is never closed after a write, so a watcher of such a directory asks
for ``IN_MODIFY`` too (``appended``).
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Protocol

log = logging.getLogger(__name__)

POLL_INTERVAL = 0.05


class ChangeWatcher(Protocol):
    """Blocks until the watched file may have changed, or a timeout."""

    def wait(self, timeout: float) -> bool:
        """Return True if a change was seen, False on timeout."""
        ...

    def close(self) -> None: ...


class InotifyWatcher:
    """Event-driven watcher for one file name in one directory, or (``whole_dir``) any file in ``path`` (Linux)."""

    def __init__(self, path: Path, *, whole_dir: bool = False, also: tuple[Path, ...] = (),
                 appended: tuple[Path, ...] = (), any_change: bool = False) -> None:
        from inotify_simple import INotify, flags

        self._name = None if whole_dir else path.name
        self._inotify = INotify()
        mask = flags.MOVED_TO | flags.CLOSE_WRITE | flags.CREATE | flags.DELETE
        if any_change:  # an entry written in place, touched, moved out; the directory itself moved or removed
            mask |= flags.MODIFY | flags.ATTRIB | flags.MOVED_FROM | flags.DELETE_SELF | flags.MOVE_SELF
        for directory in dict.fromkeys((path if whole_dir else path.parent, *also, *appended)):
            self._inotify.add_watch(str(directory), mask | (flags.MODIFY if directory in appended else 0))

    def wait(self, timeout: float) -> bool:
        deadline = time.monotonic() + max(timeout, 0.0)
        while True:
            remaining_ms = max(0, int((deadline - time.monotonic()) * 1000))
            events = self._inotify.read(timeout=remaining_ms)
            if any(self._name is None or event.name == self._name for event in events):
                return True
            if time.monotonic() >= deadline:
                return False

    def close(self) -> None:
        self._inotify.close()


class PollingWatcher:
    """Fallback watcher: compares the file's stat every ``interval`` seconds."""

    def __init__(self, path: Path, interval: float = POLL_INTERVAL) -> None:
        self._path = path
        self._interval = interval
        self._last = self._signature()

    def _signature(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self._path)
        except FileNotFoundError:
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    def wait(self, timeout: float) -> bool:
        deadline = time.monotonic() + max(timeout, 0.0)
        while True:
            current = self._signature()
            if current != self._last:
                self._last = current
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            time.sleep(min(self._interval, remaining))

    def close(self) -> None:
        return None


def preload() -> None:
    """Import what an inotify watcher needs (``inotify_simple``: ``ctypes.util``, ``termios``, and a look-up of
    libc), as the CLI server does before it forks: each forked teammate would otherwise import it on its own
    (~6 ms of CPU, its pages unshared). Nothing, where inotify is not available."""
    try:
        import inotify_simple  # noqa: F401
    except ImportError:
        pass


def watch_dirs(first: Path, *more: Path, appended: tuple[Path, ...] = (), any_change: bool = False) -> ChangeWatcher:
    """A watcher that wakes when any file in these directories (which must exist) is written, renamed in or removed;
    in ``appended`` (of these, or more) also when a file held open by its writer is appended to; with
    ``any_change``, on anything else done to an entry too (written in place, touched, renamed out: code that
    must not change under a process, ``swarm.cli.code_watch``).

    Without inotify it polls the first directory only (a rename into it changes its mtime).
    """
    try:
        return InotifyWatcher(first, whole_dir=True, also=more, appended=appended, any_change=any_change)
    except (ImportError, OSError) as exc:
        log.info("file events unavailable, polling instead", extra={"path": str(first), "reason": str(exc)})
    return PollingWatcher(first)


def watch_file(path: Path, *, events: bool = True) -> ChangeWatcher:
    """An inotify watcher when available (and ``events``), else polling.

    The parent directory must exist.
    """
    if events:
        try:
            return InotifyWatcher(path)
        except (ImportError, OSError) as exc:
            log.info("file events unavailable, polling instead", extra={"path": str(path), "reason": str(exc)})
    return PollingWatcher(path)
