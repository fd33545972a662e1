"""Run one tool call: find the tool, validate its input, ask the gate, run it.

Every failure becomes an error ``ToolResultBlock`` the model can read; the only
thing that reaches the loop is ``EndRun``, a tool saying the run is over. Every
result is capped here (``agent.output_cap.cap_result``): cut at the tool's
``max_result_chars`` or the default, with a marker; refused with an error when
over the tool's ``max_result_tokens`` or when an image or PDF is over the API's
limits.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Protocol

from pydantic import BaseModel, ValidationError

from swarm.agent.hooks.tool_calls import ToolHooks
from swarm.agent.limits import EndRun
from swarm.agent.output_cap import DEFAULT_RESULT_CHARS, ResultRefused, cap_result, cap_text
from swarm.agent.tool_api.base import Tool
from swarm.agent.tool_api.context import ToolContext, ToolError
from swarm.models.messages import ToolResultBlock, ToolUseBlock

log = logging.getLogger(__name__)


class ToolGate(Protocol):
    """Decides whether a validated tool call may run (permissions, plan mode).

    Returns the arguments to run with (possibly updated) or raises ToolError
    with the reason for a denial.
    """

    def authorize(self, tool: Tool[BaseModel], args: BaseModel, tool_use_id: str, ctx: ToolContext) -> BaseModel: ...

    @property
    def mode(self) -> str:
        """The permission mode calls are decided in."""
        ...

    def with_mode(self, mode: str) -> ToolGate:
        """The same gate (same rules, same way to the lead) deciding in ``mode`` (a subagent's own mode)."""
        ...


class MalformedCall(ToolResultBlock):
    """An error result for a call that named no tool or gave invalid input.

    The loop counts streaks of these: a model that keeps making calls it
    cannot make is stopped; a command that fails is just information.
    """


def execute(call: ToolUseBlock, tools: Mapping[str, Tool[BaseModel]], ctx: ToolContext,
            gate: ToolGate | None = None) -> ToolResultBlock:
    tool = tools.get(call.name)
    if tool is None:
        return _malformed(call, f"unknown tool {call.name!r}; available tools: {', '.join(sorted(tools))}")
    try:
        args = tool.input_model.model_validate(call.input)
    except ValidationError as exc:
        return _malformed(call, f"invalid input for {call.name}: {_summarise(exc)}")
    hooks = ToolHooks.of(call, ctx, gate)
    try:
        args = hooks.before(tool, args)
        args = hooks.authorize(gate, tool, args)
    except ToolError as exc:
        return _error(call, str(exc))
    try:
        output = tool.run(args, ctx)
    except ToolError as exc:
        return _error(call, hooks.failed(args, str(exc)))
    except EndRun:
        raise  # the tool ended the run: the loop records the result and stops
    except Exception as exc:  # a tool bug must not kill the agent; the model and the log both hear of it
        log.exception("tool crashed", extra={"tool": call.name, "tool_use_id": call.id})
        return _error(call, hooks.failed(args, f"{call.name} failed unexpectedly: {type(exc).__name__}: {exc}"))
    try:
        output = cap_result(output, call.name, max_chars=tool.max_result_chars, max_tokens=tool.max_result_tokens,
                            hint=tool.truncation_hint)
    except ResultRefused as exc:
        return _error(call, str(exc))
    return ToolResultBlock(tool_use_id=call.id, content=hooks.after(args, output))


def _malformed(call: ToolUseBlock, message: str) -> MalformedCall:
    return MalformedCall(tool_use_id=call.id, content=message, is_error=True)


def _error(call: ToolUseBlock, message: str) -> ToolResultBlock:
    """An error result; its text capped like any result's (a tool may put a command's output in its error)."""
    return ToolResultBlock(tool_use_id=call.id, content=cap_text(message, DEFAULT_RESULT_CHARS), is_error=True)


def _summarise(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err["loc"]) or "input"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)
