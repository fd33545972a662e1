"""A tool acts only on input that is on disk: the fsync a delivery put off is settled before the first tool runs.

The teammate records a delivered message without waiting for its fsync
(``Conversation.add(sync_later=True)``) so the model can start at once; the
loop settles that fsync before it runs any tool (``make_durable``). Here the
fsync is held, or fails, while the real SDK brings a Bash call from the fake
API: the command must not run before the fsync is done, and never after one
that failed (a full disk). The transcript is a real file; only its fsync is
gated, since a disk that refuses an fsync cannot be made here.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from swarm.agent.conversation import Conversation
from swarm.agent.loop import AgentRun, AgentSpec, run_agent
from swarm.agent.tools import core_tools
from swarm.agent.tool_api.context import AgentIdentity, ToolContext
from swarm.agent.transcript import Transcript
from swarm.errors import StorageError
from swarm.models.anthropic_provider import AnthropicProvider
from swarm.models.messages import Message
from tests.backends.helpers import retry_until
from tests.fakes import FakeAnthropicServer
from tests.fakes.anthropic_server import text_reply, tool_use_reply


class GatedTranscript(Transcript):
    """A real transcript whose fsync waits for ``release`` (or fails with ``failure``)."""

    def __init__(self, path: Path, failure: str | None = None) -> None:
        super().__init__(path)
        self.release = threading.Event()
        self.failure = failure
        self.syncs = 0

    def sync(self) -> None:
        self.syncs += 1
        if self.failure is not None:
            raise StorageError(self.failure)
        self.release.wait(30)
        super().sync()


def _run_in_thread(tmp_path: Path, transcript: GatedTranscript,
                   claude: AnthropicProvider) -> tuple[threading.Thread, dict]:
    conversation = Conversation(transcript=transcript)
    owed = conversation.add(Message.user_text("make the marker"), delivered=["msg-1"], sync_later=True)
    assert owed is not None
    outcome: dict[str, AgentRun | BaseException] = {}

    def run() -> None:
        try:
            outcome["run"] = run_agent(AgentSpec(provider=claude, tools=core_tools()), conversation,
                                       ToolContext(AgentIdentity(cwd=tmp_path)))
        except BaseException as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    return thread, outcome


def test_the_first_tool_waits_for_the_delivery_fsync(tmp_path: Path, api: FakeAnthropicServer,
                                                    claude: AnthropicProvider) -> None:
    api.enqueue(tool_use_reply("Bash", {"command": "touch marker"}, tool_id="toolu_1"), text_reply("made it"))
    transcript = GatedTranscript(tmp_path / "t.jsonl")
    thread, outcome = _run_in_thread(tmp_path, transcript, claude)
    retry_until(lambda: transcript.syncs == 1, 10, what="the loop settling the fsync before the tool")
    assert len(api.requests) == 1  # the model was asked while the fsync was still owed...
    thread.join(0.3)
    assert not (tmp_path / "marker").exists()  # ...but its Bash call waits for it
    assert thread.is_alive()
    transcript.release.set()
    thread.join(30)
    run = outcome["run"]
    assert isinstance(run, AgentRun) and run.ok and run.text == "made it"
    assert (tmp_path / "marker").exists()
    assert transcript.syncs == 1  # settled once, not once per tool or model call
    [first, *_] = transcript.records()
    assert first["delivered"] == ["msg-1"]  # the line itself was written before the model was asked


def test_a_refused_fsync_runs_no_tool(tmp_path: Path, api: FakeAnthropicServer,
                                     claude: AnthropicProvider) -> None:
    api.enqueue(tool_use_reply("Bash", {"command": "touch marker"}, tool_id="toolu_1"), text_reply("made it"))
    transcript = GatedTranscript(tmp_path / "t.jsonl", failure="disk full")
    thread, outcome = _run_in_thread(tmp_path, transcript, claude)
    thread.join(30)
    assert isinstance(outcome.get("error"), StorageError)
    assert not (tmp_path / "marker").exists()
    assert len(api.requests) == 1


def test_an_add_without_sync_later_owes_nothing(tmp_path: Path) -> None:
    transcript = GatedTranscript(tmp_path / "t.jsonl", failure="must not be called")
    conversation = Conversation(transcript=transcript)
    assert conversation.add(Message.user_text("plain"), delivered=["msg-2"]) is None  # fsynced inline
    assert conversation.add(Message.user_text("no keys"), sync_later=True) is None  # nothing delivered to keep
    conversation.make_durable()
    assert transcript.syncs == 0


def test_settling_from_two_threads_syncs_once(tmp_path: Path) -> None:
    transcript = GatedTranscript(tmp_path / "t.jsonl")
    conversation = Conversation(transcript=transcript)
    owed = conversation.add(Message.user_text("hi"), delivered=["msg-3"], sync_later=True)
    assert owed is not None
    other = threading.Thread(target=owed.pay)
    other.start()
    retry_until(lambda: transcript.syncs == 1, 5, what="the other thread's fsync")
    waiter = threading.Thread(target=conversation.make_durable)
    waiter.start()
    waiter.join(0.2)
    assert waiter.is_alive()  # waits for the fsync the other thread is doing, rather than doing its own
    transcript.release.set()
    other.join(5)
    waiter.join(5)
    assert not waiter.is_alive() and transcript.syncs == 1


def test_a_failed_settle_is_reported_to_every_waiter(tmp_path: Path) -> None:
    transcript = GatedTranscript(tmp_path / "t.jsonl", failure="disk full")
    conversation = Conversation(transcript=transcript)
    owed = conversation.add(Message.user_text("hi"), delivered=["msg-4"], sync_later=True)
    assert owed is not None
    with pytest.raises(StorageError):
        owed.pay()
    with pytest.raises(StorageError, match="disk full"):
        conversation.make_durable()
    assert transcript.syncs == 1
