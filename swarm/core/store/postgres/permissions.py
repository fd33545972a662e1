"""A team's permission and plan record as rows of ``swarm_permissions`` (one event a row, in order).

A decision is made under a per-team advisory lock in one transaction with
the check that none was recorded before it and with the answer's delivery
(the response frame's row is inserted on the same connection, so the
answer and its record commit together or not at all): a request is
answered exactly once.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import psycopg

    from swarm.core.store.postgres.database import Database

R = TypeVar("R")


def _lock_key(team: str) -> int:
    """A signed 64-bit advisory lock key for ``team``'s decisions."""
    return int.from_bytes(hashlib.sha256(f"swarm-permissions\0{team}".encode()).digest()[:8], "big", signed=True)


class PermissionRows:
    """The permission record of one team in one database."""

    def __init__(self, db: Database, team: str) -> None:
        self.db = db
        self.team = team

    def append(self, record: dict[str, Any]) -> None:
        from psycopg.types.json import Jsonb

        def insert(cur: psycopg.Cursor[Any]) -> None:
            cur.execute("INSERT INTO swarm_permissions (team, event) VALUES (%s, %s)", (self.team, Jsonb(record)))

        self.db.run(insert, idempotent=False, what="record a permission event in")

    def records(self) -> list[dict[str, Any]]:
        def read(cur: psycopg.Cursor[Any]) -> list[dict[str, Any]]:
            cur.execute("SELECT event FROM swarm_permissions WHERE team = %s ORDER BY id", (self.team,))
            return [row[0] for row in cur.fetchall()]

        return self.db.run(read, idempotent=True, what="read the permission record in")

    def exclusive(self, body: Callable[[], R]) -> R:
        """Run ``body`` (which reads and writes through this database) holding the team's decision lock, all in
        one transaction."""
        def run(cur: psycopg.Cursor[Any]) -> R:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (_lock_key(self.team),))
            return body()

        return self.db.run(run, idempotent=False, what="record a decision in")
