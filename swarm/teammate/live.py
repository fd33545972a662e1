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

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from swarm.agent.live_events import EventLog, LiveEvent
from swarm.agent.narration import Narrator
from swarm.core.home import Home
from swarm.models.messages import Usage
from swarm.models.team_gate import read_spend, spend_path
from swarm.teammate.pane import PaneWriter



class TeammateLive:
    def __init__(self, home: Home, team: str, name: str, cwd: Path, pane: PaneWriter | None) -> None:
        self.log = EventLog(home.events_path(team, name))
        self.spend = spend_path(home.gate_dir(team), name)
        """This teammate's line in the team's ledger (``spent``)."""
        self.pane = pane
        self.narrator = Narrator(cwd, self.emit)
        self.name = name
        self._spent_before_turn = 0.0
        self._spent_at_turn_end: float | None = None
        self._task: str | None = None
        self._lock = threading.Lock()
        self._held: list[LiveEvent] | None = None

    def emit(self, event: LiveEvent) -> None:
        with self._lock:
            if self._held is not None:
                self._held.append(event.stamped())
                return
        self._show(event)

    @contextmanager
    def held(self) -> Iterator[None]:
        """Events emitted inside the block are shown when it ends, in order, stamped when they were emitted:
        the end of a turn is told to the view after the lead, so the lead's notice is not kept waiting.
        Inside another ``held`` block, the outer one shows them."""
        with self._lock:
            if self._held is not None:
                outer = True
            else:
                outer, self._held = False, []
        if outer:
            yield
            return
        try:
            yield
        finally:
            with self._lock:
                held, self._held = self._held or [], None
            for event in held:
                self._show(event)

    def _show(self, event: LiveEvent) -> None:
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
        spent, self._spent_at_turn_end = self._spent_at_turn_end, None  # an idle right after a turn's end: the same
        if spent is None or state != "idle":
            spent = self.spent()
        if state == "busy":
            self._spent_before_turn = spent
        self.emit(LiveEvent(type="state", state=state, tokens=usage.total, cost_usd=spent or None))

    def turn_end(self, stop_reason: str, usage: Usage, detail: str = "") -> None:
        self._spent_at_turn_end = self.spent()
        turn = self._spent_at_turn_end - self._spent_before_turn
        self.emit(LiveEvent(type="turn_end", stop_reason=stop_reason, tokens=usage.total,
                            cost_usd=round(turn, 6) if turn > 0 else None, text=detail or None))

    def spent(self) -> float:
        """US dollars this teammate has spent so far, from the team's ledger (``models/team_gate.py``: every
        call it and its subagents made, earlier processes of it included) — the figure ``swarm status`` and
        ``swarm top`` show, never one of its own."""
        return round(read_spend(self.spend).usd, 6)

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
