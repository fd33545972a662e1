"""One process's connections to one database: a connection per thread, reconnects, the schema.

Every operation is one transaction run by ``Database.run``. When the
connection is lost (the server restarted, a network blip) ``run``
reconnects (for up to ``RECONNECT_SECONDS``) and runs the operation again
when that is safe: always if the connection was lost before the commit was
sent (the server rolls back a transaction whose client went away), and
during the commit — where the outcome is unknown — only if the caller said
the operation is idempotent (a send carries its ``msg_id``, an
acknowledgement names ids, a claim reads back as the claimer's). The others
then fail with a one-line ``StorageError`` saying it may or may not have
happened.

Nothing that reaches an error or a log carries the URL's password
(``swarm.core.store.redact``).
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from swarm.core.store.postgres.schema import migrate
from swarm.core.store.redact import redact_text, redact_url
from swarm.errors import StorageError, UsageError

if TYPE_CHECKING:
    import psycopg

    from swarm.core.home import Home

log = logging.getLogger(__name__)

R = TypeVar("R")
RECONNECT_SECONDS = 60.0
"""How long an operation keeps reconnecting to a database that went away before it fails."""
CONNECT_TIMEOUT = 10
"""Seconds one connection attempt may take."""


def driver() -> Any:
    """The ``psycopg`` module; UsageError naming the extra when it is not installed."""
    try:
        import psycopg
    except ImportError as exc:
        raise UsageError("this team keeps its state in PostgreSQL, which needs psycopg: "
                         "pip install 'swarm[postgres]'") from exc
    return psycopg


class Databases:
    """The databases this process talks to, by URL (kept on the home: ``Home.kept``)."""

    def __init__(self, home: Home) -> None:
        self._open: dict[str, Database] = {}
        self._lock = threading.Lock()

    def get(self, url: str) -> Database:
        with self._lock:
            found = self._open.get(url)
            if found is None:
                found = self._open[url] = Database(url)
            return found


class Database:
    """One database: a connection per thread, made on first use and again after it broke."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.shown = redact_url(url)
        self._local = threading.local()
        self._migrated = False
        self._reached = False
        """Whether this process ever connected: a database that never answered is an error at once, one that
        went away is waited for."""

    # -- connecting ------------------------------------------------------------

    def connect(self, *, autocommit: bool = False) -> psycopg.Connection[Any]:
        """A new connection (the caller's to close); StorageError without the password on failure."""
        psycopg = driver()
        try:
            conn = psycopg.connect(self.url, autocommit=autocommit, connect_timeout=CONNECT_TIMEOUT,
                                   application_name="swarm")
        except psycopg.Error as exc:
            raise self.error(exc, "connect to") from None
        if not self._migrated:
            try:
                migrate(conn)
            except psycopg.Error as exc:
                conn.close()
                raise self.error(exc, "create the schema in") from None
            self._migrated = True
        self._reached = True
        return conn

    def _connection(self) -> psycopg.Connection[Any]:
        conn = getattr(self._local, "conn", None)
        if conn is None or conn.closed or conn.broken:
            if conn is not None:
                conn.close()
            conn = self._local.conn = self.connect()
            weakref.finalize(threading.current_thread(), conn.close)  # a thread's connection ends with it
        return conn

    def close(self) -> None:
        """Close this thread's connection (others close when their thread's object goes)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    # -- running -------------------------------------------------------------

    def run(self, work: Callable[[psycopg.Cursor[Any]], R], *, idempotent: bool, what: str) -> R:
        """Run ``work`` in one transaction and commit; when the connection was lost, reconnect and run it again —
        always if it was lost before the commit was sent (the server rolled the transaction back), and during
        the commit only if ``idempotent``. ``what`` names the operation in errors ("send to alice")."""
        psycopg = driver()
        deadline = time.monotonic() + RECONNECT_SECONDS
        delay = 0.05
        while True:
            committing = False
            try:
                conn = self._connection()
                with conn.transaction(), conn.cursor() as cur:
                    result = work(cur)
                    committing = True  # from here the outcome of a lost connection is unknown
                return result
            except psycopg.OperationalError as exc:
                if not self._lost():
                    raise self.error(exc, what) from None
                if committing and not idempotent:
                    raise StorageError(f"the connection to {self.shown} was lost during {what}; it may or may "
                                       f"not have happened — check, then try again") from None
                if time.monotonic() >= deadline:
                    raise self.error(exc, what) from None
                log.warning("database connection lost during %s; reconnecting: %s", what,
                            redact_text(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__,
                                        self.url), extra={"database": self.shown})
                time.sleep(delay)
                delay = min(delay * 2, 1.0)
            except StorageError:
                if not self._reached or time.monotonic() >= deadline:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 1.0)
            except psycopg.Error as exc:
                raise self.error(exc, what) from None

    def _lost(self) -> bool:
        conn = getattr(self._local, "conn", None)
        return conn is None or conn.closed or conn.broken

    def error(self, exc: BaseException, what: str) -> StorageError:
        """A one-line StorageError for a driver error, with no password in it."""
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return StorageError(f"could not {what} the database {self.shown}: {redact_text(first, self.url)}")
