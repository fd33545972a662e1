"""A teammate notices that the process leading its team is gone, and stops on its own.

A lead swarm started records its pid and create time in the team file
(``leadPid``, ``leadProcStart``: ``swarm.runtime.lead_process``). Killed with
``kill -9`` or crashed, it shuts nobody down; its teammates would wait
forever for a lead that never answers. ``LeadWatch`` runs one daemon thread
that waits for that process to end — on a pidfd where the kernel has them
(no polling at all), else a check every ``LEAD_CHECK`` seconds — and a
process with the lead's pid but another start time is a reused pid: the lead
is gone just the same. When it is, the thread sets ``gone`` and calls
``on_gone`` (the session ends its running turn after the current step); the
session's loop, which wakes at least every ``LEAD_CHECK`` seconds while a
lead is watched, then leaves as after an approved shutdown: the member is
marked ``stopped``, its unfinished tasks go back to the list, and its inbox
is left as it is.

Before giving up on a dead lead the record is read again: a lead that took
the team over since (a new ``swarm up`` of it) is watched instead. A team
with no lead process recorded (a person leads it from the CLI) is not
watched: its teammates run until they are stopped.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import threading
from collections.abc import Callable

from swarm.backends.procs import is_pid_alive
from swarm.core.protocol import TeamFile
from swarm.core.teams import TeamStore
from swarm.errors import SwarmError

log = logging.getLogger(__name__)

LEAD_CHECK = 2.0
"""Seconds between checks of the lead where no pidfd can be waited on; also how often an idle teammate
that watches a lead wakes to see whether it is gone."""


def lead_gone(team: TeamFile) -> bool:
    """The team records a lead process and it is gone (or its pid now runs another process): the one judgement."""
    return team.lead_pid is not None and not is_pid_alive(team.lead_pid, team.lead_proc_start)


class LeadWatch:
    """Watches the process leading ``team`` (if one is recorded) on a thread of its own."""

    def __init__(self, teams: TeamStore, team: str, on_gone: Callable[[], None] = lambda: None) -> None:
        self.teams = teams
        self.team = team
        self.on_gone = on_gone
        self.gone = threading.Event()
        """Set once the lead process is gone."""
        self.watching = False
        """A lead process is recorded and watched (the session's idle wait is bounded by ``LEAD_CHECK``)."""

    def start(self) -> None:
        """Start watching, if the team has a lead process; at once aware if it is already gone."""
        if self._lead() is None:
            return
        self.watching = True
        threading.Thread(target=self._watch, name="lead-watch", daemon=True).start()

    def _lead(self) -> TeamFile | None:
        """The team file, if it records a lead process."""
        try:
            team = self.teams.get(self.team)
        except SwarmError:  # the team was deleted: nothing left to lead
            return None
        return team if team.lead_pid is not None else None

    def _watch(self) -> None:
        while (team := self._lead()) is not None and team.lead_pid is not None:
            if lead_gone(team):
                log.warning("the team's lead process is gone; stopping", extra={"lead_pid": team.lead_pid})
                self.gone.set()
                self.on_gone()
                return
            _wait_exit(team.lead_pid, team.lead_proc_start)


def _wait_exit(pid: int, start: float | None) -> None:
    """Return once ``pid`` has ended (or ``LEAD_CHECK`` s passed, where the kernel offers no pidfd)."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):  # not Linux 5.3+, or gone already
        threading.Event().wait(LEAD_CHECK)
        return
    try:
        if is_pid_alive(pid, start):  # the pidfd is of the lead, not of a process that reused its pid since
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            poller.poll()  # readable once the process has exited
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)
