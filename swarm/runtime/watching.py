"""Following a teammate's live events from outside it: ``swarm logs -f``, the session's teammate view, ``swarm top``.

A teammate writes its events to ``<team>/events/<name>.jsonl``
(``agent/live_events.py``); a follower reads what is kept (``--since``,
``--tail``), then blocks on the events file (``core/watch.py``: inotify,
no polling timer) and hands each new event on, until it is told to stop or the
teammate is gone.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from swarm.agent.live_events import EventReader, LiveEvent
from swarm.core.clock import iso_to_epoch
from swarm.core.home import Home, ensure_dir
from swarm.core.watch import watch_file
from swarm.errors import UsageError

FOLLOW_WAIT = 1.0
"""Seconds a follower blocks per wait (a change wakes it at once); how soon it sees ``stop``."""
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)([smhd])$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def since_epoch(text: str, now: float | None = None) -> float:
    """``--since``: a duration back from now (``90s``, ``5m``, ``2h``, ``1d``) or an ISO time, as epoch seconds."""
    found = _DURATION.match(text.strip())
    if found:
        return (time.time() if now is None else now) - float(found.group(1)) * _UNITS[found.group(2)]
    stamp = iso_to_epoch(text.strip())
    if stamp is None:
        raise UsageError(f"--since {text!r} is neither a duration (30s, 5m, 2h, 1d) nor an ISO time "
                         "(2026-01-31T12:00:00Z)")
    return stamp


@dataclass(frozen=True)
class Window:
    """Which of the kept events to show first: those at or after ``since`` (epoch s), the last ``tail``."""

    since: float | None = None
    tail: int | None = None

    def pick(self, events: list[LiveEvent]) -> list[LiveEvent]:
        shown = [e for e in events if e.type != "text_delta"]
        if self.since is not None:
            shown = [e for e in shown if (iso_to_epoch(e.ts) or 0.0) >= self.since]
        if self.tail is not None:
            shown = shown[-self.tail:] if self.tail else []
        return shown


def follow(home: Home, team: str, name: str, show: Callable[[LiveEvent], None], *, window: Window = Window(),
           follow_on: bool = True, stop: threading.Event | None = None,
           until_gone: bool = True) -> None:
    """Show the kept events ``window`` picks, then (``follow_on``) each new one as it is written.

    Ends when ``stop`` is set, or (``until_gone``) after the teammate's ``gone`` state.
    """
    path = home.events_path(team, name)
    reader = EventReader(path)
    try:
        kept = reader.history()
        for event in window.pick(kept):
            show(event)
        if not follow_on or (until_gone and _gone(kept)):
            return
        ensure_dir(path.parent)
        watcher = watch_file(path, appended=True)  # appended in place; not woken by the other teammates' events
        try:
            while stop is None or not stop.is_set():
                fresh = reader.read()
                for event in fresh:
                    show(event)
                if until_gone and _gone(fresh):
                    return
                watcher.wait(FOLLOW_WAIT)
        finally:
            watcher.close()
    finally:
        reader.close()


def _gone(events: list[LiveEvent]) -> bool:
    """The last state among ``events`` says the teammate ended (a later process would say idle again)."""
    states = [e.state for e in events if e.type == "state"]
    return bool(states) and states[-1] == "gone"
