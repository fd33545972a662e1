"""Subagents: one lifecycle for every child an agent starts (sync, background, fork).

The Agent tool only routes (``swarm.agent.tools.agent_tool``). Everything a
child *is* — its system prompt, tools, model, first messages, limits, cwd —
is decided up front into a ``ChildPlan`` by ``plan_fork`` or
``plan_definition``; ``run_child`` then runs any plan the same way, through
the same ``run_agent`` loop as every other agent, and releases what the child
held (its provider, its background commands, its worktree, its inline MCP
servers) in one ``finally``.

Context isolation (what a child shares with its parent):

- messages: a fresh conversation (a fork: a copy of the parent's, ending with
  the parent's assistant message, a placeholder result for each of its tool
  calls — the same text for every child — and the child's directive);
- cancellation, one way: cancelling or interrupting the parent does so to the
  child, a child's end never touches the parent (``LinkedCancel``);
- cwd: the parent's, or one the Agent call names inside the parent's write
  roots (``plan_definition`` refuses any other);
- permissions: the parent's gate, so a teammate's subagent asks the lead like
  the teammate would, in the definition's mode unless the parent's is kept,
  and read-only for a read-only definition (``swarm.agent.read_only``);
  writes stay in the parent's roots (or the child's worktree) plus the
  definition's memory directory. A forked skill is active in its child, so
  the child runs with the skill's ``allowed-tools`` granted
  (``ChildPlan.granted_rules``; a deny rule still wins);
- background agents: the parent's are not the child's — TaskOutput and
  TaskStop refuse in a child (``ToolContext.subagent``), and SendMessage
  from a child does not reach them;
- model: the plan's, or for the rest of the child's run a skill's ``model``
  once the child uses such a skill (its provider is a ``TurnModel``);
- transcript: its own JSONL under the parent's ``transcript_dir``, linked from
  the parent's transcript by a ``subagent`` event.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from swarm.agent.agent_listing import skills_attachment
from swarm.agent.assembly import Parent, Seat, assemble
from swarm.agent.background import BackgroundAgents, BackgroundAgent, Work
from swarm.agent.builtin_agents import ONE_SHOT_TYPES
from swarm.agent.child_progress import ChildProgress, CountedProvider
from swarm.agent.conversation import Conversation
from swarm.agent.coordinator import coordinator_mode
from swarm.agent.definitions import AgentCatalog, AgentDefinition
from swarm.agent.executor import ToolGate
from swarm.agent.hooks.config import HookSet
from swarm.agent.hooks.session import AgentHooks, subagent_hooks
from swarm.agent.instructions import context_block
from swarm.agent.limits import Limits
from swarm.agent.mcp.connections import McpConnections
from swarm.agent.mcp.lifecycle import child_servers
from swarm.agent.loop import AgentRun, AgentSpec, Arrivals, run_agent
from swarm.agent.skills import Skill, SkillCatalog
from swarm.agent.tool_api.base import Tool
from swarm.agent.tool_api.context import (
    AgentServices,
    ToolContext,
    ToolError,
    TurnState,
)
from swarm.agent.tool_api.processes import stop_background
from swarm.agent.transcript import Transcript
from swarm.agent.turn_model import TurnModel
from swarm.errors import ModelError, SwarmError
from swarm.models.base import Effort, ModelProvider
from swarm.models.messages import (
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)

log = logging.getLogger(__name__)

FORK_TYPE = "fork"
"""The ``subagent_type`` that asks for a fork (omitting the type forks too, while forks are on)."""
FORK_TAG = "fork-boilerplate"
FORK_PLACEHOLDER = "Fork started — processing in background"
"""The tool_result every fork child gets for each of the parent's calls: identical, so the prefix is shared."""
FORK_DIRECTIVE_PREFIX = "Your directive: "
FORK_REFUSED = "Fork is not available inside a forked worker. Complete your task directly using your tools."
FORK_RULES = """STOP. READ THIS FIRST.
You are a forked worker process. You are NOT the main agent.
RULES (non-negotiable):
1. You ARE the fork. Do NOT spawn sub-agents; execute directly.
2. Do NOT converse, ask questions, or suggest next steps.
3. Do NOT editorialize or add meta-commentary.
4. USE your tools directly: Bash, Read, Write, etc.
5. If you modify files, commit your changes before reporting. Include the commit hash in your report.
6. Do NOT emit text between tool calls. Use tools silently, then report once at the end.
7. Stay strictly within your directive's scope. If you discover related systems outside your scope,
   mention them in one sentence at most — other workers cover those areas.
8. Keep your report under 500 words unless the directive specifies otherwise. Be factual and concise.
9. Your response MUST begin with "Scope:". No preamble, no thinking-out-loud.
10. REPORT structured facts, then stop.
Output format (plain text labels, not markdown headers):
Scope: <echo back your assigned scope in one sentence>
Result: <the answer or key findings, limited to the scope above>
Key files: <relevant file paths — include for research tasks>
Files changed: <list with commit hash — include only if you modified files>
Issues: <list — include only if there are issues to flag>"""


class LinkedCancel(threading.Event):
    """A child's cancel or interrupt flag: set by itself, or seen set when the parent's is (setting it never sets
    the parent). A ``wait`` ends when either is set (the parent's is looked at every ``POLL`` seconds)."""

    POLL = 0.05

    def __init__(self, parent: threading.Event) -> None:
        super().__init__()
        self._parent = parent

    def is_set(self) -> bool:
        return super().is_set() or self._parent.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.is_set():
            left = self.POLL if deadline is None else min(deadline - time.monotonic(), self.POLL)
            if left <= 0:
                return False
            super().wait(left)
        return True


@dataclass
class AgentHost:
    """What a parent agent offers the children it starts; built once by whoever runs the parent."""

    catalog: AgentCatalog
    env: Mapping[str, str]
    model: str
    """The parent's model (an id, or the scripted model)."""
    make_provider: Callable[[str], ModelProvider]
    make_tools: Callable[[], list[Tool[Any]]]
    """Fresh instances of every tool an agent of this process may hold, in the order the model sees them."""
    transcript_dir: Path
    background: BackgroundAgents
    gate: ToolGate | None = None
    fork_enabled: bool = True
    skills: SkillCatalog = field(default_factory=lambda: SkillCatalog(skills={}, warnings=[]))
    """Skills its children may use (and a definition's ``skills:`` preload from)."""
    plans: dict[str, ChildPlan] = field(default_factory=dict)
    """The plan of each background child, by id, so a finished one can be resumed with a message."""
    note: Callable[[str], None] = field(default=lambda text: log.warning("%s", text))
    """Where remarks for the person go (a definition's ``skills:`` naming no skill); default: the log."""
    effort: Effort | None = None
    """The parent's effort: what a child whose definition names none thinks with."""
    mcp: McpConnections | None = None
    """The parent's MCP connections: its children see their tools, and a definition's ``mcpServers:`` names
    resolve to them (shared, never closed by a child)."""

    def new_id(self) -> str:
        return f"a{secrets.token_hex(6)}"


@dataclass
class ChildPlan:
    """Everything that makes one child what it is: data, not branches in the loop."""

    id: str
    kind: str
    """``fork`` or the definition's name."""
    description: str
    system: str
    tools: Sequence[Tool[Any]]
    model: str
    messages: list[Message]
    cwd: Path
    write_roots: list[Path] | None
    limits: Limits = field(default_factory=Limits)
    isolation: str | None = None
    name: str | None = None
    spawnable: frozenset[str] | None = None
    gate: ToolGate | None = None
    """The parent's gate, seen in the child's permission mode (``child_mode``)."""
    granted_rules: list[str] = field(default_factory=list)
    """Allow rules for the child's whole run: a forked skill's ``allowed-tools`` (the skill is active there)."""
    fork: bool = False
    """A fork of its parent (``plan_fork``): the child's identity says so (``AgentIdentity.fork``) for its whole run."""
    effort: Effort | None = None
    """How hard the child's model thinks (its definition's ``effort``, else its parent's)."""
    reminder: str = ""
    """Its definition's critical reminder, after each of its tool results (``AgentSpec.reminder``)."""
    one_shot: bool = False
    """A one-shot built-in (``ONE_SHOT_TYPES``): its answer goes back without agentId and usage trailer."""
    mcp: McpConnections | None = None
    """The child's own (inline) MCP servers, closed when its run ends (``run_child``'s ``finally``)."""
    hooks: HookSet = field(default_factory=HookSet)
    """Its definition's hooks (``AssembledAgent.hooks``), added to its parent's for its run only."""


@dataclass
class ChildOutcome:
    run: AgentRun
    tool_uses: int
    tokens: int
    duration_ms: int
    note: str = ""
    """What the parent should also know (e.g. a kept worktree)."""


def forks_enabled(env: Mapping[str, str]) -> bool:
    """Forking (an Agent call with ``subagent_type`` "fork" or none) is on unless ``SWARM_FORK_SUBAGENT=0`` or in
    coordinator mode (``swarm.agent.coordinator``: the coordinator only starts workers)."""
    if coordinator_mode(env):
        return False
    return env.get("SWARM_FORK_SUBAGENT", "1").strip() not in ("0", "false", "no", "off")


def fork_directive(prompt: str) -> str:
    return f"<{FORK_TAG}>\n{FORK_RULES}\n</{FORK_TAG}>\n\n{FORK_DIRECTIVE_PREFIX}{prompt}"


def plan_fork(host: AgentHost, parent: ToolContext, prompt: str, description: str) -> ChildPlan:
    """A fork child: the parent's system prompt, tools and whole conversation, then its own directive."""
    running = parent.turn.running
    if running is None or not running.conversation.messages:
        raise ToolError("fork needs the parent's conversation; pass subagent_type to start a fresh agent")
    history = _complete_history(running.conversation.messages)
    last = history[-1]
    placeholders = [ToolResultBlock(tool_use_id=use.id, content=FORK_PLACEHOLDER) for use in last.tool_uses()]
    messages = [*history, Message(role="user", content=[*placeholders, TextBlock(text=fork_directive(prompt))])]
    by_name = {tool.name: tool for tool in host.make_tools()}
    tools = [by_name.get(tool.name, tool) for tool in running.spec.tools]  # the same list, fresh where possible
    return ChildPlan(id=host.new_id(), kind=FORK_TYPE, description=description, system=running.spec.system,
                     tools=tools, model=host.model, messages=messages, cwd=parent.identity.cwd,
                     write_roots=parent.identity.write_roots, limits=running.spec.limits, gate=host.gate, fork=True,
                     effort=running.spec.effort)


def _complete_history(messages: list[Message]) -> list[Message]:
    """The parent's messages up to its last assistant message, without earlier calls that never got results."""
    end = max(i for i, m in enumerate(messages) if m.role == "assistant")
    history = [m.model_copy(deep=True) for m in messages[: end + 1]]
    for index, message in enumerate(history[:-1]):
        if message.role != "assistant" or not message.tool_uses():
            continue
        following = history[index + 1]
        answered = {b.tool_use_id for b in following.content if isinstance(b, ToolResultBlock)}
        kept = [b for b in message.content if not isinstance(b, ToolUseBlock) or b.id in answered]
        message.content = kept or [TextBlock(text="(tool calls that never completed were dropped)")]
    return history


def plan_skill_fork(host: AgentHost, parent: ToolContext, skill: Skill, body: str) -> ChildPlan:
    """A ``context: fork`` skill's child: the skill's ``agent`` definition, and the body as its only message."""
    kind = skill.agent or "general-purpose"
    definition = host.catalog.get(kind)
    if definition is None:
        raise ToolError(f"skill {skill.name} runs with agent {kind!r}, which is unknown; "
                        f"available: {', '.join(host.catalog.names())}")
    plan = plan_definition(host, parent, definition, prompt=body, description=f"skill {skill.name}",
                           model=skill.model, background=False, cwd=None, name=None, context=False)
    return replace(plan, granted_rules=list(skill.allowed_tools))


def plan_definition(host: AgentHost, parent: ToolContext, definition: AgentDefinition, *, prompt: str,
                    description: str, model: str | None, background: bool, cwd: Path | None,
                    name: str | None, context: bool = True, effort: Effort | None = None) -> ChildPlan:
    """A child started from an agent definition: a fresh conversation, its own prompt, tools and model.

    Its first message is the context block, the skills it may use (an attachment, when it has the Skill tool) and
    the prompt; ``context=False`` sends the prompt alone.
    ``effort`` (the Agent call's) wins over the definition's and the parent's.
    A ``cwd`` (the model's choice) must lie inside the parent's write roots: the child's paths, its memory
    directory and its worktree are all read from there.
    """
    workdir = (cwd if cwd is not None else parent.identity.cwd).resolve()
    if cwd is not None:
        try:
            parent.check_writable(workdir)
        except ToolError as exc:
            raise ToolError(f"a subagent's cwd must be a directory you may write: {exc}; "
                            "leave cwd out to start it in your own") from exc
    with child_servers(definition, host.mcp, workdir, host.env, host.note) as (own, toolset):  # the seeds' step 11
        agent = assemble(definition, Seat(role="subagent", cwd=workdir, env=host.env, skills=host.skills,
                                          note=host.note),
                         Parent(model=host.model, write_roots=parent.identity.write_roots, gate=host.gate,
                                effort=host.effort),
                         tools=host.make_tools(), asked_model=model, background=background, asked_effort=effort,
                         mcp=toolset)
    blocks = [TextBlock(text=context_block(workdir, env=host.env, omit_instructions=agent.omit_instructions))]
    skills = skills_attachment(host.skills) if context and any(t.name == "Skill" for t in agent.tools) else ""
    first = Message(role="user", content=[*(blocks if context else []), *([TextBlock(text=skills)] if skills else []),
                                          TextBlock(text=prompt)])  # the skills it may use, not in Skill's text
    return ChildPlan(id=host.new_id(), kind=definition.name, description=description, system=agent.system,
                     tools=agent.tools, model=agent.model or host.model, messages=[first], cwd=workdir,
                     write_roots=agent.write_roots, limits=Limits(max_turns=agent.max_turns),
                     isolation=definition.isolation, name=name, spawnable=agent.spawnable, gate=agent.gate,
                     effort=agent.effort, reminder=agent.reminder, mcp=own, hooks=agent.hooks,
                     one_shot=definition.builtin and definition.name in ONE_SHOT_TYPES)


def launch(host: AgentHost, parent: ToolContext, plan: ChildPlan) -> BackgroundAgent:
    """Start ``plan`` in the background; the parent hears of its end once (see ``swarm.agent.background``)."""
    task = BackgroundAgent(id=plan.id, description=plan.description, agent_type=plan.kind, name=plan.name,
                          output_file=host.transcript_dir / f"agent-{plan.id}.jsonl")
    task.cancel, task.interrupt = _linked(parent)
    return host.background.start(task, _background_work(host, parent, plan, resume=False))


def _linked(parent: ToolContext) -> tuple[LinkedCancel, LinkedCancel]:
    """A child's ``(cancel, interrupt)`` flags: its own, and set whenever its parent's are."""
    return LinkedCancel(parent.turn.cancel), LinkedCancel(parent.turn.interrupt)


def message_child(host: AgentHost, parent: ToolContext, to: str, text: str) -> str | None:
    """Give a background subagent named ``to`` a message: read before its next step if it runs, else it resumes.

    None when ``to`` names no subagent of this agent (the message is for a teammate then).
    """
    task = host.background.get(to)
    if task is None:
        return None
    note = f"<message-from-parent>{text}</message-from-parent>"
    if host.background.deliver(task, note):
        return f"Message queued for {to}: it reads it before its next step."
    plan = host.plans.get(task.id)
    if plan is None:
        raise ToolError(f"{to} cannot be resumed: its plan is gone")
    follow_up = replace(plan, messages=[Message.user_text(note)])
    host.background.resume(task, _linked(parent), _background_work(host, parent, follow_up, resume=True))
    return f"{to} resumed in the background with your message; you will be notified when it completes."


def _background_work(host: AgentHost, parent: ToolContext, plan: ChildPlan, *, resume: bool) -> Work:
    """The body of a background child: the plan first, then a resumed round for messages that came late."""
    host.plans[plan.id] = plan

    def work(task: BackgroundAgent, first: bool) -> str:
        this = plan if first else replace(plan, messages=[Message.user_text("\n\n".join(host.background.drain(task)))])
        outcome = run_child(host, parent, this, task.cancel, task, resume=resume or not first)
        if outcome.run.stop_reason == "interrupted" and task.cancel.is_set():
            return outcome.run.text
        return result_text(plan, outcome)

    return work


def run_child(host: AgentHost, parent: ToolContext, plan: ChildPlan, cancel: threading.Event,
              task: BackgroundAgent | None = None, *, resume: bool = False) -> ChildOutcome:
    """Run ``plan`` to the end: the one lifecycle of every subagent. Resources are released in one ``finally``.

    ``resume`` continues the child's recorded conversation (from its transcript) with ``plan.messages``.
    """
    started = time.monotonic()
    interrupt = task.interrupt if task is not None else LinkedCancel(parent.turn.interrupt)  # TaskStop's too
    transcript = Transcript(host.transcript_dir / f"agent-{plan.id}.jsonl")
    if not resume and parent.turn.running is not None and parent.turn.running.conversation.transcript is not None:
        parent.turn.running.conversation.transcript.event("subagent", agent_id=plan.id, agent_type=plan.kind,
                                                     description=plan.description, transcript=str(transcript.path))
    counter = ChildProgress(task)
    tree: Any = None
    with ExitStack() as stack:
        if plan.mcp is not None:
            stack.callback(plan.mcp.close)  # its inline servers end with it; the parent's shared ones do not
        models = stack.enter_context(_provider(host, plan.model))
        workdir, roots, messages = plan.cwd, plan.write_roots, plan.messages
        if plan.isolation == "worktree":
            tree = stack.enter_context(_isolated(plan))
            workdir, roots = tree.path, [tree.path]
            if plan.fork and not resume:  # its inherited context names the parent's paths
                messages = tree.notice(messages, plan.cwd)
        identity = replace(parent.identity, cwd=workdir, write_roots=roots, spawnable=plan.spawnable, subagent=True,
                           fork=parent.identity.fork or plan.fork)  # state of the run: compaction cannot drop it
        hooks = subagent_hooks(parent.services.hooks, plan.hooks, cwd=workdir, env=host.env, agent_id=plan.id,
                               agent_type=plan.kind, sandbox=parent.services.sandbox, roots=roots)
        ctx = ToolContext(identity, services=AgentServices(mailbox=parent.services.mailbox, agents=host, models=models,
                                                           session_tasks=parent.services.session_tasks, hooks=hooks,
                                                           sandbox=parent.services.sandbox),
                          turn=TurnState(cancel=cancel, interrupt=interrupt, granted_rules=list(plan.granted_rules),
                                         completed_tasks=parent.turn.completed_tasks))
        stack.callback(stop_background, ctx)
        conversation = Conversation.resume(transcript) if resume else Conversation(transcript=transcript)
        conversation.observer = counter.saw
        for message in _started(hooks, plan, messages, transcript, resume):
            conversation.add(message)
        spec = AgentSpec(provider=CountedProvider(models, counter), tools=plan.tools, system=plan.system,
                         limits=plan.limits, gate=plan.gate, effort=plan.effort, reminder=plan.reminder)
        inbound = (lambda: Arrivals(texts=host.background.drain(task))) if task is not None else None
        try:
            run = run_agent(spec, conversation, ctx, inbound=inbound)
        except ModelError as exc:
            raise ToolError(f"the subagent failed: {exc}") from exc
    note = tree.summary if tree is not None else ""  # known once the worktree was settled on leaving
    return ChildOutcome(run=run, tool_uses=counter.tool_uses, tokens=counter.usage.total,
                        duration_ms=int((time.monotonic() - started) * 1000), note=note)


def _started(hooks: AgentHooks | None, plan: ChildPlan, messages: list[Message], transcript: Transcript,
             resume: bool) -> list[Message]:
    """``SubagentStart``: the child's first ``messages``, the last with what its hooks add (their context)."""
    if hooks is None or resume or not messages or not hooks.active("SubagentStart", plan.kind):
        return messages
    outcome = hooks.fire("SubagentStart", target=plan.kind, transcript=transcript,
                         permission_mode=plan.gate.mode if plan.gate is not None else "bypassPermissions")
    if not outcome.context_text:
        return messages
    last = messages[-1]
    return [*messages[:-1], Message(role=last.role, content=[*last.content, TextBlock(text=outcome.context_text)])]


@contextmanager
def _isolated(plan: ChildPlan) -> Iterator[Any]:
    from swarm.agent.isolation import isolated_worktree

    try:
        with isolated_worktree(plan.cwd, plan.id) as tree:
            yield tree
    except SwarmError as exc:
        raise ToolError(f"isolation 'worktree' failed: {exc}") from exc


@contextmanager
def _provider(host: AgentHost, model: str) -> Iterator[TurnModel]:
    """The child's provider: ``model``, or a skill's for the rest of the child's run (it is one turn)."""
    provider = TurnModel(host.make_provider(model), host.make_provider, host.env)
    try:
        yield provider
    finally:
        provider.close()


def result_text(plan: ChildPlan, outcome: ChildOutcome) -> str:
    """What a synchronous call returns to the parent: the child's answer, then its totals."""
    run = outcome.run
    lines = [run.text or "(the subagent gave no final answer)"]
    if not run.ok:
        lines.append(f"(the subagent stopped early: {run.stop_reason}{': ' + run.detail if run.detail else ''})")
    if outcome.note:
        lines.append(outcome.note)
    if plan.one_shot:  # nobody continues or audits a one-shot built-in: its id and totals are tokens for nothing
        return "\n\n".join(lines)
    lines.append(f"agentId: {plan.id}")
    lines.append(f"<usage>total_tokens: {outcome.tokens}\ntool_uses: {outcome.tool_uses}\n"
                 f"duration_ms: {outcome.duration_ms}</usage>")
    return "\n\n".join(lines)
