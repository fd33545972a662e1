"""The agent loop: model -> tool calls -> tool results -> model, until end_turn.

One function, ``run_agent``, runs every kind of agent (a teammate's turn, a
headless ``swarm run``, later subagents); what differs is the data passed in.
Limits are checked before every model call, and a conversation near the
model's window is compacted first (``agent.compaction``); cancellation is checked between
steps, so the conversation always ends in a consistent state (every tool_use
has its tool_result). A tool may end the run (``EndRun``): the step's results
are recorded first. An agent whose definition has a critical reminder
(``AgentSpec.reminder``) gets it again after every step's tool results.
Messages that arrive while the agent works are asked for
between steps and ride along in the next model request; they are recorded in
the same durable transcript write as the tool results, and only then taken
out of the inbox (``Arrivals.taken``).

The model's stop reason is checked on every response: ``refusal`` ends the
run as such (``ModelStopped``; ``swarm run -p`` exits non-zero), and an
output cut at ``max_tokens`` is never taken as an answer and its tool calls
never run (their input is partial): the model is told (``CUT_NOTE``) and
goes on, up to ``MAX_CUT_CONTINUATIONS`` times in a row. A request the API
refuses as too long for the window (``PromptTooLong``) is compacted
whatever the threshold and tried once more (``agent.compaction.compact``).
The agent's ``effort`` goes with every call; the model's thinking blocks are
kept in the conversation as they came, and go back with its message.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel

from swarm.agent.compaction import CompactionPolicy, compact, compact_if_due
from swarm.agent.conversation import Conversation
from swarm.agent.executor import MalformedCall, ToolGate, execute
from swarm.agent.limits import AgentStop, EndRun, Interrupted, Limits, ModelStopped, TooManyToolErrors
from swarm.agent.tool_api.base import Tool
from swarm.agent.tool_api.context import ToolContext
from swarm.errors import AnswerInterrupted, PromptTooLong
from swarm.models.base import Effort, ModelProvider, ModelRequest, ModelResponse, ToolSpec
from swarm.models.catalog import model_info
from swarm.models.messages import (
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)

log = logging.getLogger(__name__)

MAX_STOP_HOOK_BLOCKS = 8
"""Times a Stop hook may keep one run going; then the run ends anyway (a hook cannot loop it forever)."""
MAX_CUT_CONTINUATIONS = 3
"""Model outputs in a row cut at ``max_tokens`` that are answered with ``CUT_NOTE``; one more ends the run."""
CUT_NOTE = ("[Your last output was cut off at the {tokens}-token output limit, so it was not used: any tool call in it "
            "was incomplete and did not run. Continue from where you were, in smaller pieces: write a large file "
            "with several Write/Edit calls, and keep each answer short.]")

@dataclass
class Arrivals:
    """Messages that arrived while the agent worked, for the next model request."""

    texts: list[str] = field(default_factory=list)
    delivered: list[str] = field(default_factory=list)
    """Delivery keys of the inbox entries behind ``texts``, recorded with the message that carries them."""
    taken: Callable[[], None] = lambda: None
    """Called once that message is durably recorded: the entries may leave the inbox."""


Inbound = Callable[[], Arrivals]
"""Returns what arrived since the last call (possibly nothing)."""


@dataclass
class AgentRun:
    """How a run ended."""

    text: str
    stop_reason: str
    """``end_turn``, or an AgentStop reason: max_turns, token_budget, wall_time, interrupted, tool_errors."""
    turns: int = 0
    usage: Usage = field(default_factory=Usage)
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.stop_reason == "end_turn"


@dataclass(frozen=True)
class RunningAgent:
    """The agent a tool call belongs to, as the loop runs it (the Agent tool forks from it)."""

    spec: AgentSpec
    conversation: Conversation


@dataclass
class AgentSpec:
    """What varies between kinds of agents: data, not branches in the loop."""

    provider: ModelProvider
    tools: Sequence[Tool[BaseModel]]
    system: str = ""
    limits: Limits = field(default_factory=Limits)
    gate: ToolGate | None = None
    max_tokens: int | None = None
    """Output tokens a response may have; None: the model's own limit (``swarm.models.catalog``)."""
    compaction: CompactionPolicy | None = field(default_factory=CompactionPolicy)
    """When the conversation is summarised to fit the model's window (``agent.compaction``); None: never."""
    effort: Effort | None = None
    """How hard the model thinks (a definition's ``effort``, ``swarm run --effort``); None: the model's default."""
    reminder: str = ""
    """The definition's ``critical_system_reminder``: sent after every step's tool results (``reminder_block``)."""


def run_agent(spec: AgentSpec, conversation: Conversation, ctx: ToolContext,
              inbound: Inbound | None = None) -> AgentRun:
    """Run until the model ends its turn or a limit, error streak or cancel stops it.

    ``conversation`` must end with the user message to answer. Model errors
    (``ModelError``) propagate; everything a tool does wrong goes back to the model.
    """
    current = list(spec.tools)  # read once a turn: a live list (MCP tools) changes only between turns
    tools = {tool.name: tool for tool in current}
    specs = [tool.spec() for tool in current]
    ctx.turn.running = RunningAgent(spec, conversation)
    started = time.monotonic()
    usage, turns, error_streak, cut = Usage(), 0, 0, 0
    kept_going = 0  # times a Stop hook kept this run going (see _stop_hooks)
    output_limit = spec.max_tokens or model_info(spec.provider.model).max_output
    try:
        while True:
            if ctx.turn.cancel.is_set():
                raise Interrupted("cancelled before the next model call")
            spec.limits.check(turns=turns, usage=usage, started=started)
            usage = usage + compact_if_due(spec.compaction, spec.provider, conversation, system=spec.system,
                                           tools=specs, effort=spec.effort, before=lambda: _pre_compact(spec, ctx),
                                           stop=ctx.turn.interrupt)
            response, compacted = _call(spec, conversation, specs, output_limit, ctx)
            usage = usage + compacted
            turns += 1
            usage = usage + response.usage
            if response.stop_reason == "refusal":
                conversation.add(_text_only(response.message(), "(refused)"), usage=response.usage)
                raise ModelStopped("refusal", "the model declined to continue (stop_reason refusal)")
            if response.stop_reason == "max_tokens":
                cut += 1
                conversation.add(_text_only(response.message(), "(output cut off)"), usage=response.usage)
                if cut > MAX_CUT_CONTINUATIONS:
                    raise ModelStopped("max_tokens", f"the model's output was cut at {output_limit} tokens "
                                                     f"{cut} times in a row")
                conversation.add_user_text(CUT_NOTE.format(tokens=output_limit))
                continue
            cut = 0
            assistant = response.message()
            if not assistant.content:
                assistant = Message(role="assistant", content=[TextBlock(text="(no content)")])
            conversation.add(assistant, usage=response.usage)
            calls = assistant.tool_uses()
            if not calls:
                feedback = _stop_hooks(spec, conversation, ctx, assistant.text(), kept_going)
                if feedback is None:
                    return AgentRun(assistant.text(), "end_turn", turns, usage)
                kept_going += 1
                conversation.add_user_text(feedback)
                continue
            conversation.make_durable()  # a tool acts only on input that is on disk (see Conversation.add)
            results, ended = _run_calls(calls, tools, ctx, spec.gate)
            error_streak = error_streak + 1 if all(isinstance(r, MalformedCall) for r in results) else 0
            arrivals = inbound() if inbound is not None else Arrivals()
            extra = [*arrivals.texts, *([reminder_block(spec.reminder)] if spec.reminder else [])]
            conversation.add(Message(role="user", content=[*results, *(TextBlock(text=t) for t in extra)]),
                             delivered=arrivals.delivered)
            arrivals.taken()
            if ended is not None:
                raise ended
            limit = spec.limits.max_consecutive_tool_errors
            if limit and error_streak >= limit:
                raise TooManyToolErrors(error_streak)
    except (AgentStop, AnswerInterrupted) as caught:  # an interrupt cut a model's answer (or summary) short
        stop = caught if isinstance(caught, AgentStop) else Interrupted(str(caught))
        log.info("agent stopped", extra={"reason": stop.reason, "turns": turns})
        if conversation.transcript is not None:
            conversation.transcript.event("stop", reason=stop.reason, detail=str(stop))
        return AgentRun(conversation.last_text(), stop.reason, turns, usage, str(stop))


def reminder_block(text: str) -> str:
    """A definition's critical reminder as the block that follows each step's tool results."""
    return f"<system-reminder>\n{text}\n</system-reminder>"


def _call(spec: AgentSpec, conversation: Conversation, specs: list[ToolSpec],
          output_limit: int, ctx: ToolContext) -> tuple[ModelResponse, Usage]:
    """The model's answer to the conversation, and the usage of a compaction it took.

    A prompt too long for the window is compacted, whatever the threshold,
    and sent once more; a second refusal, or a summary that fails, is the
    run's ``PromptTooLong``.
    """
    def request() -> ModelRequest:
        return ModelRequest.of(system=spec.system, messages=conversation.messages, tools=specs,
                               max_tokens=output_limit, effort=spec.effort)

    def answer() -> ModelResponse:
        return spec.provider.complete(request(), ctx.turn.interrupt)  # an interrupt cuts it short

    try:
        return answer(), Usage()
    except PromptTooLong:
        if spec.compaction is None:
            raise
        threshold = spec.compaction.threshold(spec.provider.model)
        _pre_compact(spec, ctx)
        summary = compact(spec.provider, conversation, system=spec.system, tools=specs, threshold=threshold,
                          effort=spec.effort, stop=ctx.turn.interrupt)
        if summary is None:
            raise
    log.info("prompt too long: compacted, trying once more")
    return answer(), summary


def _pre_compact(spec: AgentSpec, ctx: ToolContext) -> None:
    """The agent's ``PreCompact`` hooks, just before its conversation is summarised (they cannot stop it)."""
    hooks = ctx.services.hooks
    if hooks is not None and hooks.active("PreCompact", "auto"):
        running = ctx.turn.running
        hooks.fire("PreCompact", target="auto", transcript=running.conversation.transcript if running else None,
                   permission_mode=spec.gate.mode if spec.gate is not None else "bypassPermissions", cwd=ctx.cwd,
                   trigger="auto", custom_instructions="")


def _stop_hooks(spec: AgentSpec, conversation: Conversation, ctx: ToolContext, text: str,
                kept_going: int) -> str | None:
    """The agent's ``Stop`` (a subagent's ``SubagentStop``) hooks on the turn it ended: None lets it end; else what
    keeps it working (a hook's exit 2 or ``decision: "block"``, with its reason), for the model as the next message.
    ``stop_hook_active`` tells a hook it kept this run going already, so it can let it end; a hook that kept it
    going ``MAX_STOP_HOOK_BLOCKS`` times in this run is not asked again (the run ends, a note says so)."""
    hooks = ctx.services.hooks
    if hooks is None or not hooks.active(hooks.stop_event):
        return None
    active = kept_going > 0
    if kept_going >= MAX_STOP_HOOK_BLOCKS:
        hooks.note(f"{hooks.stop_event} hooks kept the agent going {kept_going} times; it stops now")
        return None
    outcome = hooks.fire(hooks.stop_event, transcript=conversation.transcript,
                         permission_mode=spec.gate.mode if spec.gate is not None else "bypassPermissions",
                         cwd=ctx.cwd, stop_hook_active=active, last_assistant_message=text)
    if outcome.stop or not outcome.blocked:
        return None
    return f"{hooks.stop_event} hook feedback:\n{outcome.reason}"


def _text_only(message: Message, empty: str) -> Message:
    """``message`` without its tool calls (a cut message's calls have partial input: never run, never sent back)."""
    kept = [block for block in message.content if isinstance(block, TextBlock) and block.text]
    return Message(role="assistant", content=kept or [TextBlock(text=empty)])


def _run_calls(calls: list[ToolUseBlock], tools: dict[str, Tool[BaseModel]], ctx: ToolContext,
               gate: ToolGate | None) -> tuple[list[ToolResultBlock], EndRun | None]:
    """Run each call in order; once cancelled or ended by a tool, the rest get an error result."""
    results: list[ToolResultBlock] = []
    ended: EndRun | None = None
    for call in calls:
        if ended is not None or ctx.turn.cancel.is_set():
            results.append(ToolResultBlock(tool_use_id=call.id, is_error=True,
                                           content="not run: the agent was asked to stop"))
            continue
        try:
            results.append(execute(call, tools, ctx, gate))
        except EndRun as end:
            results.append(ToolResultBlock(tool_use_id=call.id, content=str(end)))
            ended = end
    return results, ended
