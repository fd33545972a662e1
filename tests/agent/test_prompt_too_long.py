"""A 400 'prompt is too long': the loop compacts (below the threshold too) and tries the call once more;
thinking blocks and the agent's effort ride through the loop to the API."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from swarm.agent.compaction import CompactionPolicy
from swarm.agent.conversation import Conversation
from swarm.agent.loop import AgentSpec, run_agent
from swarm.agent.tool_api.context import AgentIdentity, ToolContext, TurnState
from swarm.agent.tools import core_tools
from swarm.agent.transcript import Transcript
from swarm.errors import PromptTooLong
from swarm.models.anthropic_provider import AnthropicProvider
from tests.fakes import FakeAnthropicServer, ScriptedReply, message_json, text_reply, tool_use_reply, usage_json
from tests.fakes.anthropic_server import error_reply, unmarked

SUMMARY_MARK = "Your task is to create a detailed summary"
TOO_LONG = "prompt is too long: 1012345 tokens > 1000000 maximum"


def _ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(AgentIdentity(cwd=tmp_path), turn=TurnState(cancel=threading.Event()))


def _steps(count: int) -> list[ScriptedReply]:
    return [tool_use_reply("Bash", {"command": f"echo step {i}"}, tool_id=f"toolu_{i}", usage=usage_json(100, 10))
            for i in range(1, count + 1)]


def _summary_calls(api: FakeAnthropicServer) -> list[list[dict[str, object]]]:
    return [unmarked(r.body["messages"]) for r in api.requests if SUMMARY_MARK in str(r.body["messages"][-1])]


def test_a_prompt_too_long_is_compacted_below_the_threshold_and_tried_again(
        api: FakeAnthropicServer, claude: AnthropicProvider, tmp_path: Path) -> None:
    api.enqueue(text_reply("SUMMARY: echoed steps 1 and 2", usage=usage_json(50, 20)), when=SUMMARY_MARK)
    api.enqueue(*_steps(2), error_reply(400, "invalid_request_error", TOO_LONG), text_reply("done"))
    transcript = Transcript(tmp_path / "t.jsonl")
    conversation = Conversation(transcript=transcript)
    conversation.add_user_text("work in steps")
    spec = AgentSpec(provider=claude, tools=core_tools(), compaction=CompactionPolicy())  # a 1M window: far below

    result = run_agent(spec, conversation, _ctx(tmp_path))

    assert result.ok and result.text == "done"
    assert len(_summary_calls(api)) == 1
    retried = unmarked(api.requests[-1].body["messages"])
    assert "SUMMARY: echoed steps 1 and 2" in retried[0]["content"][0]["text"]
    assert retried[-1]["content"][0]["tool_use_id"] == "toolu_2"  # the step in progress goes on
    assert len([r for r in transcript.records() if r.get("kind") == "compaction"]) == 1


def test_it_is_tried_again_only_once(api: FakeAnthropicServer, claude: AnthropicProvider, tmp_path: Path) -> None:
    api.enqueue(text_reply("SUMMARY"), when=SUMMARY_MARK)
    api.enqueue(*_steps(1), error_reply(400, "invalid_request_error", TOO_LONG),
                error_reply(400, "invalid_request_error", TOO_LONG))
    conversation = Conversation()
    conversation.add_user_text("go")
    spec = AgentSpec(provider=claude, tools=core_tools())
    with pytest.raises(PromptTooLong):
        run_agent(spec, conversation, _ctx(tmp_path))
    assert len(_summary_calls(api)) == 1 and len(api.requests) == 4


def test_a_summary_request_too_long_drops_the_oldest_messages_until_it_fits(
        api: FakeAnthropicServer, claude: AnthropicProvider, tmp_path: Path) -> None:
    api.enqueue(error_reply(400, "invalid_request_error", TOO_LONG), error_reply(400, "invalid_request_error", TOO_LONG),
                text_reply("SUMMARY of the recent steps"), when=SUMMARY_MARK)
    api.enqueue(*_steps(8), error_reply(400, "invalid_request_error", TOO_LONG), text_reply("done"))
    conversation = Conversation()
    conversation.add_user_text("work in eight steps")
    spec = AgentSpec(provider=claude, tools=core_tools())

    result = run_agent(spec, conversation, _ctx(tmp_path))

    assert result.ok
    first, second, third = _summary_calls(api)  # each one the fake API accepted as a valid conversation
    assert len(first) == 17 and len(third) < len(second) < len(first)
    assert first[-1] == second[-1] == third[-1]  # the newest step and the instruction are always kept
    assert third[0]["role"] == "user" and "omitted" in third[0]["content"][0]["text"]
    assert "SUMMARY of the recent steps" in str(api.requests[-1].body["messages"][0])


def test_thinking_and_effort_ride_through_the_loop(api: FakeAnthropicServer, tmp_path: Path) -> None:
    thinking = {"type": "thinking", "thinking": "I should look first.", "signature": "c2lnbmVk"}
    call = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "echo hi"}}
    api.enqueue(ScriptedReply(200, message_json([thinking, call], stop_reason="tool_use", model="claude-opus-5-5")),
                text_reply("done"))
    provider = AnthropicProvider(model="claude-opus-5-5",
                                 env={"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": api.base_url})
    transcript = Transcript(tmp_path / "t.jsonl")
    conversation = Conversation(transcript=transcript)
    conversation.add_user_text("say hi")
    with provider:
        assert run_agent(AgentSpec(provider=provider, tools=core_tools(), effort="high"), conversation,
                         _ctx(tmp_path)).ok
    first, second = (r.body for r in api.requests)
    assert first["thinking"] == {"type": "adaptive"} and first["output_config"] == {"effort": "high"}
    assert unmarked(second["messages"][1]) == {"role": "assistant", "content": [thinking, call]}
    resumed = Conversation.resume(Transcript(transcript.path))  # the transcript keeps the signature
    assert resumed.messages[1].model_dump(mode="json")["content"][0] == thinking


def test_the_summary_request_thinks_like_the_agent_so_the_cached_prefix_holds(api: FakeAnthropicServer,
                                                                             tmp_path: Path) -> None:
    api.enqueue(text_reply("SUMMARY"), when=SUMMARY_MARK)
    api.enqueue(error_reply(400, "invalid_request_error", TOO_LONG), text_reply("done"))
    provider = AnthropicProvider(model="claude-opus-5-5",
                                 env={"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": api.base_url})
    conversation = Conversation()
    conversation.add_user_text("go")
    with provider:
        assert run_agent(AgentSpec(provider=provider, tools=core_tools(), effort="medium"), conversation,
                         _ctx(tmp_path)).ok
    assert len(_summary_calls(api)) == 1
    assert [r.body.get("output_config") for r in api.requests] == [{"effort": "medium"}] * 3
