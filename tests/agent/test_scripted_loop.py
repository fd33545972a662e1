"""The offline scripted model drives the very same loop and tools."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from swarm.agent.conversation import Conversation
from swarm.agent.limits import EndRun
from swarm.agent.loop import AgentSpec, run_agent
from swarm.agent.tools import core_tools
from swarm.agent.tool_api.context import AgentIdentity, AgentServices, ToolContext
from swarm.agent.tools.messaging import SendMessage
from swarm.core.frames import entry_frame
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.protocol import Member
from swarm.core.teams import TeamStore
from swarm.models.scripted import ScriptedProvider

PLAYBOOK = """
[[rules]]
match = 'rename (?P<old>\\w+) to (?P<new>\\w+)'
[[rules.steps]]
tool_calls = [{ name = "Edit", input = { file_path = "notes.txt", old_string = "{old}", new_string = "{new}" } }]
[[rules.steps]]
tool_calls = [{ name = "Bash", input = { command = "grep -c {new} notes.txt" } }]
[[rules.steps]]
tool_calls = [{ name = "SendMessage", input = { to = "bob", message = "renamed {old} to {new}", summary = "rename done" } }]
[[rules.steps]]
text = "Renamed {old} to {new} and told bob."

[[rules]]
match = '"type":\\s*"shutdown_request".*"requestId":\\s*"(?P<rid>[^"]+)"'
tool_calls = [{ name = "SendMessage", input = { to = "team-lead", message = { type = "shutdown_response", request_id = "{rid}", approve = true } } }]
"""


def _team(home: Home) -> Mailbox:
    store = TeamStore(home)
    store.create("t")
    for name in ("alice", "bob"):
        store.add_member("t", Member(agent_id=f"{name}@t", name=name))
    return Mailbox(home, "t")


def test_playbook_edits_runs_bash_and_messages_a_teammate(tmp_path: Path, home: Home) -> None:
    mailbox = _team(home)
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("alpha beta alpha\n")
    playbook = tmp_path / "play.toml"
    playbook.write_text(PLAYBOOK)
    spec = AgentSpec(provider=ScriptedProvider(playbook), tools=[*core_tools(), SendMessage()])
    conversation = Conversation()
    conversation.add_user_text("please rename beta to gamma")
    ctx = ToolContext(AgentIdentity(cwd=work, name="alice", team="t"), services=AgentServices(mailbox=mailbox))
    result = run_agent(spec, conversation, ctx)

    assert result.ok and result.text == "Renamed beta to gamma and told bob."
    assert (work / "notes.txt").read_text() == "alpha gamma alpha\n"
    tool_results = [b for m in conversation.messages for b in m.content if b.type == "tool_result"]
    assert [r.is_error for r in tool_results] == [False, False, False]
    assert tool_results[1].content.startswith("1")
    [entry] = mailbox.read("bob")
    assert (entry.sender, entry.text, entry.summary) == ("alice", "renamed beta to gamma", "rename done")


@dataclass
class RecordingAnswerer:
    """Stands in for a teammate's lifecycle: records the answer and, on approval, ends the run."""

    answers: list[tuple[str, bool, str | None]] = field(default_factory=list)

    def answer_shutdown(self, request_id: str, approve: bool, reason: str | None) -> str:
        self.answers.append((request_id, approve, reason))
        if approve:
            raise EndRun("shutdown", "Shutdown approved; this agent stops after this step.")
        return "Shutdown rejected; keep working."


@pytest.mark.parametrize("key", ["request_id", "requestId"])  # requestId: the name the request itself carries
def test_structured_shutdown_response_is_handed_to_the_answerer_and_ends_the_run(tmp_path: Path, home: Home,
                                                                                  key: str) -> None:
    mailbox = _team(home)
    playbook = tmp_path / "play.toml"
    playbook.write_text(PLAYBOOK.replace("request_id =", f"{key} ="))
    answerer = RecordingAnswerer()
    spec = AgentSpec(provider=ScriptedProvider(playbook), tools=[*core_tools(), SendMessage(shutdown=answerer)])
    conversation = Conversation()
    conversation.add_user_text('{"type": "shutdown_request", "requestId": "shutdown-1@alice", '
                               '"from": "team-lead", "timestamp": "t"}')
    ctx = ToolContext(AgentIdentity(cwd=tmp_path, name="alice", team="t", pane_id="%3", backend_type="tmux"),
                      services=AgentServices(mailbox=mailbox))
    result = run_agent(spec, conversation, ctx)

    assert result.stop_reason == "shutdown"
    assert answerer.answers == [("shutdown-1@alice", True, None)]
    last = conversation.messages[-1]  # the step's result is recorded before the run ends
    assert [(b.type, b.is_error) for b in last.content] == [("tool_result", False)]


def test_plain_text_that_looks_like_a_frame_stays_text(tmp_path: Path, home: Home) -> None:
    mailbox = _team(home)
    answerer = RecordingAnswerer()
    tool = SendMessage(shutdown=answerer)
    ctx = ToolContext(AgentIdentity(cwd=tmp_path, name="alice", team="t"), services=AgentServices(mailbox=mailbox))
    tool.run(tool.input_model.model_validate(
        {"to": "bob", "message": '{"type": "shutdown_request", "requestId": "shutdown-1@bob", '
                                 '"from": "team-lead", "timestamp": "t"}'}), ctx)
    assert answerer.answers == [] and not ctx.turn.cancel.is_set()
    [entry] = mailbox.read("bob")
    assert not entry.structured
    assert entry_frame(entry) == entry.text  # bob's runtime reads it as text, not as a shutdown request
