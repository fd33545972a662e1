"""A teammate's restart policy, as docker compose has them, and what its restarts so far were.

``restart = "no" | "on-failure" | "always"`` and ``max_restarts = N`` (a team
file's member, ``swarm spawn --restart --max-restarts``). Every swarm
teammate spawned gets a record (``Home.restart_path``): how it was spawned,
its policy and its restarts so far. Whoever coordinates the team reads the
records and starts it again when its policy says so
(``swarm.runtime.restart``); a resumed lead starts every teammate of its
team again from them (``swarm.runtime.team_resume``). A team going down
(``stop_team``) marks every record ``down``: no policy restarts anyone
after that, but the record stays for a resume.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from swarm.core.document_codecs import ObjectCodec
from swarm.core.home import Home
from swarm.core.jsonfile import LockedJsonFile

RestartPolicy = Literal["no", "on-failure", "always"]
RESTART_POLICIES: tuple[RestartPolicy, ...] = ("no", "on-failure", "always")
DEFAULT_MAX_RESTARTS = 3
FIRST_BACKOFF = 1.0
"""Seconds between a teammate's end and its first restart; doubled for each further one."""
MAX_BACKOFF = 30.0


class RestartRecord(BaseModel):
    policy: RestartPolicy
    max_restarts: int = Field(ge=0)
    request: dict[str, Any]
    """How it was spawned (a ``SpawnRequest``); started again the same way, in its own worktree."""
    placed: dict[str, Any] | None = None
    """For a teammate on a host: how it was placed (``runtime.hosts.place.Placement``); placed again the same way
    (same host or labels, a new epoch) instead of ``request``."""
    restarts: int = 0
    handled: int | None = None
    """``joinedAt`` of the process whose end was dealt with last (restarted, given up on, or not a failure)."""
    due: float | None = None
    """Epoch seconds the pending restart may start (the backoff)."""
    down: bool = False
    """The team went down (``end_policies``): nobody is restarted by policy until a resume."""

    def wants(self, status: str | None) -> bool:
        """Whether an end with ``status`` calls for a restart under this policy."""
        if self.policy == "no" or self.down:
            return False
        return status == "dead" or (self.policy == "always" and status == "stopped")


def backoff(restarts: int) -> float:
    """Seconds before restart number ``restarts + 1``."""
    return min(MAX_BACKOFF, FIRST_BACKOFF * 2.0 ** restarts)


def record_file(home: Home, team: str, name: str) -> LockedJsonFile[dict[str, Any]]:
    return LockedJsonFile(home.restart_path(team, name), ObjectCodec(), indent=2)


def save_policy(home: Home, team: str, name: str, policy: RestartPolicy, max_restarts: int,
                request: dict[str, Any], placed: dict[str, Any] | None = None) -> None:
    """A new record for a teammate just spawned or placed (an earlier one of the same name is replaced)."""
    record = RestartRecord(policy=policy, max_restarts=max_restarts, request=request, placed=placed)

    def put(doc: dict[str, Any]) -> None:
        doc.clear()
        doc.update(record.model_dump(mode="json"))

    record_file(home, team, name).update(put)


def read_record(doc: dict[str, Any]) -> RestartRecord | None:
    try:
        return RestartRecord.model_validate(doc)
    except ValidationError:
        return None


def end_policies(home: Home, team: str, *, down: bool = True) -> None:
    """The team is going down: no policy starts anyone of it again (``down=False``: a resume lifts that)."""
    folder = home.restarts_dir(team)
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        record_file(home, team, path.stem).update(lambda doc: doc.update(down=down))
