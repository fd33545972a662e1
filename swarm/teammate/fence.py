"""Fencing: a teammate on a host that was declared dead stops itself before doing anything else.

A host that stops heartbeating (killed, partitioned, SIGSTOPped) has its
teammates marked ``dead`` by the lead's side, their tasks released and
possibly re-done elsewhere (``runtime.member_kinds.RemoteTeammate``). If
that teammate's process comes back (the partition heals, SIGCONT), it must
not go on: ``Fence.check`` — before each inbox read of its loop and before
each tool call — reads its entry and ends the process at once (exit
``FENCED_EXIT``, nothing written, nothing sent) when the entry is no longer
its own: gone, another process's (``procToken``), another placement's
(``epoch``), or marked ``dead``/``killed``. Only a teammate placed on a host
(its entry has an ``epoch``) is fenced: a local teammate's liveness is judged
by its pid, which a pause does not change.
"""

from __future__ import annotations

import logging
import os

from swarm.core.protocol import Member
from swarm.core.teams import TeamStore

log = logging.getLogger(__name__)

FENCED_EXIT = 75
FENCED_STATUSES = ("dead", "killed")


class Fence:
    def __init__(self, teams: TeamStore, team: str, name: str, token: str | None) -> None:
        self.teams = teams
        self.team = team
        self.name = name
        self.token = token
        entry = teams.get(team).member(name)
        self.epoch = entry.epoch if entry is not None else None

    @property
    def placed(self) -> bool:
        """This teammate was placed on a host (``swarm host serve``): fenced, and judged by its host's heartbeat."""
        return self.epoch is not None

    def fenced(self, entry: Member | None) -> str | None:
        """Why ``entry`` says this process must stop (None: it may go on)."""
        if self.epoch is None:
            return None
        if entry is None:
            return "its entry was removed"
        if entry.proc_token != self.token or entry.epoch != self.epoch:
            return "it was placed again since"
        if entry.status in FENCED_STATUSES:
            return f"it was declared {entry.status}"
        return None

    def check(self) -> None:
        """End this process now if it was fenced off; else nothing."""
        if self.epoch is None:
            return
        why = self.fenced(self.teams.get(self.team).member(self.name))
        if why is not None:
            log.error("fenced: %s; stopping before doing anything else", why)
            logging.shutdown()
            os._exit(FENCED_EXIT)
