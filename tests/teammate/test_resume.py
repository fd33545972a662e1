"""``kill -9`` in the middle of a turn loses nothing: the next process continues that turn.

The teammate runs on the real ``anthropic`` SDK against the fake Messages API,
which (like the real one) refuses a conversation with a ``tool_use`` that has
no ``tool_result`` right after it.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import time
from pathlib import Path

import psutil

from swarm.agent.conversation import Conversation
from swarm.agent.transcript import Transcript
from swarm.backends.procs import is_pid_alive
from swarm.core.frames import IdleNotification, entry_frame
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.teams import TeamStore
from swarm.models.api_shapes import build_params
from swarm.models.base import ModelRequest
from swarm.runtime.spawn import SpawnRequest, spawn
from tests.backends.helpers import retry_until
from tests.fakes import FakeAnthropicServer, text_reply, tool_use_reply
from tests.fakes.anthropic_server import conversation_error


def _results(home: Home, team: str, name: str) -> list[str | None]:
    frames = [entry_frame(e) for e in Mailbox(home, team).read("team-lead")]
    return [f.result for f in frames if isinstance(f, IdleNotification) and f.sender == name]


def _sleepers(workdir: Path) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline", "cwd"]):
        if proc.info.get("cwd") == str(workdir) and "sleep" in (proc.info.get("cmdline") or []):
            found.append(proc)
    return found


def test_a_teammate_killed_mid_turn_continues_that_turn_after_a_respawn(
        home: Home, team: str, workdir: Path, api: FakeAnthropicServer) -> None:
    env = {**os.environ, "ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": api.base_url}
    request = SpawnRequest(team=team, name="w", prompt="slow job: build the index", cwd=workdir,
                           backend="subprocess", allowed_tools=["Bash"])
    api.enqueue(tool_use_reply("Bash", {"command": "echo started >> runs.txt; sleep 30"}, tool_id="toolu_slow"))
    first = spawn(home, request, env)
    retry_until(lambda: (workdir / "runs.txt").exists(), 20, what="the slow command to start")
    assert first.pid is not None
    os.kill(first.pid, signal.SIGKILL)
    retry_until(lambda: not is_pid_alive(first.pid or 0), 10, what="the teammate to die")
    for proc in _sleepers(workdir):  # its command may outlive it; that is another test's business
        proc.kill()

    api.enqueue(text_reply("picked up where I left off"), text_reply("second job done"))
    spawn(home, request.model_copy(update={"prompt": "second job"}), env)
    retry_until(lambda: _results(home, team, "w")[-2:] == ["picked up where I left off", "second job done"], 20,
                what="the resumed turn and the next one to finish")

    # every request was accepted by the API (the fake answers 400 otherwise) and the resumed one
    # carried the interrupted call's result and the original prompt
    assert [r.path for r in api.requests] == ["/v1/messages"] * 3
    resumed = api.requests[1].body["messages"]
    assert "slow job: build the index" in json.dumps(resumed[0])
    [result] = [b for b in resumed[-1]["content"] if b.get("type") == "tool_result"]
    assert result["tool_use_id"] == "toolu_slow" and result["is_error"] is True
    # the command had started ("started" is in runs.txt): the model is told it was cut short, not that it never ran
    note = json.dumps(result["content"])
    assert "before this tool ran" not in note and "cut short" in note and "effects are unknown" in note, note

    # and what is on disk resumes again into a conversation the API accepts (a third process would send this)
    again = Conversation.resume(Transcript(home.transcript_path(team, "w")))
    params = build_params("claude-test", ModelRequest(system="", messages=again.messages, tools=[], max_tokens=10))
    assert conversation_error(params["messages"]) is None
    assert not Transcript(home.transcript_path(team, "w")).turn_open()


NOTES = r"""
[[rules]]
name = "note"
match = 'note (?P<n>\d+)'
[[rules.steps]]
tool_calls = [{ name = "Bash", input = { command = "sleep 0.2" } }]
[[rules.steps]]
text = "noted {n}"
"""


def test_messages_sent_while_a_teammate_is_killed_and_respawned_reach_its_conversation_exactly_once(
        home: Home, team: str, workdir: Path, tmp_path: Path) -> None:
    """SIGKILLs mid-turn and mid-delivery: each send ends up once in the conversation, which stays sendable."""
    book = tmp_path / "notes.toml"
    book.write_text(NOTES)
    request = SpawnRequest(team=team, name="w", prompt="first start", cwd=workdir, backend="subprocess",
                           playbook=book, allowed_tools=["Bash"])
    mailbox = Mailbox(home, team)
    rng = random.Random(1234)
    sent: list[str] = []
    member = spawn(home, request, dict(os.environ))
    for round_ in range(4):
        for _ in range(6):
            sent.append(f"note {len(sent)}")
            mailbox.send("w", sent[-1], sender="team-lead")
            time.sleep(rng.uniform(0, 0.1))
        assert member.pid is not None
        os.kill(member.pid, signal.SIGKILL)
        retry_until(lambda: not is_pid_alive(member.pid or 0), 10, what="the teammate to die")
        member = spawn(home, request.model_copy(update={"prompt": f"respawn {round_}"}), dict(os.environ))
    retry_until(lambda: not mailbox.pending("w") and _status(home, team) == "idle", 60,
                what="every message to be delivered")

    recorded = Transcript(home.transcript_path(team, "w")).messages()  # as on disk, before any repair
    params = build_params("claude-test", ModelRequest(system="", messages=recorded, tools=[], max_tokens=10))
    assert conversation_error(params["messages"]) is None
    text = "\n".join(block.text for message in recorded if message.role == "user"
                     for block in message.content if block.type == "text")
    counts = {note: len(re.findall(rf">{note}</teammate-message>", text)) for note in sent}
    assert counts == dict.fromkeys(sent, 1)


def _status(home: Home, team: str) -> str | None:
    member = TeamStore(home).get(team).member("w")
    return member.status if member else None
