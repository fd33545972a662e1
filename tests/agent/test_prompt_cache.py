"""Prompt caching on the real SDK: breakpoints on the stable prefix and the last block, the prefix unchanged."""

from __future__ import annotations

import json
from pathlib import Path

from swarm.agent.headless import run_headless
from swarm.agent.limits import Limits
from swarm.models.anthropic_provider import AnthropicProvider
from swarm.models.api_shapes import build_params
from swarm.models.base import ModelRequest
from swarm.models.messages import Message, TextBlock
from tests.fakes import FakeAnthropicServer, text_reply, tool_use_reply, usage_json
from tests.fakes.anthropic_server import unmarked

EPHEMERAL = {"type": "ephemeral"}


def test_a_ten_step_run_marks_the_prefix_and_each_request_extends_the_previous_one(
        api: FakeAnthropicServer, claude: AnthropicProvider, tmp_path: Path) -> None:
    steps = [tool_use_reply("Bash", {"command": f"echo step {i}"}, tool_id=f"toolu_{i}",
                            usage=usage_json(100, 5, cache_read=80 * i, cache_creation=20)) for i in range(9)]
    api.enqueue(*steps, text_reply("done", usage=usage_json(100, 5, cache_read=900, cache_creation=0)))
    result = run_headless("work in ten steps", claude, cwd=tmp_path, limits=Limits())
    assert result.ok and len(api.requests) == 10
    bodies = [r.body for r in api.requests]
    for body in bodies:
        assert body["system"][0]["cache_control"] == EPHEMERAL
        assert body["tools"][-1]["cache_control"] == EPHEMERAL
        assert body["messages"][-1]["content"][-1]["cache_control"] == EPHEMERAL
        assert sum("cache_control" in t for t in body["tools"]) == 1
    for before, after in zip(bodies, bodies[1:]):
        assert after["system"] == before["system"] and after["tools"] == before["tools"]  # byte-identical prefix
        earlier = unmarked(before["messages"])
        assert unmarked(after["messages"])[: len(earlier)] == earlier  # the cached conversation, unchanged
    assert result.usage.cache_read_input_tokens == sum(80 * i for i in range(9)) + 900
    assert result.usage.cache_creation_input_tokens == 20 * 9


def _markers(body: dict[str, object]) -> int:
    return json.dumps(body).count('"cache_control"')


def test_the_fourth_breakpoint_marks_the_previous_turns_last_block(
        api: FakeAnthropicServer, claude: AnthropicProvider, tmp_path: Path) -> None:
    api.enqueue(tool_use_reply("Bash", {"command": "echo one"}, tool_id="toolu_1"),
                tool_use_reply("Bash", {"command": "echo two"}, tool_id="toolu_2"), text_reply("done"))
    assert run_headless("work in three steps", claude, cwd=tmp_path, limits=Limits()).ok
    first, *later = [r.body for r in api.requests]
    assert _markers(first) == 3  # no previous turn yet: tools, system, the last block
    for body in later:
        assert _markers(body) == 4  # the API's limit, all used
        previous, last = body["messages"][-2], body["messages"][-1]
        assert previous["role"] == "assistant" and previous["content"][-1]["cache_control"] == EPHEMERAL
        assert last["content"][-1]["cache_control"] == EPHEMERAL
        assert all("cache_control" not in block for m in body["messages"][:-2] for block in m["content"])


def test_an_empty_text_block_is_never_marked(tmp_path: Path) -> None:
    """The API refuses a breakpoint on an empty text block; an assistant turn may end with one."""
    messages = [Message.user_text("hi"), Message(role="assistant", content=[TextBlock(text="")]),
                Message.user_text("again")]
    params = build_params("m", ModelRequest(system="s", messages=messages))
    assert params["messages"][1]["content"][0] == {"type": "text", "text": ""}
    assert params["messages"][2]["content"][-1]["cache_control"] == EPHEMERAL
