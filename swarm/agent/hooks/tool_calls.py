"""The hooks around one tool call: ``PreToolUse`` before the gate, ``PostToolUse`` / ``PostToolUseFailure`` after.

The executor (``swarm.agent.executor``) calls ``before`` once the input is
valid, ``authorize`` for the gate, then ``after`` or ``failed``. What hooks
may do, and what they may not:

- block (exit 2, ``decision: "block"``, ``permissionDecision: "deny"``): the
  call does not run and the model reads the reason;
- rewrite the input (``updatedInput``): the new input is validated against the
  tool's input model like the model's own, and then goes through the gate like
  any call, so a rewrite into what a deny rule refuses is refused;
- ``ask``: the call asks (the person, or for a teammate the lead) even where a
  rule or the mode would let it run — an ask rule for this call only;
- ``allow``: an allow rule for this call only, and only from a hook of a
  settings file (never a definition's): deny rules, ask rules, protected
  files, plan mode and the write roots still decide before it, as they do
  before any allow rule, so a hook never widens what the person granted;
- add context (``additionalContext``): text for the model, after the result;
- stop the agent (``continue: false``): the run ends after this step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel, ValidationError

from swarm.agent.hooks.outcome import HookOutcome
from swarm.agent.hooks.session import AgentHooks
from swarm.agent.limits import EndRun
from swarm.agent.tool_api.base import Tool
from swarm.agent.tool_api.context import ToolContext, ToolError
from swarm.agent.transcript import Transcript
from swarm.models.messages import ResultContent, TextBlock, ToolUseBlock

HOOK_STOPPED = "hook_stopped"
"""The run's stop reason when a hook answered ``continue: false``."""


class _Gate(Protocol):
    """What of the permission gate the hooks use (``swarm.agent.executor.ToolGate``)."""

    def authorize(self, tool: Tool[BaseModel], args: BaseModel, tool_use_id: str, ctx: ToolContext) -> BaseModel: ...

    @property
    def mode(self) -> str: ...


@dataclass
class ToolHooks:
    """The hooks of one call; with no hooks every step passes the call through unchanged."""

    call: ToolUseBlock
    ctx: ToolContext
    hooks: AgentHooks | None
    mode: str
    pre: HookOutcome | None = None

    @classmethod
    def of(cls, call: ToolUseBlock, ctx: ToolContext, gate: _Gate | None) -> ToolHooks:
        return cls(call, ctx, ctx.services.hooks, gate.mode if gate is not None else "bypassPermissions")

    def before(self, tool: Tool[BaseModel], args: BaseModel) -> BaseModel:
        """``PreToolUse``: the input to go on with; ToolError when a hook blocks it."""
        if self.hooks is None or not self.hooks.active("PreToolUse", tool.name):
            return args
        self.pre = outcome = self._fire("PreToolUse", args)
        if outcome.stop:
            raise EndRun(HOOK_STOPPED, f"not run: a PreToolUse hook stopped the agent: {outcome.stop_reason}")
        if outcome.blocked or outcome.permission == "deny":
            raise ToolError(f"blocked by a PreToolUse hook: {outcome.reason}")
        if outcome.updated_input is None:
            return args
        try:
            return tool.input_model.model_validate(outcome.updated_input)
        except ValidationError as exc:
            raise ToolError(f"not run: a PreToolUse hook rewrote the input of {tool.name} into an invalid one "
                            f"({exc.errors()[0]['msg']})") from exc

    def authorize(self, gate: _Gate | None, tool: Tool[BaseModel], args: BaseModel) -> BaseModel:
        """The gate's decision, with a hook's ``ask`` or (trusted) ``allow`` as a rule for this call only.

        No gate (every call runs): a hook's ``ask`` has nobody to ask, so the call is refused."""
        pre = self.pre
        if gate is None:
            if pre is not None and pre.permission == "ask":
                raise ToolError("not run: a PreToolUse hook asked for approval and this agent has nobody to ask"
                                + (f" ({pre.permission_reason})" if pre.permission_reason else ""))
            return args
        if pre is None or pre.permission is None or pre.permission == "deny":
            return gate.authorize(tool, args, self.call.id, self.ctx)
        rules = self.ctx.turn.asked_rules if pre.permission == "ask" else self.ctx.turn.granted_rules
        if pre.permission == "allow" and not pre.permission_trusted:
            return gate.authorize(tool, args, self.call.id, self.ctx)
        rules.append(tool.name)
        try:
            return gate.authorize(tool, args, self.call.id, self.ctx)
        finally:
            rules.remove(tool.name)

    def after(self, args: BaseModel, output: str | list[ResultContent]) -> str | list[ResultContent]:
        """``PostToolUse``: the result, with what the hooks said for the model after it."""
        pre_context = self.pre.context_text if self.pre is not None else ""
        if self.hooks is None or not self.hooks.active("PostToolUse", self.call.name):
            return _with_text(output, pre_context)
        response = output if isinstance(output, str) else [b.model_dump(mode="json") for b in output
                                                           if isinstance(b, TextBlock)]
        outcome = self._fire("PostToolUse", args, tool_response=response)
        said = [pre_context, outcome.context_text]
        if outcome.blocked:
            said.append(f"PostToolUse hook feedback: {outcome.reason}")
        if outcome.stop:
            raise EndRun(HOOK_STOPPED, _text(_with_text(output, "\n\n".join(t for t in said if t))))
        return _with_text(output, "\n\n".join(t for t in said if t))

    def failed(self, args: BaseModel, error: str) -> str:
        """``PostToolUseFailure``: the error, with what the hooks said for the model after it."""
        if self.hooks is None or not self.hooks.active("PostToolUseFailure", self.call.name):
            return error
        outcome = self._fire("PostToolUseFailure", args, error=error)
        return "\n\n".join(t for t in (error, outcome.context_text) if t)

    def _fire(self, event: str, args: BaseModel, **fields: Any) -> HookOutcome:
        assert self.hooks is not None
        return self.hooks.fire(event, target=self.call.name, transcript=transcript_of(self.ctx),
                               permission_mode=self.mode, cwd=self.ctx.cwd, tool_name=self.call.name,
                               tool_input=args.model_dump(mode="json", by_alias=True, exclude_none=True),
                               tool_use_id=self.call.id, **fields)


def transcript_of(ctx: ToolContext) -> Transcript | None:
    """The transcript of the agent a call belongs to (None outside a run, or an agent that keeps none)."""
    running = ctx.turn.running
    return running.conversation.transcript if running is not None else None


def _with_text(output: str | list[ResultContent], text: str) -> str | list[ResultContent]:
    if not text:
        return output
    if isinstance(output, str):
        return f"{output}\n\n{text}" if output else text
    return [*output, TextBlock(text=text)]


def _text(output: str | list[ResultContent]) -> str:
    return output if isinstance(output, str) else "\n".join(b.text for b in output if isinstance(b, TextBlock))
