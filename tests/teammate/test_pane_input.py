"""A line typed in a teammate's pane (``swarm.teammate.pane_input``): shown, then sent as the person's message.

The echo comes first: the send wakes the teammate, whose turn may write its
first lines before the typing thread runs again, and the person's own line
must stand above them. Real home, real mailbox and events file.
"""

from __future__ import annotations

from pathlib import Path

from swarm.agent.live_events import EventReader, LiveEvent
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.protocol import Member
from swarm.core.teams import TeamStore
from swarm.errors import SwarmError
from swarm.teammate.live import TeammateLive
from swarm.teammate.pane_input import PaneInput


def _events(home: Home) -> list[LiveEvent]:
    return EventReader(home.events_path("t", "w")).history()


class _Sending(Mailbox):
    """The real mailbox; records which events were in the events file when a send began, or refuses it."""

    def __init__(self, home: Home, team: str, refuse: bool = False) -> None:
        super().__init__(home, team)
        self.refuse = refuse
        self.events_at_send: list[str] = []

    def send(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        self.events_at_send = [e.type for e in _events(self.home)]
        if self.refuse:
            raise SwarmError("the inbox is locked")
        return super().send(*args, **kwargs)


def _setup(tmp_path: Path, refuse: bool = False) -> tuple[Home, _Sending, PaneInput]:
    home = Home(tmp_path / "home")
    TeamStore(home).create("t")
    TeamStore(home).add_member("t", Member(agent_id="w@t", name="w", is_active=True))
    mailbox = _Sending(home, "t", refuse=refuse)
    return home, mailbox, PaneInput(mailbox, "w", TeammateLive(home, "t", "w", tmp_path, None))


def test_the_typed_line_is_shown_before_it_is_sent(tmp_path: Path) -> None:
    home, mailbox, pane = _setup(tmp_path)
    pane.typed("slow job alice")
    assert mailbox.events_at_send == ["you"]
    [entry] = mailbox.read("w")
    assert (entry.text, entry.author) == ("slow job alice", "person")


def test_a_line_that_could_not_be_sent_says_so_under_it(tmp_path: Path) -> None:
    home, mailbox, pane = _setup(tmp_path, refuse=True)
    pane.typed("deploy now")
    events = _events(home)
    assert [(e.type, e.text) for e in events] == [("you", "deploy now"), ("warning", "not sent: the inbox is locked")]
    assert mailbox.read("w") == []


def test_blank_lines_are_neither_shown_nor_sent(tmp_path: Path) -> None:
    home, mailbox, pane = _setup(tmp_path)
    pane.typed("   ")
    assert _events(home) == [] and mailbox.read("w") == []
