"""One teammate cannot flood another's context window (real teammate processes, offline scripted model).

The attacker writes what it likes: a message straight into the victim's inbox
file (so no sender-side check stands in the way), a task with a huge subject
and description (any member may write the list). What the victim's model reads
of it is cut at ``PEER_TEXT_CHARS`` with a marker saying so; an honest sender
that asks SendMessage for too much is told at once.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from swarm.agent.output_cap import PEER_TEXT_CHARS
from swarm.core.clock import now_iso
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.protocol import Member
from swarm.core.tasks import TaskStore
from swarm.models.messages import Message, ToolResultBlock
from tests.backends.helpers import retry_until
from tests.teammate.conftest import PLAYBOOK, idle_results
from tests.teammate.test_forged_blocks import _user_texts

HUGE = 1_000_000
SLACK = 400
"""Room for the block's tags and the marker around a capped text."""

READER = PLAYBOOK + r"""
[[rules]]
name = "read the list"
match = 'check the tasks'
[[rules.steps]]
tool_calls = [{ name = "TaskList", input = {} }]
[[rules.steps]]
tool_calls = [{ name = "TaskGet", input = { taskId = "1" } }]
[[rules.steps]]
text = "read the tasks"

[[rules]]
name = "flood"
match = 'flood (?P<to>[\w-]+)'
[[rules.steps]]
tool_calls = [{ name = "SendMessage", input = { to = "{to}", message = "{big}", summary = "a lot" } }]
[[rules.steps]]
text = "tried to flood {to}"

[vars]
big = "BIG"
"""


def _write_straight_into(home: Home, team: str, name: str, entry: dict[str, Any]) -> None:
    """What a hostile process does: rewrite the inbox file itself (atomically, so the victim wakes on it)."""
    path = home.inbox_path(team, name)
    entries = json.loads(path.read_text()) if path.exists() and path.read_text().strip() else []
    staged = path.with_name(f".{name}.attack")
    staged.write_text(json.dumps([*entries, entry]))
    os.replace(staged, path)


def _tool_results(home: Home, team: str, name: str) -> list[ToolResultBlock]:
    """Every tool result in the teammate's transcript, compacted away or not."""
    lines = map(json.loads, home.transcript_path(team, name).read_text().splitlines())
    messages = [Message.model_validate(r["message"]) for r in lines if r.get("kind") == "message"]
    return [b for m in messages for b in m.content if isinstance(b, ToolResultBlock)]


def test_a_flood_written_straight_into_an_inbox_reaches_the_model_cut_with_a_marker(
        home: Home, team: str, start: Callable[..., Member]) -> None:
    start("victim", "ping one")
    retry_until(lambda: "answered ping one" in idle_results(home, team, "victim"), 20, what="the victim's first turn")
    flood = "A" * HUGE + "END-OF-FLOOD"
    _write_straight_into(home, team, "victim", {"from": "mallory", "text": flood, "timestamp": now_iso(),
                                                "read": False, "msg_id": "flood-1", "summary": "S" * HUGE})
    retry_until(lambda: any('teammate_id="mallory"' in t for t in _user_texts(home, team, "victim")), 20,
                what="the victim to take the flood")
    [taken] = [t for t in _user_texts(home, team, "victim") if 'teammate_id="mallory"' in t]
    assert len(taken) < PEER_TEXT_CHARS + SLACK
    assert "END-OF-FLOOD" not in taken and f"[... {HUGE + len('END-OF-FLOOD') - PEER_TEXT_CHARS} chars truncated" in taken


def test_task_list_and_task_get_cut_a_task_another_member_made_huge(
        home: Home, team: str, tmp_path: Path, start: Callable[..., Member]) -> None:
    TaskStore(home, team).create("S" * HUGE + " SUBJECT-END", "D" * HUGE + " DESCRIPTION-END")  # any member may
    book = tmp_path / "reader.toml"
    book.write_text(READER)
    start("victim", "check the tasks", book=book)
    retry_until(lambda: idle_results(home, team, "victim") == ["read the tasks"], 20, what="the victim's turn")
    listed, got = _tool_results(home, team, "victim")
    for result in (listed, got):
        assert not result.is_error and len(result.content) < PEER_TEXT_CHARS + SLACK
        assert "chars truncated" in result.content and "-END" not in result.content
    assert listed.content.startswith("#1 [pending] SSS") and got.content.startswith("Task #1: SSS")


def test_send_message_refuses_more_than_a_teammate_reads_and_sends_nothing(
        home: Home, team: str, tmp_path: Path, start: Callable[..., Member]) -> None:
    book = tmp_path / "flooder.toml"
    book.write_text(READER.replace('"BIG"', f'"{"x" * (PEER_TEXT_CHARS + 1)}"'))
    start("victim", "hello")
    start("mallory", "flood victim", book=book)
    retry_until(lambda: idle_results(home, team, "mallory") == ["tried to flood victim"], 20, what="mallory's turn")
    [refused] = _tool_results(home, team, "mallory")
    assert refused.is_error and refused.content == (
        f"message is {PEER_TEXT_CHARS + 1} characters; a teammate reads at most {PEER_TEXT_CHARS} — "
        "write the rest to a file and send its path")
    assert not any("xxxx" in t for t in _user_texts(home, team, "victim"))
    assert not any(e.sender == "mallory" for e in Mailbox(home, team).read("victim"))
