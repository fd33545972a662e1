"""Hosts and spawn requests in the database: the rows ``swarm host serve`` and ``swarm spawn --host`` share.

A host is one row (``swarm_hosts``) it refreshes every few seconds
(``heartbeat_at``); a spawn request is one row (``swarm_spawn_requests``)
the lead inserts — with ``pg_notify`` on ``HOSTS_CHANNEL`` in the same
transaction — and a host takes (``pending`` -> ``taken``, ``FOR UPDATE SKIP
LOCKED``: two hosts never take the same row), then marks ``started``,
``refused`` (with the reason) or ``ended``; a request signed by a key the host does
not trust (yet) waits as ``untrusted`` (``park``), held by that host, until the host's
person trusts the key (``retake``) or the lead gives up (``withdraw``). ``swarm_spawn_accepted`` holds
every request id a host ever acted on: a replayed request (the same signed
document in a new row) cannot be accepted twice. Whether a request is
signed by a trusted key is the host's check (``swarm.runtime.hosts``), not
this module's.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

if TYPE_CHECKING:
    import psycopg

    from swarm.core.store.postgres.database import Database

HOSTS_CHANNEL = "swarm_hosts"
"""The NOTIFY channel hosts LISTEN on; the payload is the request's row id."""


class HostRow(BaseModel):
    name: str
    labels: list[str]
    max_teammates: int
    running: int
    heartbeat_age_s: float
    dead_after: float

    @property
    def lost(self) -> bool:
        return self.heartbeat_age_s > self.dead_after


class RequestRow(BaseModel):
    id: int
    team: str
    name: str
    host: str | None
    labels: list[str]
    doc: dict[str, Any]
    signature: str
    status: str
    taken_by: str | None = None
    reason: str | None = None


_REQUEST_COLUMNS = "id, team, name, host, labels, doc, signature, status, taken_by, reason"


def _request(row: tuple[Any, ...]) -> RequestRow:
    return RequestRow(id=row[0], team=row[1], name=row[2], host=row[3], labels=list(row[4] or []), doc=row[5],
                      signature=row[6], status=row[7], taken_by=row[8], reason=row[9])


class HostRows:
    """The hosts and spawn requests of one database."""

    def __init__(self, db: Database) -> None:
        self._db = db

    # -- hosts -----------------------------------------------------------------

    def register(self, name: str, labels: list[str], max_teammates: int, dead_after: float) -> None:
        """Insert or refresh host ``name`` (a restarted host takes its row again). ``dead_after``: seconds without
        a heartbeat after which its teammates count as dead (the host says, as it knows its heartbeat)."""

        def work(cur: psycopg.Cursor[Any]) -> None:
            cur.execute("INSERT INTO swarm_hosts (name, labels, max_teammates, dead_after) VALUES (%s, %s, %s, %s) "
                        "ON CONFLICT (name) DO UPDATE SET labels = EXCLUDED.labels, dead_after = EXCLUDED.dead_after, "
                        "max_teammates = EXCLUDED.max_teammates, started_at = now(), heartbeat_at = now()",
                        (name, labels, max_teammates, dead_after))

        self._db.run(work, idempotent=True, what=f"register host {name}")

    def heartbeat(self, name: str, running: int) -> None:
        def work(cur: psycopg.Cursor[Any]) -> None:
            cur.execute("UPDATE swarm_hosts SET heartbeat_at = now(), running = %s WHERE name = %s", (running, name))

        self._db.run(work, idempotent=True, what=f"heartbeat of host {name}")

    def lost(self, name: str) -> bool:
        """Host ``name`` has not heartbeated for its ``dead_after`` (by the database's clock), or is unknown."""

        def work(cur: psycopg.Cursor[Any]) -> bool:
            cur.execute("SELECT now() - heartbeat_at > make_interval(secs => dead_after) FROM swarm_hosts "
                        "WHERE name = %s", (name,))
            row = cur.fetchone()
            return row is None or bool(row[0])

        return self._db.run(work, idempotent=True, what=f"read host {name}")

    def hosts(self) -> list[HostRow]:
        def work(cur: psycopg.Cursor[Any]) -> list[HostRow]:
            cur.execute("SELECT name, labels, max_teammates, running, "
                        "extract(epoch FROM now() - heartbeat_at), dead_after FROM swarm_hosts ORDER BY name")
            return [HostRow(name=r[0], labels=list(r[1] or []), max_teammates=r[2], running=r[3],
                            heartbeat_age_s=float(r[4]), dead_after=float(r[5])) for r in cur.fetchall()]

        return self._db.run(work, idempotent=True, what="list hosts")

    # -- spawn requests ----------------------------------------------------------

    def submit(self, team: str, name: str, host: str | None, labels: list[str], doc: dict[str, Any],
               signature: str) -> int:
        """Insert a request and wake the hosts; its row id."""

        def work(cur: psycopg.Cursor[Any]) -> int:
            cur.execute("INSERT INTO swarm_spawn_requests (team, name, host, labels, doc, signature) "
                        "VALUES (%s, %s, %s, %s, %s, %s) RETURNING id",
                        (team, name, host, labels, json.dumps(doc), signature))
            row = cur.fetchone()
            assert row is not None
            cur.execute("SELECT pg_notify(%s, %s)", (HOSTS_CHANNEL, str(row[0])))
            return int(row[0])

        return self._db.run(work, idempotent=False, what=f"request a host for {name}")

    def take(self, host: str, labels: list[str], keys: list[str]) -> RequestRow | None:
        """The oldest pending request this host may take (addressed to it, or to labels it has and signed with one of
        the lead ``keys`` it trusts — their base64url public keys, the part after the ``.`` of a key line: a labels
        request waits for a host that trusts its key), now ``taken``.

        A request this host took and never settled comes first: a take whose commit was cut off (the
        outcome unknown) is taken again rather than left ``taken`` by nobody; ``accept_once`` still
        refuses one acted on before. That makes a take safe to repeat."""

        def work(cur: psycopg.Cursor[Any]) -> RequestRow | None:
            cur.execute(f"UPDATE swarm_spawn_requests SET status = 'taken', taken_by = %s, updated_at = now() "
                        f"WHERE id = (SELECT id FROM swarm_spawn_requests WHERE (status = 'taken' AND taken_by = %s) "
                        f"OR (status = 'pending' AND (host = %s OR (host IS NULL AND labels <@ %s "
                        f"AND split_part(doc->>'lead_verify_key', '.', 2) = ANY(%s)))) "
                        f"ORDER BY status = 'pending', id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING {_REQUEST_COLUMNS}",
                        (host, host, host, labels, keys))
            row = cur.fetchone()
            return None if row is None else _request(row)

        return self._db.run(work, idempotent=True, what=f"take a spawn request on {host}")

    def accept_once(self, request_id: str, host: str) -> bool:
        """Record that ``host`` acts on ``request_id``; False if any host did before (a replay)."""

        def work(cur: psycopg.Cursor[Any]) -> bool:
            cur.execute("INSERT INTO swarm_spawn_accepted (request_id, host) VALUES (%s, %s) "
                        "ON CONFLICT DO NOTHING RETURNING request_id", (request_id, host))
            return cur.fetchone() is not None

        return self._db.run(work, idempotent=False, what="record an accepted spawn request")

    def settle(self, row_id: int, status: str, reason: str | None = None) -> None:
        """Mark request ``row_id`` ``started``, ``refused`` or ``ended`` (with why)."""

        def work(cur: psycopg.Cursor[Any]) -> None:
            cur.execute("UPDATE swarm_spawn_requests SET status = %s, reason = %s, updated_at = now() WHERE id = %s",
                        (status, reason, row_id))

        self._db.run(work, idempotent=True, what=f"record spawn request {row_id}")

    def request(self, row_id: int) -> RequestRow | None:
        def work(cur: psycopg.Cursor[Any]) -> RequestRow | None:
            cur.execute(f"SELECT {_REQUEST_COLUMNS} FROM swarm_spawn_requests WHERE id = %s", (row_id,))
            row = cur.fetchone()
            return None if row is None else _request(row)

        return self._db.run(work, idempotent=True, what=f"read spawn request {row_id}")

    def withdraw(self, row_id: int, reason: str) -> bool:
        """Refuse request ``row_id`` if no host took it yet or it waits for trust (the lead gave up); False when a host
        acts on it."""

        def work(cur: psycopg.Cursor[Any]) -> bool:
            cur.execute("UPDATE swarm_spawn_requests SET status = 'withdrawn', reason = %s, updated_at = now() "
                        "WHERE id = %s AND status IN ('pending', 'untrusted') RETURNING id", (reason, row_id))
            return cur.fetchone() is not None

        return self._db.run(work, idempotent=True, what=f"withdraw spawn request {row_id}")

    def park(self, row_id: int, reason: str) -> None:
        """Request ``row_id`` (taken) waits on its host as ``untrusted``: its key is not trusted there yet."""

        def work(cur: psycopg.Cursor[Any]) -> None:
            cur.execute("UPDATE swarm_spawn_requests SET status = 'untrusted', reason = %s, updated_at = now() "
                        "WHERE id = %s AND status = 'taken'", (reason, row_id))

        self._db.run(work, idempotent=True, what=f"park spawn request {row_id}")

    def parked(self, host: str) -> list[int]:
        """The ids of the requests waiting on ``host`` for trust, oldest first."""

        def work(cur: psycopg.Cursor[Any]) -> list[int]:
            cur.execute("SELECT id FROM swarm_spawn_requests WHERE status = 'untrusted' AND taken_by = %s ORDER BY id",
                        (host,))
            return [int(row[0]) for row in cur.fetchall()]

        return self._db.run(work, idempotent=True, what=f"list waiting spawn requests on {host}")

    def retake(self, row_id: int, host: str) -> RequestRow | None:
        """Request ``row_id``, waiting on ``host`` for trust, ``taken`` again to be checked once more; None if the
        lead withdrew it meanwhile."""

        def work(cur: psycopg.Cursor[Any]) -> RequestRow | None:
            cur.execute(f"UPDATE swarm_spawn_requests SET status = 'taken', updated_at = now() WHERE id = %s "
                        f"AND status = 'untrusted' AND taken_by = %s RETURNING {_REQUEST_COLUMNS}", (row_id, host))
            row = cur.fetchone()
            return None if row is None else _request(row)

        return self._db.run(work, idempotent=False, what=f"take waiting spawn request {row_id}")
