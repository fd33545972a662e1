"""The team at a glance, for ``swarm top``: each member's state, task, last action, tokens, cost and open requests.

A member's cost, and the team's, are the team ledger's (``runtime/costs.py``:
every call, subagents' and earlier processes' included), the same figures as
``swarm status`` — never one a teammate process computed from its own usage.

``TeamOverview`` keeps one ``EventReader`` per teammate, so each rebuild
reads only what the teammates appended since the last one, and a watcher on
the files that change any of it (the team file and permission record in the
team's directory, ``activity/``, ``events/``): ``wait`` returns when one of
them changed (``core/watch.py``, inotify; no polling timer).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from swarm.agent.live_events import EventReader, LiveEvent
from swarm.agent.live_render import lines, plain
from swarm.core.home import Home, ensure_dir
from swarm.core.names import LEAD_NAME
from swarm.core.permlog import PermissionEvent
from swarm.core.tasks import TaskStore
from swarm.core.text import flat
from swarm.core.watch import ChangeWatcher, watch_dirs
from swarm.errors import SwarmError
from swarm.runtime import permission_desk
from swarm.runtime.costs import TeamCost, ledger_dir, team_cost
from swarm.runtime.status import team_status

ACTION_WIDTH = 60
ACTIONS = ("tool_start", "tool_end", "text", "message", "request", "answered", "compaction", "you")
"""The events that count as a member's last action (not its state changes; a turn's end only if cut short)."""


@dataclass
class MemberLine:
    """One member's row."""

    name: str
    state: str
    task: str = ""
    last_action: str = ""
    tokens: int = 0
    cost_usd: float | None = None
    requests: list[PermissionEvent] = field(default_factory=list)


@dataclass
class _Seen:
    reader: EventReader
    last_action: str = ""
    events: list[LiveEvent] = field(default_factory=list)


class TeamOverview:
    """Rows for one team, rebuilt from its files; ``wait`` for the next change."""

    def __init__(self, home: Home, team: str, env: Mapping[str, str] | None = None) -> None:
        self.home = home
        self.team = team
        self.env = env
        self._seen: dict[str, _Seen] = {}
        directory = home.team_dir(team)
        self._watcher: ChangeWatcher = watch_dirs(directory, ensure_dir(directory / "activity"),
                                                  ensure_dir(ledger_dir(home, team)),
                                                  appended=(ensure_dir(directory / "events"),))

    def rows(self) -> list[MemberLine]:
        statuses = [s for s in team_status(self.home, self.team, self.env) if s.name != LEAD_NAME]
        try:
            tasks = TaskStore(self.home, self.team).list()
        except SwarmError:
            tasks = []
        waiting = permission_desk.pending(self.home, self.team)
        out = []
        for status in statuses:
            seen = self._follow(status.name)
            task = next((t for t in tasks if t.owner == status.name and t.status == "in_progress"), None)
            out.append(MemberLine(
                name=status.name, state=status.state, task=f"#{task.id} {flat(task.subject, 30)}" if task else "",
                last_action=seen.last_action, tokens=status.tokens, cost_usd=status.cost_usd,
                requests=[r for r in waiting if r.agent == status.name]))
        return out

    def cost(self) -> TeamCost:
        """The team's spend against its budget (the ledger's)."""
        return team_cost(self.home, self.team)

    def events(self, name: str) -> list[LiveEvent]:
        """Every event of ``name`` read so far (for its live view)."""
        return list(self._follow(name).events)

    def _follow(self, name: str) -> _Seen:
        seen = self._seen.get(name)
        if seen is None:
            seen = self._seen[name] = _Seen(EventReader(self.home.events_path(self.team, name)))
            fresh = seen.reader.history()
        else:
            fresh = seen.reader.read()
        for event in fresh:
            if event.type == "text_delta":
                continue
            seen.events.append(event)
            if event.type in ACTIONS or (event.type == "turn_end" and event.stop_reason not in ("end_turn", None)):
                seen.last_action = last_action(event) or seen.last_action
        del seen.events[:-500]  # the view keeps the latest; the file has the rest
        return seen

    def wait(self, timeout: float) -> bool:
        """Until one of the team's files changed (True), or ``timeout`` s."""
        return self._watcher.wait(timeout)

    def close(self) -> None:
        self._watcher.close()
        for seen in self._seen.values():
            seen.reader.close()


def last_action(event: LiveEvent) -> str:
    """``event`` on one short line: a text by its words, anything else by its first drawn line."""
    if event.type == "text":
        return flat(("◆ " if event.final else "● ") + (event.text or ""), ACTION_WIDTH)
    shown = lines(event)
    return flat(plain(shown[0]), ACTION_WIDTH) if shown else ""
