"""Which agent the session's main view shows: the lead (the default), or one teammate's live transcript.

``/view NAME`` (or Ctrl-T, to the next teammate and back to the lead)
switches the view to teammate NAME: its live events (``runtime/watching.py``,
woken by inotify) are drawn as in its pane, the lead's own events are held
meanwhile and shown when the view returns to the lead, and what the person
types goes to that teammate as the person's message — the same entry as
``swarm send`` or a line typed in its pane (``author: person``); Ctrl-C
interrupts that teammate's turn, not the lead's (``runtime/interrupt.py``: the
SIGINT its pane's Ctrl-C sends). ``/view`` alone goes back to the lead.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.names import LEAD_NAME
from swarm.core.teams import TeamStore
from swarm.errors import NotFoundError, SwarmError, UsageError
from swarm.interactive.view import View
from swarm.runtime.interrupt import interrupt_turn
from swarm.runtime.watching import Window, follow

BACKLOG = 30
"""Events of a teammate shown when the view switches to it (what it did just before)."""


class Focus:
    def __init__(self, home: Home, view: View, team: Callable[[], str | None],
                 on_change: Callable[[], None] = lambda: None) -> None:
        self.home = home
        self.view = view
        self.team = team
        self.on_change = on_change
        self.viewing: str | None = None
        """The teammate whose transcript the main view shows (None: the lead's)."""
        self._stop: threading.Event | None = None

    def show(self, name: str | None) -> None:
        """Switch the main view to teammate ``name``, or back to the lead (None)."""
        if name == self.viewing:
            return
        team = self.team()
        if name is not None:
            if team is None:
                raise UsageError("no team yet: there is no teammate to view")
            members = [m.name for m in TeamStore(self.home).get(team).members if m.name != LEAD_NAME]
            if name not in members:
                raise NotFoundError(f"no teammate {name!r} in team {team!r}"
                                    + (f"; teammates: {', '.join(members)}" if members else ""))
        self._end()
        self.viewing = name
        self.view.focus(name)
        if name is not None and team is not None:
            self.view.note(f"viewing {name}: what you type goes to {name}; /view (or Ctrl-T) goes back")
            stop = self._stop = threading.Event()
            threading.Thread(target=self._follow, args=(team, name, stop), name=f"view-{name}", daemon=True).start()
        self.on_change()

    def next(self) -> None:
        """The next teammate's view (Ctrl-T), after the last one the lead's."""
        team = self.team()
        names = [m.name for m in TeamStore(self.home).get(team).members if m.name != LEAD_NAME] if team else []
        if not names:
            self.view.note("no teammates to view yet")
            return
        at = names.index(self.viewing) + 1 if self.viewing in names else 0
        self.show(names[at] if at < len(names) else None)

    def tell(self, text: str) -> None:
        """What the person typed, to the viewed teammate, as the person's message."""
        team, name = self.team(), self.viewing
        if team is None or name is None:
            raise UsageError("no teammate is viewed")
        Mailbox(self.home, team).send(name, text, sender=LEAD_NAME, author="person")
        self.view.you(text)

    def interrupt(self) -> str:
        """Ctrl-C while a teammate is viewed: interrupt that teammate's turn (as Ctrl-C in its pane); what happened,
        for the person."""
        team, name = self.team(), self.viewing
        if team is None or name is None:
            raise UsageError("no teammate is viewed")
        try:
            if interrupt_turn(self.home, team, name):
                return f"interrupting {name}'s turn"
        except SwarmError as exc:
            return f"{name} not interrupted: {exc}"
        return f"{name} runs no turn to interrupt; /view (or Ctrl-T) goes back to the lead"

    def close(self) -> None:
        self._end()

    def _end(self) -> None:
        if self._stop is not None:
            self._stop.set()
            self._stop = None

    def _follow(self, team: str, name: str, stop: threading.Event) -> None:
        try:
            follow(self.home, team, name, lambda event: None if stop.is_set() else self.view.event(event, source=name),
                   window=Window(tail=BACKLOG), stop=stop, until_gone=False)
        except SwarmError as exc:
            self.view.warn(f"cannot follow {name}: {exc}")
