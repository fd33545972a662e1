"""Injected fakes shared by the test suites (real protocols, no mock.patch)."""

from __future__ import annotations

from .anthropic_server import (
    FakeAnthropicServer,
    RecordedRequest,
    ScriptedReply,
    error_reply,
    message_json,
    text_reply,
    tool_use_reply,
    usage_json,
)

__all__ = [
    "FakeAnthropicServer",
    "RecordedRequest",
    "ScriptedReply",
    "error_reply",
    "message_json",
    "text_reply",
    "tool_use_reply",
    "usage_json",
]
