"""A resumed lead takes its team back: live teammates are adopted, the others started again from their transcripts.

``swarm run --resume ID`` finds the team the session led (the session's
``team`` events, ``LeadTeam.on_team``) and, once the person confirms (or
``--resume-team``), ``resume_team``: this process becomes the team's lead
(``record_lead``: teammates watch it), every teammate still running stays as
it is, and every one that is gone — shut down, died, or stopped when its
lead died — is started again as it was spawned (its record,
``swarm.runtime.restart_policy``): same name, worktree and branch, no new
first task (it goes on from its transcript and its inbox), its released
tasks its own again. What teammates sent the lead meanwhile waits in the
lead's inbox and is read as soon as the lead follows the team again.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from pydantic import ValidationError

from swarm.core.home import Home
from swarm.core.names import LEAD_NAME
from swarm.core.tasks import TaskStore
from swarm.core.teams import TeamStore
from swarm.errors import SwarmError
from swarm.runtime.lead_process import record_lead
from swarm.runtime.member_kinds import Machine, member_kind, reap_dead
from swarm.runtime.hosts.place import place_again
from swarm.runtime.restart_policy import end_policies, read_record, record_file
from swarm.runtime.spawn import SpawnRequest, spawn_reporting, wait_joined

log = logging.getLogger(__name__)


@dataclass
class Resumed:
    team: str
    adopted: list[str] = field(default_factory=list)
    restarted: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    """Teammates that could not be started again, and why."""

    def line(self) -> str:
        parts = [f"resumed team {self.team}"]
        if self.adopted:
            parts.append(f"still running: {', '.join(self.adopted)}")
        if self.restarted:
            parts.append(f"started again from their transcripts: {', '.join(self.restarted)}")
        parts += [f"{name} not started again: {why}" for name, why in self.failed.items()]
        return "; ".join(parts)


def team_of_session(events: list[dict[str, object]], home: Home) -> str | None:
    """The team a session led last (its last ``team`` event), if it still exists."""
    team = events[-1].get("team") if events else None
    return team if isinstance(team, str) and TeamStore(home).exists(team) else None


def resume_team(home: Home, team: str, env: Mapping[str, str]) -> Resumed:
    """Lead ``team`` from this process again; adopt the running teammates, start the gone ones again."""
    record_lead(home, team)
    end_policies(home, team, down=False)
    reap_dead(home, team)
    result = Resumed(team)
    machine = Machine({}, home)
    for member in TeamStore(home).get(team).members:
        if member.name == LEAD_NAME:
            continue
        if member_kind(member, machine).running():
            result.adopted.append(member.name)
            continue
        record = read_record(record_file(home, team, member.name).read())
        if record is None:
            result.failed[member.name] = "no record of how it was started"
            continue
        try:
            if record.placed is not None:  # a teammate on a host: placed again there (or on a host with its labels)
                place_again(home, team, member.name, record.placed)
            else:
                spawn_reporting(home, SpawnRequest.model_validate(record.request), env, again=member)
                TaskStore(home, team).give_back(member.name)
            result.restarted.append(member.name)
        except (SwarmError, OSError, ValidationError) as exc:
            log.error("teammate not resumed", extra={"team": team, "agent": member.name, "error": str(exc)})
            result.failed[member.name] = str(exc)
    if result.restarted:
        wait_joined(home, team, result.restarted)
    return result
