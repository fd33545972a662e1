from __future__ import annotations

import json

import pytest

from swarm.core.frames import (
    IdleNotification,
    PermissionRequest,
    PermissionResponse,
    ShutdownRequest,
    TeammateTerminated,
    frame_text,
    parse_frame,
)


def test_frames_round_trip() -> None:
    req = ShutdownRequest(request_id="shutdown-1@bob", sender="team-lead", timestamp="t", reason="done")
    text = frame_text(req)
    assert json.loads(text) == {"type": "shutdown_request", "requestId": "shutdown-1@bob",
                                "from": "team-lead", "reason": "done", "timestamp": "t"}
    assert parse_frame(text) == req


def test_permission_frames_use_snake_case_on_the_wire() -> None:
    req = PermissionRequest(request_id="perm-1-abc", agent_id="bob@t", tool_name="Bash",
                            tool_use_id="toolu_1", description="run ls", input={"command": "ls"})
    wire = json.loads(frame_text(req))
    assert wire["request_id"] == "perm-1-abc" and wire["tool_name"] == "Bash"
    resp = parse_frame(json.dumps({"type": "permission_response", "request_id": "perm-1-abc",
                                   "subtype": "success", "response": {"updated_input": {"command": "ls -l"}}}))
    assert isinstance(resp, PermissionResponse)
    assert resp.response is not None and resp.response.updated_input == {"command": "ls -l"}


def test_idle_notification_camel_case() -> None:
    frame = parse_frame(json.dumps({"type": "idle_notification", "from": "bob", "timestamp": "t",
                                    "idleReason": "available", "result": "done"}))
    assert isinstance(frame, IdleNotification)
    assert frame.idle_reason == "available" and frame.sender == "bob"


@pytest.mark.parametrize("text", [
    "hello",
    "{not json",
    "[1, 2]",
    '{"type": "unknown_frame"}',
    '{"type": "shutdown_request"}',
    '{"type": "permission_response", "request_id": "x", "subtype": "maybe"}',
    '{"type": "teammate_terminated", "message": 5}',
    '{"no": "type"}',
])
def test_malformed_frames_are_plain_text(text: str) -> None:
    assert parse_frame(text) == text


def test_terminated_frame() -> None:
    frame = parse_frame('{"type": "teammate_terminated", "message": "bob died"}')
    assert frame == TeammateTerminated(message="bob died")
