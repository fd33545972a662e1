"""One teammate's live events: told once, kept in its events file and drawn in its pane (or its log).

``TeammateLive`` is what the teammate's parts call while it works: its
conversation's observer and the provider's ``on_text`` go to the
``Narrator`` (``agent/narration.py``); the session, the gate and the
lifecycle tell it about arrivals, requests, answers, busy/idle with tokens and
cost, the task in progress and the end of each turn. Every event goes to
``<team>/events/<name>.jsonl`` (``agent/live_events.py``: what ``swarm logs -f``,
``swarm top`` and the session's teammate view read) and to the ``PaneWriter``.
Log lines never come here: they go to the teammate's log file.
"""

from __future__ import annotations

from pathlib import Path

from swarm.agent.live_events import EventLog, LiveEvent
from swarm.agent.narration import Narrator
from swarm.core.home import Home
from swarm.errors import SwarmError
from swarm.models.catalog import model_info
from swarm.models.messages import Usage
from swarm.teammate.pane import PaneWriter



class TeammateLive:
    def __init__(self, home: Home, team: str, name: str, cwd: Path, pane: PaneWriter | None) -> None:
        self.log = EventLog(home.events_path(team, name))
        self.pane = pane
        self.narrator = Narrator(cwd, self.emit)
        self.name = name
        self.model = ""
        """The model the teammate runs (for the cost; unknown models cost nothing shown)."""
        self._task: str | None = None

    def emit(self, event: LiveEvent) -> None:
        event = self.log.emit(event)
        if self.pane is not None:
            self.pane.show(event)
        if event.type == "tool_end" and event.tool == "TaskUpdate" and not event.is_error:
            self._task_changed(event.number)

    def say(self, kind: str, text: str) -> None:
        """A ``note`` or ``warning`` for the watcher."""
        self.emit(LiveEvent.model_validate({"type": kind, "text": text}))

    def arrived(self, sender: str, text: str) -> None:
        self.emit(LiveEvent(type="message", sender=sender, text=text))

    def state(self, state: str, usage: Usage) -> None:
        self.emit(LiveEvent(type="state", state=state, tokens=usage.total, cost_usd=self.cost(usage)))

    def turn_end(self, stop_reason: str, usage: Usage, detail: str = "") -> None:
        self.emit(LiveEvent(type="turn_end", stop_reason=stop_reason, tokens=usage.total,
                            cost_usd=self.cost(usage), text=detail or None))

    def cost(self, usage: Usage) -> float | None:
        """US dollars for ``usage`` at the teammate's model's prices (None when they are not known)."""
        try:
            price = model_info(self.model).price if self.model else None
        except SwarmError:
            return None
        return price.cost(usage) if price is not None else None

    def _task_changed(self, number: int | None) -> None:
        """A ``task`` event when TaskUpdate call ``number`` started or finished this teammate's task (from the
        call's own input: a turn reads no task list for the view)."""
        record = next((r for r in self.narrator.records() if r.number == number), None)
        status = record.input.get("status") if record is not None else None
        if record is None or status not in ("in_progress", "completed"):
            return
        task_id = str(record.input.get("taskId", ""))
        if status == "in_progress" and task_id != self._task:
            self._task = task_id
            self.emit(LiveEvent(type="task", task_id=task_id, text="in progress"))
        elif status == "completed" and task_id == self._task:
            self._task = None
            self.emit(LiveEvent(type="task", task_id=task_id, text="completed"))
