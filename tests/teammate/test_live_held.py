"""The end of a turn is told to the lead first, then to the view (``TeammateLive.held``).

Back to back, the lead's next message is waiting on the teammate's
``idle_notification``; the view's ``turn_end`` and ``idle`` events are not.
Events emitted inside ``held`` reach the events file and the pane only when
the block ends, in order, each stamped when it was emitted.
"""

from __future__ import annotations

import io
import time
from pathlib import Path

from swarm.agent.live_events import EventReader, LiveEvent
from swarm.core.clock import iso_to_epoch
from swarm.core.home import Home
from swarm.models.messages import Usage
from swarm.teammate.live import TeammateLive
from swarm.teammate.pane import PaneWriter


def _live(tmp_path: Path) -> tuple[TeammateLive, EventReader, io.StringIO]:
    home = Home(tmp_path / "home")
    pane = io.StringIO()
    live = TeammateLive(home, "crew", "w", tmp_path, PaneWriter(pane, terminal=False))
    return live, EventReader(home.events_path("crew", "w")), pane


def test_events_inside_held_are_shown_when_it_ends_in_order_stamped_when_emitted(tmp_path: Path) -> None:
    live, reader, pane = _live(tmp_path)
    seen_while_held: list[LiveEvent] = []
    with live.held():
        live.turn_end("end_turn", Usage(input_tokens=3, output_tokens=4))
        live.state("idle", Usage(input_tokens=3, output_tokens=4))
        emitted = time.time()
        time.sleep(0.05)
        seen_while_held = reader.read()
        pane_while_held = pane.getvalue()
    shown = reader.read()
    assert seen_while_held == [] and pane_while_held == ""  # nothing reached the view inside the block
    assert [e.type for e in shown] == ["turn_end", "state"]
    assert shown[1].state == "idle" and shown[0].tokens == 7
    assert all(abs((iso_to_epoch(e.ts) or 0) - emitted) < 0.03 for e in shown)  # not the time they were shown
    assert "turn done" in pane.getvalue() and "idle" in pane.getvalue()


def test_the_held_events_are_shown_even_when_the_block_fails(tmp_path: Path) -> None:
    live, reader, _ = _live(tmp_path)
    try:
        with live.held():
            live.say("warning", "about to fail")
            raise RuntimeError("the notice could not be sent")
    except RuntimeError:
        pass
    assert [(e.type, e.text) for e in reader.read()] == [("warning", "about to fail")]
    live.say("note", "after")  # and emitting goes straight through again
    assert [e.text for e in reader.read()] == ["after"]
