"""The session's main view switched to a teammate (``/view NAME``, Ctrl-T): its live transcript, typing to it."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fakes.anthropic_server import FakeAnthropicServer
from tests.interactive.conftest import EXITED, Screen
from tests.interactive.test_session import _lead_starts, _wait
from tests.teammate.conftest import teammate_pids

pytestmark = pytest.mark.usefixtures("served")  # teammates forked from the home's CLI server (tests.zygote)

ALICE = r"""
[[rules]]
name = "first"
on = "prompt"
match = 'Please get ready'
text = "alice is ready"

[[rules]]
name = "typed"
match = 'typed (?P<tok>\w+)'
text = "alice got typed {tok} \u001b]52;c;ZXZpbA==\u0007 \u001b]0;pwned\u0007"
"""


def _user_texts(screen: Screen, team: str, name: str) -> str:
    lines = [json.loads(line) for line in screen.home.transcript_path(team, name).read_text().splitlines()]
    return json.dumps([r["message"] for r in lines if r.get("kind") == "message" and r["message"]["role"] == "user"])


def _lead_prompts(api: FakeAnthropicServer) -> list[str]:
    """Every text the lead's model got as a user's text block (its prompts), stripped."""
    texts = []
    for request in api.requests:
        for message in request.body.get("messages", []):
            content = message["content"]
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
            texts += [b["text"].strip() for b in blocks if message["role"] == "user" and b.get("type") == "text"]
    return texts


def test_view_shows_a_teammates_live_transcript_typing_goes_to_it_and_the_lead_is_shown_after(
        start_chat: Callable[..., Screen], fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    alice = _lead_starts(fake_api, tmp_path, "alice", ALICE, prompt="Please get ready.", started="Alice is starting.",
                         answer="Lead noted alice.")
    screen = start_chat("--teammate-playbook", alice)
    screen.ready()
    screen.type("start a team")
    screen.wait_for("Lead noted alice.")  # alice's idle notice became a lead turn

    screen.type("/view alice")
    shown = screen.wait_for("view: alice — typing goes to alice")  # the status line says which view is active
    mark = shown.index("· viewing alice")  # what the view shows comes after its note (not after the status line:
    # that sits on the pane's last row, below blank rows the next lines fill)
    screen.wait_for("⇐ team-lead Please get ready.")  # alice's transcript, as her pane draws it
    screen.wait_for("alice is ready")
    screen.type("typed banana")
    shown = screen.wait_for("alice got typed banana", after=mark)
    assert "\\x1b]52;c;ZXZpbA==\\x07 \\x1b]0;pwned\\x07" in shown  # escaped in this view too
    assert "\x1b]52" not in screen.text(escapes=True)
    assert "typed banana" in _user_texts(screen, "crew", "alice")  # it went to alice, through her inbox...
    assert "typed banana" not in _lead_prompts(fake_api)  # ...not to the lead as its prompt

    # alice's idle after "typed banana" opens a lead turn while alice is viewed: wait until its answer is written
    # (its events are then held for the lead's view), or Ctrl-T could come first and show them live
    _wait(lambda: sum(p.read_text().count("Lead noted alice.") for p in screen.home.sessions_dir.glob("*.jsonl")) >= 2,
          "the lead's answer to alice's second idle notice")
    screen.key("C-t")  # the next view after alice (the only teammate): the lead's, with what it did meanwhile
    screen.wait_for("view: lead (Ctrl-T: a teammate's)")
    screen.wait_for("the lead meanwhile")
    screen.type("/view nobody")
    screen.wait_for("no teammate 'nobody' in team 'crew'; teammates: alice")
    screen.type("/exit")
    screen.wait_for(EXITED)
    assert teammate_pids(screen.home) == []


SLOW_ALICE = r"""
[[rules]]
name = "first"
on = "prompt"
match = 'Please get ready'
text = "alice is ready"

[[rules]]
name = "slow"
match = 'slow job (?P<tok>\w+)'
[[rules.steps]]
tool_calls = [{ name = "Bash", input = { command = "echo {tok} > slow-started.txt; sleep 60" } }]
[[rules.steps]]
text = "slow job done"

[[rules]]
name = "again"
match = 'after (?P<tok>\w+)'
text = "alice is back {tok}"
"""


def _events(screen: Screen, name: str) -> list[dict[str, object]]:
    path = screen.home.events_path("crew", name)
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def test_ctrl_c_while_a_teammate_is_viewed_interrupts_that_teammates_turn_not_the_lead(
        start_chat: Callable[..., Screen], fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    alice = _lead_starts(fake_api, tmp_path, "alice", SLOW_ALICE, prompt="Please get ready.",
                         started="Alice is starting.", answer="Lead noted alice.", mode="bypassPermissions")
    screen = start_chat("--teammate-playbook", alice, "--permission-mode", "bypassPermissions")
    screen.ready()
    screen.type("start a team")
    screen.wait_for("Lead noted alice.")
    screen.type("/view alice")
    screen.wait_for("alice is ready")
    screen.type("slow job kiwi")
    _wait(lambda: any(e.get("type") == "tool_start" for e in _events(screen, "alice")), "alice's command to start")
    began = time.monotonic()
    screen.key("C-c")
    screen.wait_for("interrupting alice's turn")
    _wait(lambda: any(e.get("type") == "turn_end" and e.get("stop_reason") == "interrupted"
                      for e in _events(screen, "alice")), "alice's turn to end interrupted", timeout=20)
    assert time.monotonic() - began < 20  # not the 60 s command running out
    assert not any(e.get("text") == "slow job done" for e in _events(screen, "alice"))
    assert "Ctrl-C again to shut the team down" not in screen.text()  # the lead's side saw no Ctrl-C
    assert "interrupting the lead's turn" not in screen.text()
    screen.type("after zebra")  # alice stayed, and answers her next message
    screen.wait_for("alice is back zebra")
    screen.key("C-c")  # nothing running: said so, the session stays
    screen.wait_for("alice runs no turn to interrupt")
    screen.type("/exit")
    screen.wait_for(EXITED)
    assert teammate_pids(screen.home) == []
