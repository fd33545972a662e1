"""Waking on NOTIFY: a ``ChangeWatcher`` (``swarm.core.watch``) over a LISTEN connection of its own.

NOTIFY does not replay: after its connection was lost the watcher makes it
again, LISTENs again and reports a change, so the caller reads again and
finds whatever happened meanwhile.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg

    from swarm.core.store.postgres.database import Database


class NotifyWatcher:
    """A ``ChangeWatcher`` woken by NOTIFY on one channel, over a connection of its own."""

    def __init__(self, db: Database, name: str) -> None:
        self._db = db
        self._channel = name
        self._conn: psycopg.Connection[Any] | None = None
        self._listen()

    def _listen(self) -> None:
        from psycopg import sql

        conn = self._db.connect(autocommit=True)
        conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self._channel)))
        self._conn = conn

    def wait(self, timeout: float) -> bool:
        """True on a NOTIFY, or after the connection was lost and made again (read again: NOTIFY does not
        replay); False when ``timeout`` passed with neither."""
        import psycopg

        deadline = time.monotonic() + max(timeout, 0.0)
        try:
            if self._conn is None or self._conn.closed or self._conn.broken:
                raise psycopg.OperationalError("not listening")
            for _ in self._conn.notifies(timeout=max(timeout, 0.0), stop_after=1):
                return True
            return False
        except psycopg.OperationalError:
            self._drop()
        delay = 0.05
        while True:
            try:
                self._listen()
                return True
            except Exception:  # noqa: BLE001 - StorageError or the driver's: try again until the deadline
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return True  # the caller reads again (and that read reports a database still gone)
                time.sleep(min(delay, remaining))
                delay = min(delay * 2, 1.0)

    def _drop(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:  # noqa: BLE001 - a broken connection may fail to close; it is gone either way
                pass
        self._conn = None

    def close(self) -> None:
        self._drop()
