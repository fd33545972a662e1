"""The model's stop reasons, as the Messages API sends them (``swarm.agent.loop``): through the real SDK and the fake
API. A cut output is never an answer and its tool calls never run; a refusal is reported as one."""

from __future__ import annotations

import json
from pathlib import Path

from swarm.agent.headless import run_headless
from swarm.agent.limits import Limits
from swarm.agent.loop import CUT_NOTE, MAX_CUT_CONTINUATIONS
from swarm.models.anthropic_provider import AnthropicProvider
from swarm.models.catalog import model_info
from tests.fakes import FakeAnthropicServer
from tests.fakes.anthropic_server import ScriptedReply, message_json, text_reply, unmarked


def _cut(content: list[dict[str, object]]) -> ScriptedReply:
    return ScriptedReply(200, message_json(content, stop_reason="max_tokens"))


def test_a_tool_call_cut_at_max_tokens_never_runs_and_the_model_is_told_to_go_on_in_pieces(
        tmp_path: Path, api: FakeAnthropicServer, claude: AnthropicProvider) -> None:
    partial = {"type": "tool_use", "id": "toolu_cut", "name": "Write", "input": {"file_path": "big.py"}}
    api.enqueue(_cut([{"type": "text", "text": "Writing the file."}, partial]),
                text_reply("I will write it in smaller pieces."))
    result = run_headless("write big.py", claude, cwd=tmp_path, limits=Limits())
    assert result.ok and result.text == "I will write it in smaller pieces."
    assert not (tmp_path / "big.py").exists()
    second = unmarked(api.requests[1].body)["messages"]
    assert "toolu_cut" not in json.dumps(second)  # the partial call is not sent back either
    assert second[-2]["content"] == [{"type": "text", "text": "Writing the file."}]
    limit = model_info(claude.model).max_output  # the model's own output limit, asked for in every request
    assert api.requests[0].body["max_tokens"] == limit and CUT_NOTE.format(tokens=limit) in json.dumps(second[-1])


def test_text_cut_at_max_tokens_is_not_the_answer_and_endless_cuts_end_the_run(
        tmp_path: Path, api: FakeAnthropicServer, claude: AnthropicProvider) -> None:
    api.enqueue(*[_cut([{"type": "text", "text": f"part {i}"}]) for i in range(MAX_CUT_CONTINUATIONS + 1)])
    result = run_headless("explain", claude, cwd=tmp_path, limits=Limits())
    assert not result.ok and result.stop_reason == "max_tokens"
    assert f"{MAX_CUT_CONTINUATIONS + 1} times in a row" in result.detail
    assert len(api.requests) == MAX_CUT_CONTINUATIONS + 1


def test_a_refusal_is_reported_as_a_refusal(tmp_path: Path, api: FakeAnthropicServer,
                                            claude: AnthropicProvider) -> None:
    api.enqueue(ScriptedReply(200, message_json([], stop_reason="refusal")))
    result = run_headless("do something bad", claude, cwd=tmp_path, limits=Limits())
    assert not result.ok and result.stop_reason == "refusal" and "declined" in result.detail
