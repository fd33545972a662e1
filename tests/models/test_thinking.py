"""Thinking through the real SDK over HTTP: blocks kept verbatim and sent back, effort as the API's parameters,
and a prompt too long for the window told apart from other 400s."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from swarm.errors import ModelError, PromptTooLong
from swarm.models.anthropic_provider import AnthropicProvider
from swarm.models.api_shapes import thinking_params
from swarm.models.base import ModelRequest
from swarm.models.messages import (
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from tests.fakes import FakeAnthropicServer, ScriptedReply, error_reply
from tests.fakes.anthropic_server import message_json, sse_events, unmarked

Make = Callable[..., AnthropicProvider]

THINKING = {"type": "thinking", "thinking": "The user wants the files listed.\nls will do.", "signature": "sig-Zm9v=="}
REDACTED = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDF="}
CALL = {"type": "tool_use", "id": "toolu_t1", "name": "Bash", "input": {"command": "ls"}}


def test_the_fake_server_streams_thinking_as_the_api_does() -> None:
    events = sse_events(message_json([THINKING, REDACTED, CALL], stop_reason="tool_use"))
    starts = [data["content_block"] for name, data in events if name == "content_block_start"]
    assert starts[0] == {"type": "thinking", "thinking": "", "signature": ""}
    assert starts[1] == REDACTED
    deltas = [data["delta"] for name, data in events if name == "content_block_delta" and data["index"] == 0]
    assert "".join(d["thinking"] for d in deltas if d["type"] == "thinking_delta") == THINKING["thinking"]
    assert [d for d in deltas if d["type"] == "signature_delta"] == [{"type": "signature_delta",
                                                                     "signature": THINKING["signature"]}]


def test_thinking_blocks_are_kept_verbatim_in_order(make_anthropic: Make,
                                                    anthropic_server: FakeAnthropicServer) -> None:
    anthropic_server.enqueue(ScriptedReply(200, message_json([THINKING, REDACTED, CALL], stop_reason="tool_use")))
    response = make_anthropic().complete(ModelRequest(messages=[Message.user_text("list files")]))
    assert [b.model_dump(mode="json") for b in response.content] == [THINKING, REDACTED, CALL]
    assert isinstance(response.content[0], ThinkingBlock)
    assert isinstance(response.content[1], RedactedThinkingBlock)
    assert response.message().tool_uses() == [ToolUseBlock(**CALL)]
    assert response.message().text() == ""  # thinking is not the answer


def test_thinking_blocks_go_back_unchanged_with_their_signatures(make_anthropic: Make,
                                                                 anthropic_server: FakeAnthropicServer) -> None:
    anthropic_server.enqueue(ScriptedReply(200, message_json([THINKING, REDACTED, CALL], stop_reason="tool_use")))
    anthropic_server.enqueue(ScriptedReply(200, message_json([{"type": "text", "text": "a.py"}])))
    provider = make_anthropic()
    first = provider.complete(ModelRequest(messages=[Message.user_text("list files")]))
    conversation = [Message.user_text("list files"), first.message(),
                    Message(role="user", content=[ToolResultBlock(tool_use_id="toolu_t1", content="a.py")])]
    provider.complete(ModelRequest(messages=conversation))
    sent = unmarked(anthropic_server.requests[1].body["messages"])
    assert sent[1] == {"role": "assistant", "content": [THINKING, REDACTED, CALL]}


def test_a_message_with_thinking_survives_a_json_round_trip() -> None:
    message = Message(role="assistant", content=[ThinkingBlock(**THINKING), RedactedThinkingBlock(**REDACTED),
                                                 TextBlock(text="done")])
    assert Message.model_validate_json(message.model_dump_json()) == message


@pytest.mark.parametrize("effort", ["low", "medium", "high", "xhigh", "max"])
def test_effort_on_an_adaptive_model_is_adaptive_thinking_with_output_effort(effort: str) -> None:
    assert thinking_params("claude-opus-5-5", effort, max_tokens=128_000) == {  # type: ignore[arg-type]
        "thinking": {"type": "adaptive"}, "output_config": {"effort": effort}}


def test_effort_on_an_extended_model_is_a_budget_that_grows_and_stays_below_max_tokens() -> None:
    budgets = [thinking_params("claude-sonnet-4-6", e, max_tokens=64_000)["thinking"]["budget_tokens"]  # type: ignore[arg-type]
               for e in ("low", "medium", "high", "xhigh", "max")]
    assert budgets == sorted(budgets) and len(set(budgets)) == 5
    assert budgets[0] >= 1024 and budgets[-1] < 64_000
    assert thinking_params("claude-sonnet-4-6", "high", max_tokens=64_000)["thinking"]["type"] == "enabled"
    small = thinking_params("claude-sonnet-4-6", "max", max_tokens=4096)["thinking"]["budget_tokens"]
    assert 1024 <= small < 4096


def test_no_effort_or_a_model_without_thinking_sends_nothing() -> None:
    assert thinking_params("claude-opus-5-5", None, max_tokens=8192) == {}
    assert thinking_params("claude-unknown-9", "high", max_tokens=8192) == {}


def test_the_request_carries_the_effort(make_anthropic: Make, anthropic_server: FakeAnthropicServer) -> None:
    anthropic_server.enqueue(ScriptedReply(200, message_json([THINKING, {"type": "text", "text": "hi"}])))
    anthropic_server.enqueue(ScriptedReply(200, message_json([{"type": "text", "text": "hi"}])))
    make_anthropic(model="claude-opus-5-5").complete(
        ModelRequest(messages=[Message.user_text("hi")], effort="xhigh", max_tokens=32_000))
    make_anthropic(model="claude-haiku-4-5").complete(
        ModelRequest(messages=[Message.user_text("hi")], effort="low", max_tokens=32_000))
    adaptive, extended = (r.body for r in anthropic_server.requests)
    assert adaptive["thinking"] == {"type": "adaptive"} and adaptive["output_config"] == {"effort": "xhigh"}
    assert extended["thinking"]["type"] == "enabled" and 1024 <= extended["thinking"]["budget_tokens"] < 32_000
    assert "output_config" not in extended


def test_a_prompt_too_long_400_is_its_own_error(make_anthropic: Make, anthropic_server: FakeAnthropicServer) -> None:
    anthropic_server.enqueue(error_reply(400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"))
    anthropic_server.enqueue(error_reply(400, "invalid_request_error", "max_tokens: must be positive"))
    provider = make_anthropic()
    with pytest.raises(PromptTooLong, match="prompt is too long"):
        provider.complete(ModelRequest(messages=[Message.user_text("hi")]))
    with pytest.raises(ModelError) as other:
        provider.complete(ModelRequest(messages=[Message.user_text("hi")]))
    assert not isinstance(other.value, PromptTooLong)
    assert len(anthropic_server.requests) == 2  # neither is retried


def test_the_fake_api_refuses_thinking_that_was_changed_or_moved(make_anthropic: Make,
                                                                 anthropic_server: FakeAnthropicServer) -> None:
    anthropic_server.enqueue(ScriptedReply(200, message_json([THINKING, CALL], stop_reason="tool_use")))
    provider = make_anthropic()
    provider.complete(ModelRequest(messages=[Message.user_text("list files")]))
    result = Message(role="user", content=[ToolResultBlock(tool_use_id="toolu_t1", content="a.py")])
    changed = ThinkingBlock(thinking=THINKING["thinking"], signature="forged")
    for assistant in ([changed, ToolUseBlock(**CALL)], [ToolUseBlock(**CALL), ThinkingBlock(**THINKING)]):
        with pytest.raises(ModelError, match="signature|before text"):
            provider.complete(ModelRequest(messages=[Message.user_text("list files"),
                                                     Message(role="assistant", content=assistant), result]))
