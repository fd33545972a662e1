"""Wake up when a file, or a file in a directory, changes: inotify, or polling as a fallback.

One file (``watch_file``: an inbox) is watched on its inode, not through its
directory: a directory watch wakes on every write to every file in it, and an
inbox write is six events (the lock directory moved in and out, the temporary
file made and closed, the rename, the ``flock`` file closed), so every idle
teammate of a team would wake several times for each message to any other
(``FileWatcher``). Writers replace files atomically (``os.replace``): the
replaced inode's link count drops, which inotify reports on it as
``IN_ATTRIB``; the watch is then moved to the new inode before ``wait``
returns, so a read after ``wait`` never misses a later replace. Claude Code
writes an inbox in place (``IN_CLOSE_WRITE`` on the inode). While the file
does not exist, its directory is watched for it to arrive.

A whole directory (``watch_dirs``) is watched for any file in it. A file its
writer keeps open and appends to (``core.jsonl.Appender``: live events) is
never closed after a write, so a watcher of such a directory asks for
``IN_MODIFY`` too (``appended``).
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Protocol

log = logging.getLogger(__name__)

POLL_INTERVAL = 0.05
OVERFLOW = -1
"""The watch descriptor of ``IN_Q_OVERFLOW``: events were lost, so anything may have changed."""


class ChangeWatcher(Protocol):
    """Blocks until the watched file may have changed, or a timeout."""

    def wait(self, timeout: float) -> bool:
        """Return True if a change was seen, False on timeout."""
        ...

    def close(self) -> None: ...


class FileWatcher:
    """Event-driven watcher for one file (Linux): woken by changes to it and to nothing else in its directory."""

    def __init__(self, path: Path, *, appended: bool = False) -> None:
        from inotify_simple import INotify, flags

        # on the file's inode: replaced by a rename (its link count dropped) or touched, written in place and
        # closed (Claude Code's writer), removed, moved away; ``appended``: each write of a writer keeping it open
        self._file_events = (flags.ATTRIB | flags.CLOSE_WRITE | flags.DELETE_SELF | flags.MOVE_SELF
                             | (flags.MODIFY if appended else 0))
        # on the directory, while the file is missing: its arrival
        self._arrival_events = flags.CLOSE_WRITE | flags.MOVED_TO | flags.CREATE
        self._path = os.fspath(path)
        self._parent = os.fspath(path.parent)
        self._name = path.name
        self._inotify = INotify()
        self._file: int | None = None
        self._directory: int | None = None
        try:
            self._arm()  # the directory must exist (as ``watch_file`` promises its callers)
        except BaseException:
            self._inotify.close()
            raise

    def _arm(self) -> None:
        """Watch the inode now at the path; while there is none, the directory for one to arrive."""
        try:
            self._file = self._inotify.add_watch(self._path, self._file_events)
        except FileNotFoundError:
            self._file = None
            if self._directory is None:
                self._directory = self._inotify.add_watch(self._parent, self._arrival_events)
            try:  # it may have arrived before the directory was watched
                self._file = self._inotify.add_watch(self._path, self._file_events)
            except FileNotFoundError:
                return
        if self._directory is not None:
            directory, self._directory = self._directory, None
            try:
                self._inotify.rm_watch(directory)
            except OSError:  # the directory went (its watch with it)
                pass

    def _rearm(self) -> bool:
        """``_arm`` after a change; False when nothing can be watched now (the directory is gone)."""
        try:
            self._arm()
        except OSError:
            self._file = self._directory = None
            return False
        return True

    def wait(self, timeout: float) -> bool:
        deadline = time.monotonic() + max(timeout, 0.0)
        while self._file is None and self._directory is None:  # the directory was gone: look for it again
            if self._rearm():
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            time.sleep(min(POLL_INTERVAL, remaining))
        while True:
            remaining_ms = max(0, int((deadline - time.monotonic()) * 1000))
            events = self._inotify.read(timeout=remaining_ms)
            if any(event.wd in (self._file, OVERFLOW) or (event.wd == self._directory and event.name == self._name)
                   for event in events):  # events of an inode replaced earlier (its removal, later) are not news
                self._rearm()  # the new inode, before the caller reads it
                return True
            if time.monotonic() >= deadline:
                return False

    def close(self) -> None:
        self._inotify.close()


class InotifyWatcher:
    """Event-driven watcher for any file in one or more directories (Linux)."""

    def __init__(self, path: Path, *, also: tuple[Path, ...] = (), appended: tuple[Path, ...] = (),
                 any_change: bool = False) -> None:
        from inotify_simple import INotify, flags

        self._inotify = INotify()
        mask = flags.MOVED_TO | flags.CLOSE_WRITE | flags.CREATE | flags.DELETE
        if any_change:  # an entry written in place, touched, moved out; the directory itself moved or removed
            mask |= flags.MODIFY | flags.ATTRIB | flags.MOVED_FROM | flags.DELETE_SELF | flags.MOVE_SELF
        for directory in dict.fromkeys((path, *also, *appended)):
            self._inotify.add_watch(str(directory), mask | (flags.MODIFY if directory in appended else 0))

    def wait(self, timeout: float) -> bool:
        deadline = time.monotonic() + max(timeout, 0.0)
        while True:
            remaining_ms = max(0, int((deadline - time.monotonic()) * 1000))
            if self._inotify.read(timeout=remaining_ms):
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
        return InotifyWatcher(first, also=more, appended=appended, any_change=any_change)
    except (ImportError, OSError) as exc:
        log.info("file events unavailable, polling instead", extra={"path": str(first), "reason": str(exc)})
    return PollingWatcher(first)


def watch_file(path: Path, *, events: bool = True, appended: bool = False) -> ChangeWatcher:
    """An inotify watcher when available (and ``events``), else polling; ``appended``: also woken by each append
    of a writer that keeps the file open (``core.jsonl.Appender``).

    The parent directory must exist.
    """
    if events:
        try:
            return FileWatcher(path, appended=appended)
        except (ImportError, OSError) as exc:
            log.info("file events unavailable, polling instead", extra={"path": str(path), "reason": str(exc)})
    return PollingWatcher(path)
