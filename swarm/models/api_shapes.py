"""The Messages API's shapes: our request as the SDK's keyword arguments, and its message as our response.

Pure translation, no I/O: prompt-cache breakpoints (``build_params``), an
agent's effort as the model's thinking parameters (``thinking_params``, by the
model's ``thinking`` in ``swarm.models.catalog``), and the SDK's ``Message``
back into a ``ModelResponse`` (``to_model_response``; thinking blocks kept
verbatim, signature included, since they go back unchanged). The provider
that sends them is ``swarm.models.anthropic_provider``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, get_args

from swarm.models.base import Effort, ModelRequest, ModelResponse, StopReason
from swarm.models.catalog import model_info
from swarm.models.messages import (
    AssistantBlock,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    Usage,
)

log = logging.getLogger(__name__)

THINKING_BUDGETS: Mapping[str, int] = {"low": 4_000, "medium": 10_000, "high": 20_000, "xhigh": 32_000, "max": 64_000}
"""An effort as extended thinking's ``budget_tokens`` (models whose ``thinking`` is "extended"), before the cap."""
MIN_THINKING_BUDGET = 1024
"""The API's smallest ``budget_tokens``."""

_STOP_REASONS = frozenset(get_args(StopReason))

CACHE = {"type": "ephemeral"}
"""A prompt-cache breakpoint: the request up to here is cached for the next call."""


def build_params(model: str, request: ModelRequest) -> dict[str, Any]:
    """The keyword arguments for ``client.messages.create``, with prompt-cache breakpoints.

    All four of the API's breakpoints: after the tools and after the system
    prompt — the stable prefix every call of an agent shares, and forks and
    same-definition teammates share with each other — on the last block of
    the conversation, so the next call reads everything up to here from the
    cache, and on the last block of the previous turn (the message before
    the last), so the conversation up to there is still read from the cache
    when the newest message is not what the last call sent (a message added
    mid-turn, a cancelled call, a compacted or resumed tail). The markers
    are annotations: the bytes they mark stay identical from call to call.
    Thinking blocks go back as they came (signature included); an ``effort``
    becomes the model's thinking parameters (``thinking_params``).
    """
    messages = [m.model_dump(mode="json") for m in request.messages]
    for message in messages[-2:]:
        if message["content"] and _markable(message["content"][-1]):
            message["content"][-1]["cache_control"] = dict(CACHE)
    params: dict[str, Any] = {"model": model, "max_tokens": request.max_tokens, "messages": messages}
    if request.system:
        params["system"] = [{"type": "text", "text": request.system, "cache_control": dict(CACHE)}]
    if request.tools:
        params["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.input_schema}
            for t in request.tools
        ]
        params["tools"][-1]["cache_control"] = dict(CACHE)
    params.update(thinking_params(model, request.effort, max_tokens=request.max_tokens))
    return params


def _markable(block: Mapping[str, Any]) -> bool:
    """May ``block`` carry a cache breakpoint? (The API refuses one on an empty text block.)"""
    return block.get("type") not in ("thinking", "redacted_thinking") and not (
        block.get("type") == "text" and not block.get("text"))


def thinking_params(model: str, effort: Effort | None, *, max_tokens: int) -> dict[str, Any]:
    """The request parameters that ask ``model`` to think with ``effort`` (none for no effort or no thinking).

    By the model's ``thinking`` in the catalog: "adaptive" models decide how
    much to think themselves, so the effort goes as ``output_config.effort``
    beside ``thinking: {"type": "adaptive"}``; "extended" models get a fixed
    ``budget_tokens`` (``THINKING_BUDGETS``), kept below ``max_tokens`` (at
    most three quarters of it, never under the API's 1,024).
    """
    kind = model_info(model).thinking
    if effort is None or kind == "none":
        return {}
    if kind == "adaptive":
        return {"thinking": {"type": "adaptive"}, "output_config": {"effort": effort}}
    budget = min(THINKING_BUDGETS[effort], max_tokens * 3 // 4)
    if budget < MIN_THINKING_BUDGET:
        return {}
    return {"thinking": {"type": "enabled", "budget_tokens": budget}}


def to_model_response(message: Any) -> ModelResponse:
    """Translate an SDK ``Message`` into our ``ModelResponse``.

    Text, tool_use, thinking and redacted_thinking blocks are kept, in order
    (thinking verbatim, signature included: it goes back unchanged); other
    block kinds (server tools) are dropped with a debug log.
    """
    content: list[AssistantBlock] = []
    for block in message.content:
        if block.type == "thinking":
            content.append(ThinkingBlock(thinking=block.thinking, signature=block.signature))
        elif block.type == "redacted_thinking":
            content.append(RedactedThinkingBlock(data=block.data))
        elif block.type == "text":
            content.append(TextBlock(text=block.text))
        elif block.type == "tool_use":
            content.append(ToolUseBlock(id=block.id, name=block.name, input=dict(block.input or {})))
        else:
            log.debug("dropped content block", extra={"provider": "anthropic", "block_type": block.type})
    return ModelResponse(
        content=content,
        stop_reason=_stop_reason(message.stop_reason),
        usage=_usage(message.usage),
        model=message.model or "",
    )


def _usage(raw: Any) -> Usage:
    return Usage(
        input_tokens=raw.input_tokens or 0,
        output_tokens=raw.output_tokens or 0,
        cache_read_input_tokens=getattr(raw, "cache_read_input_tokens", None) or 0,
        cache_creation_input_tokens=getattr(raw, "cache_creation_input_tokens", None) or 0,
    )


def _stop_reason(raw: str | None) -> StopReason | None:
    if raw in _STOP_REASONS:
        return raw  # type: ignore[return-value]
    if raw == "model_context_window_exceeded":
        return "max_tokens"
    return None
