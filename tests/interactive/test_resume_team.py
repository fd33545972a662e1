"""A lead killed with kill -9 and resumed with its team: the teammate started again, what it sent meanwhile read."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from swarm.backends.procs import is_pid_alive
from swarm.core.mailbox import Mailbox
from swarm.core.teams import TeamStore
from tests.fakes.anthropic_server import FakeAnthropicServer, text_reply, tool_use_reply
from tests.interactive.conftest import EXITED, Screen

pytestmark = pytest.mark.usefixtures("served")  # teammates forked from the home's CLI server (tests.zygote)

STANDBY = """
[[rules]]
name = "standby"
match = 'stand by'
text = "standing by"
"""


def _wait(condition: Callable[[], object], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout:g}s"
        time.sleep(0.1)


def test_a_lead_killed_mid_run_is_resumed_with_its_team_and_nothing_sent_meanwhile_is_lost(
        start_chat: Callable[..., Screen], fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    book = tmp_path / "w.toml"
    book.write_text(STANDBY)
    fake_api.enqueue(text_reply("got the report"), when="the report is ready")
    fake_api.enqueue(tool_use_reply("TeamCreate", {"team_name": "crew"}, tool_id="toolu_1"),
                     tool_use_reply("Agent", {"description": "a teammate", "team_name": "crew", "name": "w",
                                              "prompt": "stand by"}, tool_id="toolu_2"),
                     text_reply("team started"))
    fake_api.enqueue(text_reply("noted"), when='teammate_id=\\"w\\"', repeat=True)
    screen = start_chat("--teammate-playbook", f"w={book}")
    screen.ready()
    screen.type("start the team")
    screen.wait_for("team started")
    teams = TeamStore(screen.home)

    def member_active() -> bool:
        member = teams.get("crew").member("w")
        return member is not None and bool(member.is_active) and member.status == "idle"

    _wait(member_active, "w to join")
    first = teams.get("crew").member("w")
    assert first is not None
    lead_pid = teams.get("crew").lead_pid
    assert lead_pid is not None
    os.kill(lead_pid, signal.SIGKILL)  # no shutdown runs: the teammate stops by itself when it sees the lead gone
    _wait(lambda: not is_pid_alive(lead_pid), "the lead gone")
    _wait(lambda: not (m := teams.get("crew").member("w")) or not m.present(), "w to stop without its lead")
    Mailbox(screen.home, "crew").send("team-lead", "the report is ready", sender="w")  # sent while no lead runs

    session = sorted(p.stem for p in screen.home.sessions_dir.glob("*.jsonl"))[-1]
    again = start_chat("--resume", session, "--resume-team")
    again.wait_for("resumed team crew; started again from their transcripts: w")
    again.wait_for("got the report")  # the message that waited in the lead's inbox reached the resumed lead
    again.wait_for("w: idle")
    again.wait_for("| spent $0.0")  # the status line: what the team (its lead's calls) cost so far
    now = teams.get("crew").member("w")
    assert now is not None and now.joined_at != first.joined_at and now.is_active
    assert teams.get("crew").lead_pid not in (None, lead_pid)
    prompts = [r for r in fake_api.requests if "the report is ready" in str(r.body)]
    assert prompts, "the lead never read what w sent while it was down"


def test_a_session_that_shut_its_team_down_offers_it_back_and_the_person_takes_it(
        start_chat: Callable[..., Screen], fake_api: FakeAnthropicServer, tmp_path: Path) -> None:
    book = tmp_path / "w.toml"
    book.write_text(STANDBY)
    fake_api.enqueue(tool_use_reply("TeamCreate", {"team_name": "crew"}, tool_id="toolu_1"),
                     tool_use_reply("Agent", {"description": "a teammate", "team_name": "crew", "name": "w",
                                              "prompt": "stand by"}, tool_id="toolu_2"),
                     text_reply("team started"))
    fake_api.otherwise(text_reply("noted"))
    screen = start_chat("--teammate-playbook", f"w={book}")
    screen.ready()
    screen.type("start the team")
    screen.wait_for("team started")
    teams = TeamStore(screen.home)
    _wait(lambda: (m := teams.get("crew").member("w")) is not None and m.status == "idle", "w to join")
    screen.type("/exit")  # the session ends: its team is shut down (w approves) and stays on disk
    screen.wait_for(EXITED)
    assert (m := teams.get("crew").member("w")) is not None and m.status == "stopped"

    session = sorted(p.stem for p in screen.home.sessions_dir.glob("*.jsonl"))[-1]
    again = start_chat("--resume", session)
    again.wait_for("this session led team 'crew'")
    again.wait_for("take it back")
    again.type("y")
    again.wait_for("resumed team crew; started again from their transcripts: w")
    _wait(lambda: (m := teams.get("crew").member("w")) is not None and bool(m.is_active) and m.status == "idle",
          "w back")
