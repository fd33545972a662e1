"""The fake Messages API's own behaviour for clients like Claude Code (over real HTTP on loopback)."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest

from tests.fakes import FakeAnthropicServer, text_reply, tool_use_reply
from tests.fakes.anthropic_server import ScriptedReply, message_json


def _post(server: FakeAnthropicServer, path: str, body: dict[str, Any]) -> tuple[int, Any]:
    request = urllib.request.Request(server.base_url + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _turn(*texts: str, history: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"model": "m", "max_tokens": 10, "messages": [*(history or []),
                                                          {"role": "user", "content": " ".join(texts)}]}


@pytest.fixture
def server() -> Any:
    with FakeAnthropicServer() as started:
        yield started


def test_after_matches_only_what_came_since_the_models_last_turn(server: FakeAnthropicServer) -> None:
    server.enqueue(text_reply("step two"), after="STEP-2")
    server.enqueue(text_reply("step one"), after="STEP-1")
    history = [{"role": "user", "content": "STEP-1"}, {"role": "assistant", "content": "step one"}]
    assert _post(server, "/v1/messages", _turn("STEP-2", history=history))[1]["content"][0]["text"] == "step two"
    assert _post(server, "/v1/messages", _turn("STEP-1"))[1]["content"][0]["text"] == "step one"
    status, body = _post(server, "/v1/messages", _turn("STEP-1", history=history))  # STEP-1 is history here
    assert status == 500 and "no scripted reply left" in body["error"]["message"]


def test_otherwise_answers_what_nothing_queued_matches_and_bodies_can_be_computed(
        server: FakeAnthropicServer) -> None:
    server.enqueue(ScriptedReply(200, lambda body: message_json(
        [{"type": "text", "text": f"echo {body['messages'][-1]['content']}"}])), after="ECHO")
    server.otherwise(tool_use_reply("Read", {"file_path": "x"}))
    assert _post(server, "/v1/messages", _turn("ECHO me"))[1]["content"][0]["text"] == "echo ECHO me"
    assert _post(server, "/v1/messages", _turn("anything"))[1]["content"][0]["name"] == "Read"
    assert _post(server, "/v1/messages", _turn("again"))[1]["content"][0]["name"] == "Read"


def test_count_tokens_and_head_are_answered(server: FakeAnthropicServer) -> None:
    status, body = _post(server, "/v1/messages/count_tokens", _turn("how many tokens is this"))
    assert status == 200 and body["input_tokens"] > 0
    with urllib.request.urlopen(urllib.request.Request(server.base_url + "/", method="HEAD"), timeout=5) as answer:
        assert answer.status == 200 and answer.read() == b""
    assert [r.method for r in server.requests] == ["POST", "HEAD"]
