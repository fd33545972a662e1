"""Inboxes as rows of ``swarm_inbox``: "delivered" is a column, a wake-up is a NOTIFY carrying the row's id.

- A send inserts one row per recipient and notifies the recipient's channel
  in the same transaction (a NOTIFY is sent only when its transaction
  commits). ``(team, agent, msg_id)`` is unique, so a send run again after a
  lost connection (``Database.run``) writes nothing twice.
- ``pending`` reads the undelivered rows; ``acknowledge`` marks rows
  delivered by ``msg_id``; ``take`` marks and returns them in one statement
  (row locks: two takers never get the same row).
- ``watcher`` LISTENs on the recipient's channel (or, on a host, is woken by
  the host's one LISTEN session: ``relay``). NOTIFY does not replay, so
  after its connection was lost the watcher reconnects, LISTENs again and
  reports a change: the caller reads the inbox again and finds whatever
  was sent meanwhile.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swarm.core.document_codecs import InboxCodec
from swarm.core.protocol import InboxEntry
from swarm.core.store.postgres.listen import NotifyWatcher
from swarm.core.store.postgres.relay import relayed_watcher
from swarm.core.watch import ChangeWatcher

if TYPE_CHECKING:
    import psycopg

    from swarm.core.store.postgres.database import Database
_INBOX = InboxCodec()


def channel(team: str, agent: str) -> str:
    """The NOTIFY channel of ``agent``'s inbox in ``team`` (an identifier under 63 bytes)."""
    return "swarm_" + hashlib.sha256(f"{team}\0{agent}".encode()).hexdigest()[:40]


class InboxRows:
    """The inboxes of one team in one database."""

    def __init__(self, db: Database, team: str, relay: Path | None = None) -> None:
        self.db = db
        self.team = team
        self.relay = relay
        """The wake-up relay directory of this process's home (used when a host's relay runs there)."""

    def append(self, agent: str, entries: Iterable[dict[str, Any]]) -> None:
        """Insert ``entries`` (wire form, each with a ``msg_id``) for ``agent`` and wake it, in one transaction."""
        from psycopg.types.json import Jsonb

        rows = [(self.team, agent, str(e["msg_id"]), Jsonb(e)) for e in entries]

        def insert(cur: psycopg.Cursor[Any]) -> None:
            ids = []
            for row in rows:
                cur.execute("INSERT INTO swarm_inbox (team, agent, msg_id, entry) VALUES (%s, %s, %s, %s) "
                            "ON CONFLICT (team, agent, msg_id) DO NOTHING RETURNING id", row)
                found = cur.fetchone()
                if found is not None:
                    ids.append(str(found[0]))
            if ids:
                cur.execute("SELECT pg_notify(%s, %s)", (channel(self.team, agent), ",".join(ids)))

        self.db.run(insert, idempotent=True, what=f"send to {agent} in")

    def pending(self, agent: str) -> list[InboxEntry]:
        def look(cur: psycopg.Cursor[Any]) -> list[Any]:
            cur.execute("SELECT entry FROM swarm_inbox WHERE team = %s AND agent = %s AND delivered_at IS NULL "
                        "ORDER BY id", (self.team, agent))
            return [row[0] for row in cur.fetchall()]

        return self._entries(agent, self.db.run(look, idempotent=True, what=f"read {agent}'s inbox in"))

    def take(self, agent: str) -> list[InboxEntry]:
        """The undelivered entries, marked delivered in the same statement (each taken by one caller only)."""
        def mark(cur: psycopg.Cursor[Any]) -> list[Any]:
            cur.execute("UPDATE swarm_inbox SET delivered_at = now() WHERE id IN ("
                        " SELECT id FROM swarm_inbox WHERE team = %s AND agent = %s AND delivered_at IS NULL"
                        " ORDER BY id FOR UPDATE SKIP LOCKED) RETURNING id, entry", (self.team, agent))
            return [entry for _, entry in sorted(cur.fetchall(), key=lambda row: int(row[0]))]

        # not run again after a lost connection: the rows may be marked with nobody holding them
        return self._entries(agent, self.db.run(mark, idempotent=False, what=f"take {agent}'s inbox in"))

    def acknowledge(self, agent: str, keys: Iterable[str]) -> int:
        ids = list(dict.fromkeys(keys))
        if not ids:
            return 0

        def mark(cur: psycopg.Cursor[Any]) -> int:
            cur.execute("UPDATE swarm_inbox SET delivered_at = now() WHERE team = %s AND agent = %s "
                        "AND msg_id = ANY(%s) AND delivered_at IS NULL", (self.team, agent, ids))
            return int(cur.rowcount)

        return self.db.run(mark, idempotent=True, what=f"acknowledge {agent}'s messages in")

    def _entries(self, agent: str, docs: list[Any]) -> list[InboxEntry]:
        return _INBOX.decode(docs, Path(f"{self.db.shown}#inbox={self.team}/{agent}"))

    def watcher(self, agent: str) -> ChangeWatcher:
        name = channel(self.team, agent)
        return relayed_watcher(self.relay, name, lambda: NotifyWatcher(self.db, name))
