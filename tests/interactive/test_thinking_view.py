"""The model's thinking in the interactive session: one collapsed line per block, before its text and calls."""

from __future__ import annotations

from pathlib import Path

from swarm.interactive.view import View
from swarm.models.anthropic_provider import AnthropicProvider
from swarm.models.base import ModelRequest
from swarm.models.messages import Message
from tests.fakes import FakeAnthropicServer, ScriptedReply, message_json

LONG = "First I read the failing test.\nThen " + "I trace the call through the parser " * 10 + "\x1b[31m"


def test_thinking_is_one_collapsed_line_and_redacted_thinking_says_so(tmp_path: Path) -> None:
    content = [{"type": "thinking", "thinking": LONG, "signature": "sig"},
               {"type": "redacted_thinking", "data": "opaque"},
               {"type": "text", "text": "Let me look."},
               {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}]
    with FakeAnthropicServer() as api:
        api.enqueue(ScriptedReply(200, message_json(content, stop_reason="tool_use")))
        with AnthropicProvider(env={"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": api.base_url}) as provider:
            message = provider.complete(ModelRequest(messages=[Message.user_text("fix it")])).message()
    lines: list[str] = []
    View(tmp_path, plain=True, write=lines.append).message(message)

    thinking, redacted, text = lines[:3]
    assert thinking.startswith("✻ thinking: First I read the failing test. Then I trace")
    assert "\n" not in thinking and len(thinking) <= 100 and thinking.endswith("…")
    assert "\x1b" not in "".join(lines)
    assert redacted == "✻ thinking (redacted)"
    assert text == "● Let me look."
