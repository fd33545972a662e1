"""Compaction: a conversation near the window is summarised, the transcript stays whole, the prefix stays cached."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path

from swarm.agent.compaction import SUMMARY_INSTRUCTION, CompactionPolicy
from swarm.agent.conversation import Conversation
from swarm.agent.loop import AgentSpec, run_agent
from swarm.agent.tools import core_tools
from swarm.agent.tool_api.context import AgentIdentity, ToolContext, TurnState
from swarm.agent.transcript import Transcript
from swarm.models.anthropic_provider import AnthropicProvider
from swarm.models.playbook import load_playbook
from swarm.models.scripted import ScriptedProvider
from tests.backends.helpers import retry_until
from tests.fakes import FakeAnthropicServer, text_reply, tool_use_reply, usage_json
from tests.fakes.anthropic_server import error_reply, unmarked

SUMMARY_MARK = "Your task is to create a detailed summary"


def _message_records(transcript: Transcript) -> list[dict[str, object]]:
    return [r for r in transcript.records() if r.get("kind") == "message"]


def test_policy_follows_claude_codes_variables() -> None:
    assert CompactionPolicy().threshold("claude-sonnet-4-6") == 200_000 - 13_000
    assert CompactionPolicy().threshold("claude-sonnet-4-6[1m]") == 1_000_000 - 13_000
    env = {"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "100000", "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "50"}
    assert CompactionPolicy.from_env(env).threshold("m") == 50_000
    assert CompactionPolicy.from_env({"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "99"}).threshold("m") == 187_000  # only lowers
    assert not CompactionPolicy.from_env({"DISABLE_AUTO_COMPACT": "1"}).enabled
    assert CompactionPolicy.from_env({"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "lots"}).window is None


def test_a_real_sdk_run_is_compacted_mid_turn_with_the_prefix_unchanged(
        api: FakeAnthropicServer, claude: AnthropicProvider, tmp_path: Path) -> None:
    """Step 3's reply carried 910 tokens of context against a threshold of 900: the next call is the summary."""
    usages = {1: usage_json(300, 10), 2: usage_json(500, 10, cache_read=200), 3: usage_json(600, 10, cache_read=300),
              4: usage_json(200, 10)}  # context after each step: 310, 710, 910 (≥ 900: compact), 210
    steps = [tool_use_reply("Bash", {"command": f"echo step {i}"}, tool_id=f"toolu_{i}", usage=usages[i])
             for i in range(1, 5)]
    api.enqueue(text_reply("SUMMARY: ran echo steps 1 to 3", usage=usage_json(50, 20, cache_read=1200)),
                when=SUMMARY_MARK)
    api.enqueue(*steps, text_reply("done", usage=usage_json(300, 5)))
    transcript = Transcript(tmp_path / "t.jsonl")
    conversation = Conversation(transcript=transcript)
    conversation.add_user_text("work in steps")
    spec = AgentSpec(provider=claude, tools=core_tools(), system="You are careful.",
                     compaction=CompactionPolicy(window=1_000, percent=100))
    ctx = ToolContext(AgentIdentity(cwd=tmp_path), turn=TurnState(cancel=threading.Event()))
    result = run_agent(spec, conversation, ctx)

    assert result.ok and result.text == "done"
    bodies = [r.body for r in api.requests]
    summary_calls = [i for i, b in enumerate(bodies) if SUMMARY_MARK in str(b["messages"][-1])]
    assert len(summary_calls) == 1
    at = summary_calls[0]
    assert at == 3
    before, summary, after = bodies[at - 1], bodies[at], bodies[at + 1]
    for body in (summary, after):  # the cached prefix: byte-identical system prompt and tools
        assert body["system"] == before["system"] and body["tools"] == before["tools"]
    # the summary request is the conversation so far, with the instruction added to its last message
    sent, earlier = unmarked(summary["messages"]), unmarked(before["messages"])
    assert sent[:len(earlier)] == earlier and len(sent) == len(earlier) + 2
    assert sent[-1]["content"][0]["tool_use_id"] == "toolu_3"
    assert sent[-1]["content"][-1]["text"] == SUMMARY_INSTRUCTION
    # the conversation goes on from the summary, with the step in progress (its tool_use and tool_result)
    first, call, results = unmarked(after["messages"])[:3]
    assert "SUMMARY: ran echo steps 1 to 3" in first["content"][0]["text"]
    assert call["content"][-1]["id"] == "toolu_3" and results["content"][0]["tool_use_id"] == "toolu_3"
    assert len(after["messages"]) == 3
    assert result.usage.cache_read_input_tokens == 200 + 300 + 1200  # the summary call counts

    # the transcript keeps every message, and a resume continues from the compaction
    records = _message_records(transcript)
    assert len(records) == 1 + 2 * 4 + 1  # prompt, 4 × (call, results), the final answer
    resumed = Conversation.resume(Transcript(transcript.path))
    assert [m.model_dump() for m in resumed.messages] == [m.model_dump() for m in conversation.messages]
    assert resumed.messages[0].text().startswith("This session is being continued")
    assert resumed.context_tokens == 305


def test_two_thousand_turns_with_the_scripted_model_stay_bounded(tmp_path: Path) -> None:
    """Per-call work and what the agent holds do not grow with its age: turn 2,000 costs what turn 10 costs."""
    book = tmp_path / "book.toml"
    book.write_text('[default]\ntext = "noted: {incoming}"\n'
                    '[[rules]]\non = "summary"\nmatch = ""\ntext = "SUMMARY so far"\n')
    provider = ScriptedProvider(load_playbook(book))
    transcript = Transcript(tmp_path / "t.jsonl")
    conversation = Conversation(transcript=transcript)
    spec = AgentSpec(provider=provider, tools=[], system="s", compaction=CompactionPolicy(window=2_000, percent=100))
    ctx = ToolContext(AgentIdentity(cwd=tmp_path), turn=TurnState(cancel=threading.Event()))
    measured, held = [], []
    for turn in range(2_000):
        before = provider._tally.measured
        conversation.add_user_text(f"turn {turn}: " + "x" * 200)
        run = run_agent(spec, conversation, ctx)
        assert run.ok
        measured.append(provider._tally.measured - before)
        held.append(len(conversation.messages))

    compactions = [r for r in transcript.records() if r.get("kind") == "compaction"]
    assert len(compactions) > 50
    assert all(r["messages"][0]["content"][0]["text"].endswith("SUMMARY so far") for r in compactions)
    assert max(held) <= 40 and max(held[-100:]) <= 40  # bounded by the window, not by 4,000 messages
    assert len(provider._tally._lengths) <= 2 * 40 + 64
    assert max(measured[-100:]) <= max(measured[:100])  # a turn measures its new messages only
    assert len(_message_records(transcript)) == 4_000  # the transcript keeps every message
    assert conversation.messages[-1].text().endswith("turn 1999: " + "x" * 200)


def test_a_failed_summary_leaves_the_conversation_whole_and_is_not_retried_every_call(
        api: FakeAnthropicServer, claude: AnthropicProvider, tmp_path: Path) -> None:
    api.enqueue(error_reply(400, "invalid_request_error", "prompt is too long"), when=SUMMARY_MARK)
    api.enqueue(tool_use_reply("Bash", {"command": "echo 1"}, tool_id="toolu_1", usage=usage_json(2_000, 10)),
                tool_use_reply("Bash", {"command": "echo 2"}, tool_id="toolu_2", usage=usage_json(2_010, 10)),
                text_reply("done", usage=usage_json(2_020, 5)))
    transcript = Transcript(tmp_path / "t.jsonl")
    conversation = Conversation(transcript=transcript)
    conversation.add_user_text("go")
    spec = AgentSpec(provider=claude, tools=core_tools(), compaction=CompactionPolicy(window=1_000, percent=100))
    ctx = ToolContext(AgentIdentity(cwd=tmp_path), turn=TurnState(cancel=threading.Event()))
    result = run_agent(spec, conversation, ctx)
    assert result.ok and len(conversation.messages) == 6
    assert sum(SUMMARY_MARK in str(r.body["messages"][-1]) for r in api.requests) == 1
    [failed] = transcript.events("compaction_failed")
    assert "prompt is too long" in failed["error"] and failed["context_tokens"] == 2_010


def test_an_interrupt_cuts_the_summary_short_and_leaves_the_conversation_whole(
        api: FakeAnthropicServer, claude: AnthropicProvider, tmp_path: Path) -> None:
    """The summary of a long conversation can take a while: an interrupt ends it at its next event, as it does an
    answer, and the turn ends ``interrupted`` with nothing replaced."""
    api.enqueue(replace(text_reply("SUMMARY: " + "detail " * 100, usage=usage_json(50, 20)), pace=0.1),
                when=SUMMARY_MARK)  # ~100 events: ~10 s read to the end
    api.enqueue(tool_use_reply("Bash", {"command": "echo big"}, usage=usage_json(950, 10)), text_reply("never"))
    conversation = Conversation(transcript=Transcript(tmp_path / "t.jsonl"))
    conversation.add_user_text("work")
    turn = TurnState(cancel=threading.Event())
    heard: list[float] = []

    def interrupted(_text: str) -> None:  # the person presses Ctrl-C as the summary starts to arrive
        heard.append(time.monotonic())
        turn.cancel.set()
        turn.interrupt.set()

    claude.on_text = interrupted
    spec = AgentSpec(provider=claude, tools=core_tools(), system="s", compaction=CompactionPolicy(window=1_000,
                                                                                                   percent=100))
    result = run_agent(spec, conversation, ToolContext(AgentIdentity(cwd=tmp_path), turn=turn))
    assert result.stop_reason == "interrupted" and "while the model answered" in result.detail
    assert time.monotonic() - heard[0] < 3  # not the ~10 s of the whole summary
    retry_until(lambda: api.abandoned == 1, 10, what="the server to see the summary's connection closed")
    assert [m.role for m in conversation.messages] == ["user", "assistant", "user"]  # whole, nothing summarised
    assert len(api.requests) == 2 and api.pending == 1  # the step's answer was never asked for
