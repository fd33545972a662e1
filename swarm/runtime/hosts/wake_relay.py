"""The host's one LISTEN session, relaying NOTIFYs to its teammates as file writes (``core.store.postgres.relay``).

Run by ``swarm host serve`` in a thread for its whole life. One loop: wait
(``select``) on the database connection and on inotify of the relay
directory; LISTEN on the channel of each waiter file that appeared (then
acknowledge it), UNLISTEN channels whose last file went, rewrite the files
of each notified channel. After the connection was lost it connects again
and rewrites every file (NOTIFY does not replay: every waiter reads again).
Files of processes that are gone are removed.
"""

from __future__ import annotations

import fcntl
import logging
import os
import select
import threading
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swarm.backends.procs import is_pid_alive
from swarm.core.home import ensure_dir
from swarm.core.store.postgres.relay import LOCK_NAME, parse
from swarm.errors import StorageError, UsageError

if TYPE_CHECKING:
    import psycopg

    from swarm.core.store.postgres.database import Database

log = logging.getLogger(__name__)

TICK = 0.5
"""Seconds between looks at the directory even without an event (files of gone processes, a missed event), and
between touches of the lock (``relay.STALE_AFTER``)."""


class WakeRelay:
    """Relays NOTIFYs on its waiters' channels to their files in ``directory``."""

    def __init__(self, db: Database, directory: Path) -> None:
        self._db = db
        self._directory = ensure_dir(directory)
        self._lock_fd = os.open(directory / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock_fd)
            raise UsageError(f"another `swarm host serve` relays wake-ups in {directory}; one host per home") from None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def start(self) -> None:
        self._thread = threading.Thread(target=self.run, name="wake-relay", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop relaying; waiters then LISTEN themselves (they find the lock free)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5.0)
        os.close(self._lock_fd)

    def run(self) -> None:
        import psycopg
        from inotify_simple import INotify, flags

        inotify = INotify()
        inotify.add_watch(str(self._directory), flags.CREATE | flags.MOVED_TO | flags.DELETE | flags.MOVED_FROM)
        delay = 0.05
        try:
            while not self._stop.is_set():
                self._alive()
                try:
                    conn = self._db.connect(autocommit=True)
                except StorageError as exc:
                    log.warning("wake relay: %s; trying again", exc)
                    self._stop.wait(delay)
                    delay = min(delay * 2, 1.0)
                    continue
                delay = 0.05
                try:
                    self._serve(conn, inotify)
                except psycopg.OperationalError:
                    log.warning("wake relay: the database connection was lost; connecting again")
                finally:
                    conn.close()
        finally:
            inotify.close()

    def _serve(self, conn: psycopg.Connection[Any], inotify: Any) -> None:
        listening: set[str] = set()
        self._sync(conn, listening, wake_all=True)  # (again) listening: every waiter reads again
        while not self._stop.is_set():
            self._alive()
            ready, _, _ = select.select([conn.fileno(), inotify.fileno()], [], [], TICK)
            if inotify.fileno() in ready:
                inotify.read(timeout=0)
            self._sync(conn, listening, wake_all=False)
            notified = {n.channel for n in conn.notifies(timeout=0)}
            for name in self._files():
                found = parse(name)
                if found is not None and found[0] in notified:
                    self._wake(name)

    def _alive(self) -> None:
        """Touch the lock: waiters take a relay that stopped touching it as hung (``relay.STALE_AFTER``)."""
        os.utime(self._lock_fd)

    def _files(self) -> list[str]:
        return [entry.name for entry in os.scandir(self._directory) if entry.is_file(follow_symlinks=False)]

    def _sync(self, conn: psycopg.Connection[Any], listening: set[str], *, wake_all: bool) -> None:
        """LISTEN/UNLISTEN to match the waiters' files; acknowledge new ones (all of them: ``wake_all``)."""
        from psycopg import sql

        channels: dict[str, list[str]] = defaultdict(list)
        for name in self._files():
            found = parse(name)
            if found is None:
                continue
            if not is_pid_alive(found[1]):
                (self._directory / name).unlink(missing_ok=True)
                continue
            channels[found[0]].append(name)
        for channel in sorted(set(channels) - listening):
            conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
            listening.add(channel)
        for channel in sorted(listening - set(channels)):
            conn.execute(sql.SQL("UNLISTEN {}").format(sql.Identifier(channel)))
            listening.discard(channel)
        for names in channels.values():
            for name in names:
                if wake_all or self._unacknowledged(name):
                    self._wake(name)

    def _unacknowledged(self, name: str) -> bool:
        try:
            return (self._directory / name).stat().st_size == 0
        except FileNotFoundError:
            return False

    def _wake(self, name: str) -> None:
        """Rewrite one byte: the waiter's inotify sees ``IN_CLOSE_WRITE``."""
        try:
            fd = os.open(self._directory / name, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return  # its waiter closed meanwhile
        try:
            os.write(fd, b"1")
        finally:
            os.close(fd)
