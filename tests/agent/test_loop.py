"""The agent loop through the real anthropic SDK against a fake Messages API."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from swarm.agent.conversation import Conversation
from swarm.agent.headless import run_headless
from swarm.agent.limits import Limits
from swarm.agent.loop import AgentSpec, Arrivals, run_agent
from swarm.agent.tools import core_tools
from swarm.agent.tool_api.context import AgentIdentity, ToolContext, TurnState
from swarm.agent.transcript import Transcript
from swarm.models.anthropic_provider import AnthropicProvider
from tests.fakes import FakeAnthropicServer
from tests.fakes.anthropic_server import (
    text_reply,
    tool_use_reply,
    unmarked,
    usage_json,
)

CORE = {"Read", "Write", "Edit", "Bash", "Glob", "Grep"}


def _tool_results(body: dict) -> list[dict]:  # type: ignore[type-arg]
    last = body["messages"][-1]
    return [b for b in last["content"] if b["type"] == "tool_result"]


def test_multi_step_run_edits_a_real_file(tmp_path: Path, api: FakeAnthropicServer,
                                         claude: AnthropicProvider) -> None:
    target = tmp_path / "app.py"
    target.write_text("print('hello')\n")
    api.enqueue(
        tool_use_reply("Edit", {"file_path": "app.py", "old_string": "hello", "new_string": "swarm"},
                       tool_id="toolu_1", usage=usage_json(100, 20, cache_read=7, cache_creation=3)),
        tool_use_reply("Bash", {"command": "python3 app.py"}, tool_id="toolu_2", usage=usage_json(150, 10)),
        text_reply("Changed the greeting; it prints swarm.", usage=usage_json(200, 12)),
    )
    transcript = tmp_path / "t.jsonl"
    result = run_headless("change the greeting", claude, cwd=tmp_path, limits=Limits(), transcript=transcript)

    assert result.ok and result.text == "Changed the greeting; it prints swarm."
    assert target.read_text() == "print('swarm')\n"
    first, second, third = (unmarked(r.body) for r in api.requests)
    assert {t["name"] for t in first["tools"]} == CORE
    edit_schema = next(t for t in first["tools"] if t["name"] == "Edit")["input_schema"]
    assert {"file_path", "old_string", "new_string"} <= set(edit_schema["properties"])
    assert first["messages"] == [{"role": "user", "content": [{"type": "text", "text": "change the greeting"}]}]
    assert "Working directory: " + str(tmp_path) in first["system"][0]["text"]
    [edit_result] = _tool_results(second)
    assert edit_result["tool_use_id"] == "toolu_1" and not edit_result.get("is_error")
    assert second["messages"][-2]["content"][-1]["id"] == "toolu_1"
    [bash_result] = _tool_results(third)
    assert bash_result["tool_use_id"] == "toolu_2" and "swarm" in bash_result["content"]
    assert result.turns == 3
    assert (result.usage.input_tokens, result.usage.output_tokens) == (450, 42)
    assert (result.usage.cache_read_input_tokens, result.usage.cache_creation_input_tokens) == (7, 3)
    records = [json.loads(line) for line in transcript.read_text().splitlines()]
    assert [r["message"]["role"] for r in records if r["kind"] == "message"] == ["user", "assistant"] * 3


def test_max_turns_stops_before_the_next_model_call(tmp_path: Path, api: FakeAnthropicServer,
                                                   claude: AnthropicProvider) -> None:
    for i in range(5):
        api.enqueue(tool_use_reply("Glob", {"pattern": "*"}, tool_id=f"toolu_{i}"))
    result = run_headless("loop forever", claude, cwd=tmp_path, limits=Limits(max_turns=2))
    assert result.stop_reason == "max_turns"
    assert len(api.requests) == 2


def test_token_budget_stops_the_run(tmp_path: Path, api: FakeAnthropicServer, claude: AnthropicProvider) -> None:
    for i in range(5):
        api.enqueue(tool_use_reply("Glob", {"pattern": "*"}, tool_id=f"toolu_{i}", usage=usage_json(60, 0)))
    result = run_headless("spend", claude, cwd=tmp_path, limits=Limits(max_tokens=100))
    assert result.stop_reason == "token_budget"
    assert len(api.requests) == 2


def test_invalid_and_unknown_tool_calls_go_back_to_the_model(tmp_path: Path, api: FakeAnthropicServer,
                                                             claude: AnthropicProvider) -> None:
    api.enqueue(
        tool_use_reply("Read", {"offset": "not a number"}, tool_id="toolu_bad"),
        tool_use_reply("Teleport", {"to": "mars"}, tool_id="toolu_unknown"),
        text_reply("ok, giving up"),
    )
    result = run_headless("read something", claude, cwd=tmp_path, limits=Limits())
    assert result.ok and result.text == "ok, giving up"
    [bad] = _tool_results(api.requests[1].body)
    assert bad["is_error"] is True and "file_path" in bad["content"]
    [unknown] = _tool_results(api.requests[2].body)
    assert unknown["is_error"] is True and "unknown tool 'Teleport'" in unknown["content"]


def test_malformed_call_streak_ends_the_run(tmp_path: Path, api: FakeAnthropicServer,
                                            claude: AnthropicProvider) -> None:
    api.enqueue(tool_use_reply("Read", {"file_path": "missing.txt"}, tool_id="toolu_a"))  # fails, but well-formed
    for i in range(4):
        api.enqueue(tool_use_reply("Read", {"path": f"missing{i}.txt"}, tool_id=f"toolu_{i}"))
    result = run_headless("read", claude, cwd=tmp_path, limits=Limits(max_consecutive_tool_errors=3))
    assert result.stop_reason == "tool_errors"
    assert len(api.requests) == 4


def test_mid_turn_message_reaches_the_next_request(tmp_path: Path, api: FakeAnthropicServer,
                                                   claude: AnthropicProvider) -> None:
    arrived: list[str] = []
    api.enqueue(
        tool_use_reply("Bash", {"command": "echo step one"}, tool_id="toolu_1"),
        tool_use_reply("Bash", {"command": "echo step two"}, tool_id="toolu_2"),
        text_reply("done"),
    )

    def inbound() -> Arrivals:
        # the first call happens after step one: a message "lands" then
        if not arrived:
            arrived.append("<teammate-message teammate_id=\"alice\">stop using tabs</teammate-message>")
            return Arrivals(texts=list(arrived))
        return Arrivals()

    spec = AgentSpec(provider=claude, tools=core_tools())
    conversation = Conversation()
    conversation.add_user_text("work")
    run_agent(spec, conversation, ToolContext(AgentIdentity(cwd=tmp_path)), inbound=inbound)
    second = unmarked(api.requests[1].body["messages"][-1]["content"])
    assert second[0]["type"] == "tool_result"
    assert second[1] == {"type": "text", "text": arrived[0]}
    assert "stop using tabs" not in json.dumps(api.requests[0].body)


def test_cancel_stops_between_steps_with_consistent_transcript(tmp_path: Path, api: FakeAnthropicServer,
                                                               claude: AnthropicProvider) -> None:
    cancel = threading.Event()
    api.enqueue(
        tool_use_reply("Bash", {"command": "true"}, tool_id="toolu_1"),
        text_reply("never asked"),
    )
    transcript = tmp_path / "t.jsonl"

    def cancelling_inbound() -> Arrivals:
        cancel.set()  # e.g. SIGINT arriving while the tool ran
        return Arrivals()

    spec = AgentSpec(provider=claude, tools=core_tools())
    conversation = Conversation(transcript=Transcript(transcript))
    conversation.add_user_text("work")
    ctx = ToolContext(AgentIdentity(cwd=tmp_path), turn=TurnState(cancel=cancel))
    result = run_agent(spec, conversation, ctx, inbound=cancelling_inbound)
    assert result.stop_reason == "interrupted"
    assert len(api.requests) == 1
    messages = Transcript(transcript).messages()
    uses = [b.id for m in messages for b in m.tool_uses()]
    results = [b.tool_use_id for m in messages for b in m.content if b.type == "tool_result"]
    assert uses == results == ["toolu_1"]
