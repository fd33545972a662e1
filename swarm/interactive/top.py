"""``swarm top``: the team as a live full-screen table, redrawn when its files change (no polling timer).

One row per teammate — state, task, last action, tokens, cost, open
requests — under the team's cost against its budget (costs: the team ledger,
``runtime/costs.py``, as in ``swarm status``). Keys: ↑/↓ (or k/j) choose a member; Enter opens its live view (its
events, drawn as in its pane; Esc or Enter goes back); ``a`` approves its
oldest open request and ``d`` denies it (as the person); ``s`` asks it to
shut down (forced after the timeout); ``q`` or Ctrl-C leaves. Works over ssh:
it is prompt_toolkit on the terminal it runs in. Every text a teammate or its
model wrote is shown escaped (``core/text.py``).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from prompt_toolkit.application import Application
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.layout import HSplit, Layout, Window
from prompt_toolkit.layout.controls import FormattedTextControl

from swarm.agent.live_render import lines
from swarm.core.home import Home
from swarm.core.permlog import PermissionEvent
from swarm.core.text import flat, for_terminal, visible
from swarm.errors import SwarmError
from swarm.interactive.view import STYLE
from swarm.runtime import permission_desk
from swarm.runtime.costs import usd
from swarm.runtime.overview import MemberLine, TeamOverview
from swarm.runtime.shutdown import shutdown

WAKE = 1.0
"""Seconds the watcher blocks per wait (a change wakes it at once); how soon it notices ``q``."""
STOP_TIMEOUT = 10.0
HEADERS = ("name", "state", "task", "last action", "tokens", "cost", "requests")


class Top:
    def __init__(self, home: Home, team: str, env: Mapping[str, str]) -> None:
        self.home = home
        self.team = team
        self.env = env
        self.overview = TeamOverview(home, team, env)
        self.rows: list[MemberLine] = []
        self.cost_line = ""
        self.selected = 0
        self.viewing: str | None = None
        """The member whose live view is open, if any."""
        self.note = ""
        self._done = threading.Event()
        self._lock = threading.Lock()
        self.app: Application[None] = Application(
            layout=Layout(HSplit([Window(FormattedTextControl(self._body), wrap_lines=False),
                                  Window(FormattedTextControl(self._footer), height=2)])),
            key_bindings=self._keys(), full_screen=True, style=STYLE, refresh_interval=None)

    def run(self) -> None:
        self.refresh()
        watcher = threading.Thread(target=self._watch, name="top-watch", daemon=True)
        watcher.start()
        try:
            self.app.run()
        finally:
            self._done.set()
            watcher.join(timeout=WAKE * 2)
            self.overview.close()

    def _watch(self) -> None:
        while not self._done.is_set():
            if self.overview.wait(WAKE):
                self.refresh()
                self.app.invalidate()

    def refresh(self) -> None:
        try:
            rows = self.overview.rows()
            cost = self.overview.cost().line()
        except SwarmError as exc:
            self.note = str(exc)
            return
        with self._lock:
            self.rows = rows
            self.cost_line = cost
            self.selected = min(self.selected, max(0, len(rows) - 1))

    # -- drawing -----------------------------------------------------------------------

    def _body(self) -> FormattedText:
        if self.viewing is not None:
            return self._live(self.viewing)
        with self._lock:
            rows, selected, cost = list(self.rows), self.selected, self.cost_line
        cells = [[visible(c) for c in _cells(row)] for row in rows]
        widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(HEADERS)]
        out: list[tuple[str, str]] = [("class:dim", f"team {visible(self.team)} — {len(rows)} teammates — "
                                                   f"team cost: {visible(cost)}\n"),
                                      ("bold", "  ".join(h.upper().ljust(w) for h, w in zip(HEADERS, widths)) + "\n")]
        for number, (row, line) in enumerate(zip(rows, cells)):
            style = "reverse" if number == selected else ("class:question" if row.requests else "")
            out.append((style, "  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() + "\n"))
        if not rows:
            out.append(("class:note", "no teammates yet\n"))
        return FormattedText(out)

    def _live(self, name: str) -> FormattedText:
        """The member's events as its pane draws them, the last screenful."""
        height = max(5, self.app.output.get_size().rows - 4)
        drawn = [[(style, for_terminal(text)) for style, text in line] + [("", "\n")]
                 for event in self.overview.events(name) for line in lines(event)]
        rows = 0
        kept: list[list[tuple[str, str]]] = []
        for line in reversed(drawn):
            rows += "".join(text for _, text in line).count("\n")
            if rows > height:
                break
            kept.append(line)
        out: list[tuple[str, str]] = [("bold", f"{visible(name)} — live (Esc: back)\n")]
        for line in reversed(kept):
            out.extend(line)
        return FormattedText(out)

    def _footer(self) -> FormattedText:
        keys = ("Esc back  a approve  d deny  s stop  q quit" if self.viewing else
                "↑/↓ choose  Enter live view  a approve  d deny  s stop  q quit")
        return FormattedText([("class:note", visible(self.note) + "\n"), ("class:dim", keys)])

    # -- keys ---------------------------------------------------------------------------

    def _keys(self) -> KeyBindings:
        keys = KeyBindings()

        @keys.add("up")
        @keys.add("k")
        def _up(event: KeyPressEvent) -> None:
            self.selected = max(0, self.selected - 1)

        @keys.add("down")
        @keys.add("j")
        def _down(event: KeyPressEvent) -> None:
            self.selected = min(max(0, len(self.rows) - 1), self.selected + 1)

        @keys.add("enter")
        def _open(event: KeyPressEvent) -> None:
            member = self._chosen()
            self.viewing = None if self.viewing is not None or member is None else member.name

        @keys.add("escape", eager=True)
        def _back(event: KeyPressEvent) -> None:
            self.viewing = None

        @keys.add("a")
        def _approve(event: KeyPressEvent) -> None:
            self._answer(approve=True)

        @keys.add("d")
        def _deny(event: KeyPressEvent) -> None:
            self._answer(approve=False)

        @keys.add("s")
        def _stop(event: KeyPressEvent) -> None:
            member = self._chosen()
            if member is None:
                return
            self.note = f"asking {member.name} to shut down…"
            threading.Thread(target=self._stop, args=(member.name,), daemon=True).start()

        @keys.add("q")
        @keys.add("c-c")
        def _quit(event: KeyPressEvent) -> None:
            event.app.exit()

        return keys

    def _chosen(self) -> MemberLine | None:
        with self._lock:
            if self.viewing is not None:
                return next((r for r in self.rows if r.name == self.viewing), None)
            return self.rows[self.selected] if 0 <= self.selected < len(self.rows) else None

    def _answer(self, *, approve: bool) -> None:
        member = self._chosen()
        request: PermissionEvent | None = member.requests[0] if member and member.requests else None
        if member is None or request is None:
            self.note = "no open request for this teammate"
            return
        try:
            if request.kind == "plan":
                permission_desk.answer_plan(self.home, self.team, request.request_id, approved=approve, by="person")
            elif approve:
                permission_desk.approve(self.home, self.team, request.request_id, by="person")
            else:
                permission_desk.deny(self.home, self.team, request.request_id, by="person",
                                     reason="denied from swarm top")
        except SwarmError as exc:
            self.note = f"not answered: {exc}"
            return
        self.note = f"{'approved' if approve else 'denied'} {member.name}'s {request.kind} request {request.request_id}"

    def _stop(self, name: str) -> None:
        try:
            [outcome] = shutdown(self.home, self.team, [name], self.env, reason="stopped from swarm top",
                                 timeout=STOP_TIMEOUT)
            self.note = f"{name}: {outcome.result}" + (f" ({outcome.detail})" if outcome.detail else "")
        except (SwarmError, ValueError) as exc:
            self.note = f"{name} not stopped: {exc}"
        self.refresh()
        self.app.invalidate()


def _cells(row: MemberLine) -> list[str]:
    waiting = ", ".join(f"{r.kind} {flat(r.description or r.tool or '', 30)}" for r in row.requests)
    return [row.name, row.state, row.task, row.last_action, f"{row.tokens:,}" if row.tokens else "",
            usd(row.cost_usd) if row.cost_usd else "", waiting]
