"""A team's file and its members' activity as rows: ``swarm_teams`` (one JSON document per team, the same
document ``config.json`` holds) and ``swarm_activity``.

A change reads the row ``FOR UPDATE`` (the file store's lock), runs the same
change ``TeamStore`` runs on the file, and writes the row back in the same
transaction: changes to one team are serialized, and a change that raises
writes nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from swarm.core.document_codecs import ActivityCodec, TeamCodec
from swarm.core.protocol import Activity, TeamFile
from swarm.core.store.postgres.listen import NotifyWatcher
from swarm.errors import CorruptFileError, NotFoundError

if TYPE_CHECKING:
    import psycopg

    from swarm.core.store.postgres.database import Database

R = TypeVar("R")
_TEAM = TeamCodec()
_ACTIVITY = ActivityCodec()


def _json(value: Any) -> Any:
    from psycopg.types.json import Jsonb

    return Jsonb(value)


class TeamRow:
    """One team's row, used by ``TeamStore`` where a file team uses its ``LockedJsonFile``."""

    def __init__(self, db: Database, team: str) -> None:
        self.db = db
        self.team = team
        self.channel = "swarm_team_" + hashlib.sha256(team.encode()).hexdigest()[:40]
        """NOTIFYed on every change to the team row or a member's activity (``watcher``)."""
        self.source = Path(f"{db.shown}#team={team}")

    def _decode(self, doc: Any) -> TeamFile:
        found = _TEAM.decode(doc, self.source)
        if found is None:
            raise CorruptFileError(f"team {self.team!r}: its row in {self.db.shown} does not hold a team; "
                                   f"`swarm team delete {self.team}`")
        return found

    def exists(self) -> bool:
        def look(cur: psycopg.Cursor[Any]) -> bool:
            cur.execute("SELECT 1 FROM swarm_teams WHERE team = %s", (self.team,))
            return cur.fetchone() is not None

        return self.db.run(look, idempotent=True, what=f"read team {self.team!r} from")

    def read(self) -> TeamFile | None:
        def look(cur: psycopg.Cursor[Any]) -> Any:
            cur.execute("SELECT doc FROM swarm_teams WHERE team = %s", (self.team,))
            row = cur.fetchone()
            return None if row is None else row[0]

        doc = self.db.run(look, idempotent=True, what=f"read team {self.team!r} from")
        return None if doc is None else self._decode(doc)

    def require(self) -> TeamFile:
        found = self.read()
        if found is None:
            raise NotFoundError(f"team {self.team!r} not found in {self.db.shown}; `swarm team list` shows the teams")
        return found

    def transform(self, step: Callable[[TeamFile | None], tuple[TeamFile | None, R]]) -> R:
        """Run ``step`` on the row as it is under its lock and write what it returns, in one transaction."""
        def change(cur: psycopg.Cursor[Any]) -> R:
            cur.execute("SELECT doc FROM swarm_teams WHERE team = %s FOR UPDATE", (self.team,))
            row = cur.fetchone()
            current = None if row is None else self._decode(row[0])
            new, result = step(current)
            if new is None:
                return result
            doc = _TEAM.encode(new)
            if row is None:
                cur.execute("INSERT INTO swarm_teams (team, doc) VALUES (%s, %s)", (self.team, _json(doc)))
                cur.execute("INSERT INTO swarm_task_lists (team) VALUES (%s) ON CONFLICT DO NOTHING", (self.team,))
            elif doc != row[0]:
                cur.execute("UPDATE swarm_teams SET doc = %s, version = version + 1 WHERE team = %s",
                            (_json(doc), self.team))
            else:
                return result
            cur.execute("SELECT pg_notify(%s, 'team')", (self.channel,))
            return result

        return self.db.run(change, idempotent=False, what=f"change team {self.team!r} in")

    def update(self, change: Callable[[TeamFile | None], R]) -> R:
        return self.transform(lambda value: (value, change(value)))

    def delete(self) -> None:
        """Remove the team and everything it has in the database."""
        def drop(cur: psycopg.Cursor[Any]) -> None:
            for table in ("swarm_teams", "swarm_activity", "swarm_inbox", "swarm_task_lists", "swarm_tasks",
                          "swarm_permissions"):
                cur.execute(f"DELETE FROM {table} WHERE team = %s", (self.team,))  # noqa: S608 - fixed names

        self.db.run(drop, idempotent=True, what=f"delete team {self.team!r} from")

    # -- activity --------------------------------------------------------------

    def set_activity(self, name: str, activity: Activity) -> None:
        doc = _ACTIVITY.encode(activity)

        def put(cur: psycopg.Cursor[Any]) -> None:
            cur.execute("INSERT INTO swarm_activity (team, agent, doc) VALUES (%s, %s, %s) "
                        "ON CONFLICT (team, agent) DO UPDATE SET doc = excluded.doc", (self.team, name, _json(doc)))
            cur.execute("SELECT pg_notify(%s, 'activity')", (self.channel,))

        self.db.run(put, idempotent=True, what=f"record {name}'s activity in")

    def watcher(self) -> NotifyWatcher:
        """Wakes on a change to the team or a member's activity."""
        return NotifyWatcher(self.db, self.channel)

    def activities(self) -> dict[str, Activity]:
        def look(cur: psycopg.Cursor[Any]) -> list[tuple[str, Any]]:
            cur.execute("SELECT agent, doc FROM swarm_activity WHERE team = %s", (self.team,))
            return cur.fetchall()

        found = {}
        for name, doc in self.db.run(look, idempotent=True, what=f"read activity of team {self.team!r} from"):
            activity = _ACTIVITY.decode(doc, self.source)
            if activity is not None:
                found[name] = activity
        return found
