"""Teammates started again by their restart policy (``swarm.runtime.restart_policy``), with backoff.

``restart_ended`` runs wherever the team is coordinated, after dead
teammates are noticed (``LeadPump.pump``: ``swarm up``, ``swarm run``). For
each teammate with a policy whose last process ended in a way the policy
restarts (``dead`` for ``on-failure``; also ``stopped`` for ``always``; never
``killed``, a stop a person forced) it waits out the backoff, then starts it
again as it was spawned: same name, worktree and branch, no new initial
prompt — it goes on from its transcript (a turn cut short is continued) and
the messages waiting in its inbox — and the tasks it held, released at its
death, are its own again. The lead is told once per restart, and once when
``max_restarts`` is used up. Each end is dealt with once, under the record's
lock, however many coordinators look.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.names import LEAD_NAME, RUNTIME_NAME
from swarm.core.protocol import Member
from swarm.core.tasks import TaskStore
from swarm.core.teams import TeamStore
from swarm.errors import SwarmError
from swarm.runtime.hosts.place import place_again
from swarm.runtime.restart_policy import RestartRecord, backoff, read_record, record_file
from swarm.runtime.spawn import SpawnRequest, spawn_reporting

log = logging.getLogger(__name__)


def restart_ended(home: Home, team: str, env: Mapping[str, str]) -> list[str]:
    """Start again each teammate of ``team`` whose policy calls for it now; the names started."""
    folder = home.restarts_dir(team)
    if not folder.is_dir():
        return []
    started = []
    members = {m.name: m for m in TeamStore(home).get(team).members}
    for path in sorted(folder.glob("*.json")):
        member = members.get(path.stem)
        if member is None or member.present() or member.status in (None, "starting"):
            continue
        seen = read_record(record_file(home, team, member.name).read(quiet=True))  # lock-free: the usual answer
        if seen is None or seen.handled == member.joined_at:
            continue
        record = _decide(home, team, member)
        if record is not None and _start_again(home, team, member, record, env):
            started.append(member.name)
    return started


def _decide(home: Home, team: str, member: Member) -> RestartRecord | None:
    """Under the record's lock: the record to restart ``member`` with now, or None (not yet, not at all)."""
    now = time.time()

    def step(doc: dict[str, Any]) -> tuple[dict[str, Any], tuple[RestartRecord | None, str | None]]:
        record = read_record(doc)
        if record is None or record.handled == member.joined_at:
            return doc, (None, None)
        if not record.wants(member.status):
            record.handled = member.joined_at
            return record.model_dump(mode="json"), (None, None)
        if record.restarts >= record.max_restarts:
            record.handled, record.due = member.joined_at, None
            return record.model_dump(mode="json"), (None, _gave_up(member, record))
        if record.due is None:
            record.due = now + backoff(record.restarts)
            return record.model_dump(mode="json"), (None, None)
        if now < record.due:
            return doc, (None, None)
        record.restarts, record.handled, record.due = record.restarts + 1, member.joined_at, None
        return record.model_dump(mode="json"), (record, None)

    record, notice = record_file(home, team, member.name).transform(step)
    if notice is not None:
        _tell_lead(home, team, notice, "restarts used up")
    return record


def _start_again(home: Home, team: str, member: Member, record: RestartRecord, env: Mapping[str, str]) -> bool:
    try:
        if record.placed is not None:  # a teammate on a host: placed again, a new epoch (its old process fences)
            placed = place_again(home, team, member.name, record.placed)
            _tell_lead(home, team, f"{member.name} {_how(member)} and was placed again on host {placed.host} "
                                   f"(restart {record.restarts} of {record.max_restarts}, policy {record.policy}): it "
                                   "starts from its prompt and its pushed branch; its tasks stay released",
                       "teammate restarted")
            return True
        request = SpawnRequest.model_validate(record.request)
        spawn_reporting(home, request, env, again=member)
        kept = TaskStore(home, team).give_back(member.name)
    except (SwarmError, OSError, ValidationError) as exc:
        log.error("restart failed", extra={"team": team, "agent": member.name, "error": str(exc)})
        _tell_lead(home, team, f"{member.name} {_how(member)} and could not be started again "
                               f"(restart {record.restarts} of {record.max_restarts}): {exc}", "restart failed")
        return False
    tasks = f"; it keeps task {', '.join(t.id for t in kept)}" if kept else ""
    _tell_lead(home, team, f"{member.name} {_how(member)} and was started again (restart {record.restarts} of "
                           f"{record.max_restarts}, policy {record.policy}): it goes on from its transcript{tasks}",
               "teammate restarted")
    return True


def _gave_up(member: Member, record: RestartRecord) -> str:
    return (f"{member.name} {_how(member)} again and is not restarted: its {record.max_restarts} restart(s) "
            f"(max_restarts) are used up; start it again yourself or give its work to someone else")


def _how(member: Member) -> str:
    return "died" if member.status == "dead" else "stopped"


def _tell_lead(home: Home, team: str, text: str, summary: str) -> None:
    log.info("restart notice", extra={"team": team, "detail": text})
    Mailbox(home, team).send(LEAD_NAME, text, sender=RUNTIME_NAME, summary=summary)
