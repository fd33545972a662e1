"""The Agent tool, and TaskOutput / TaskStop for background subagents.

Agent only routes (seed 000, "the decision tree in call()"), in this order:

1. ``team_name`` + ``name`` (or ``name`` alone from a lead: the team it
   leads, else a new ``session-<8 hex>`` team) → a teammate, started by the
   lead's ``TeamControl`` (``ctx.services.team_control``: ``swarm run``'s lead, see
   ``swarm.runtime.lead``) in the team it leads. A teammate process cannot
   start teammates, nor can an agent that leads no team (or another team):
   each is a tool error saying what to use instead. Never in coordinator
   mode (``swarm.agent.coordinator``): ``team_name`` is a tool error there.
2. ``subagent_type`` ``"fork"``, or omitted, with forks enabled
   (``SWARM_FORK_SUBAGENT`` not ``0``) → a fork of this agent; inside a fork
   child, a tool error. ``"fork"`` with forks off is a tool error too.
3. Otherwise the definition named by ``subagent_type`` (default
   ``general-purpose``, in coordinator mode ``worker``); unknown or not allowed here → a tool error listing
   the ones that are.
4. ``isolation`` (or the definition's) picks a worktree; ``run_in_background``
   (default: true for a named agent, as in Claude Code; or the definition's
   ``background``) picks the background path. ``model`` and ``effort`` go to
   the definition's child (``plan_definition``); a fork keeps its parent's.

Running a child is ``swarm.agent.subagents.run_child`` in every case.

The tool's text depends only on the mode (forks on, off, coordinator), never on
the definitions: the agent types reach the model as an attachment
(``swarm.agent.agent_listing``), so the tools part of a request stays cached.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Literal

from pydantic import Field

from swarm.agent.background import BackgroundAgent
from swarm.agent.coordinator import WORKER_TYPE
from swarm.agent.definition_model import GENERAL_PURPOSE_TYPE
from swarm.agent.subagents import (
    FORK_REFUSED,
    FORK_TYPE,
    AgentHost,
    ChildPlan,
    LinkedCancel,
    launch,
    plan_definition,
    plan_fork,
    result_text,
    run_child,
)
from swarm.agent.tool_api.base import Tool
from swarm.agent.tool_api.context import ToolContext, ToolError
from swarm.agent.tool_api.inputs import NoneOmitted, PosInt, ToolInput
from swarm.errors import UsageError
from swarm.models.base import Effort
from swarm.models.catalog import ALIASES, check_name

DEFAULT_OUTPUT_WAIT_MS = 30_000
MAX_OUTPUT_WAIT_MS = 600_000


MODEL_CHOICES: list[str] = [*ALIASES, "inherit"]
"""What the schema offers for ``model``: the aliases, or the parent's model (a full id is accepted too)."""


class AgentInput(ToolInput):
    description: str = Field(description="A short (3-5 word) description of the task.")
    prompt: str = Field(description="The task for the agent to perform.")
    subagent_type: str | NoneOmitted = Field(
        default=None, description=f'The type of specialized agent to use, or "{FORK_TYPE}" to fork yourself: the '
        "child inherits this whole conversation and works on the prompt as its directive. Omitted, it forks too "
        "(general-purpose when forks are off).")
    model: str | NoneOmitted = Field(
        default=None, json_schema_extra={"enum": MODEL_CHOICES},
        description="Model for this agent (an alias, or inherit for yours; default: the definition's, else yours). "
        "A fork ignores it and always runs on your model, so that it shares your prompt cache.")
    effort: Effort | NoneOmitted = Field(
        default=None, description="How hard this agent's model thinks (default: the definition's, else yours). "
        "A fork ignores it, as it does model.")
    run_in_background: bool | NoneOmitted = Field(
        default=None, description="Run in the background; you are notified when it completes. Default: true for "
        "an agent with a name (outside a team), false otherwise.")
    name: str | NoneOmitted = Field(
        default=None, description="A name for the agent: SendMessage reaches it by this name (with team_name: a "
        "teammate's name).")
    team_name: str | NoneOmitted = Field(default=None, description="Spawn a teammate in this team (with name).")
    isolation: Literal["worktree"] | NoneOmitted = Field(
        default=None, description='"worktree" runs the agent in a fresh git worktree of this repository.')
    cwd: str | NoneOmitted = Field(default=None, description="Working directory for the agent.")
    plan_mode_required: bool = Field(default=False, description="A teammate must get its plan approved first.")
    mode: str | NoneOmitted = Field(default=None, description="A teammate's permission mode.")
    runtime: Literal["swarm", "claude"] | NoneOmitted = Field(
        default=None, description='A teammate\'s runtime: "swarm" (default) or "claude", a Claude Code CLI session '
        "in its own tmux pane (needs claude and tmux installed).")
    host: str | NoneOmitted = Field(
        default=None, description="Run the teammate on this host (a machine running `swarm host serve` for a team "
        "kept in PostgreSQL) instead of this machine; its code travels through the team's git remote.")
    labels: list[str] | NoneOmitted = Field(
        default=None, description="Run the teammate on any host that has all these labels (instead of host).")


class AgentTool(Tool[AgentInput]):
    name = "Agent"
    description = (
        "Launch a subagent to handle a task on its own and report back. Its final answer is this tool's result, "
        "and only that answer enters your context: delegate work whose steps you do not need to see.\n\n"
        "Which agent: a specialized type (subagent_type) when one matches the task: each has its own tools and "
        "instructions. The types you can start are listed in a <system-reminder> in the conversation (the latest "
        "list counts); general-purpose suits open-ended, multi-step work.\n\n"
        "Do not delegate what you can do in a few tool calls yourself: reading a file you know, one search, a small "
        "edit. Starting an agent costs time and tokens, and you still have to check its answer.\n\n"
        "Writing the prompt: every agent but a fork starts without your conversation, so make the prompt "
        "self-contained: the goal and why it matters, what you already found or ruled out, the files and names "
        "involved, constraints, and exactly what to report back (and how briefly). Say whether it should change "
        "code or only research. Its answer is not shown to the person: pass on what they need to know.\n\n"
        "Independent tasks run in parallel when you make several Agent calls in one message.\n\n"
        "With run_in_background (the default for a named agent) the call returns at once and a "
        "<task-notification> tells you when the agent finishes; do not poll it with TaskOutput or sleep while "
        "waiting: go on with other work, or end your turn. TaskStop stops it; SendMessage to a named one gives it "
        "more work."
    )
    FORKS = (
        f'When to fork (subagent_type "{FORK_TYPE}", or none): when the child needs what you already know. A fork '
        "inherits this whole conversation, your tools and your model, and shares your prompt cache, so its prompt "
        "is a short directive: what to do and what to report, not the background. Fork for open questions and "
        "side work whose intermediate output you do not want in your context; several forks in one message run "
        "in parallel. A fork cannot fork again."
    )
    COORDINATOR = (
        'Start a worker (subagent_type "worker") on one task. Workers always run in the background and cannot '
        "start workers; a <task-notification> tells you when one finishes. Give each a self-contained prompt. "
        "SendMessage to its name or agentId continues it; TaskStop stops it."
    )
    input_model = AgentInput
    read_only = True
    """Starting a child changes nothing by itself; each of the child's calls goes through the gate."""

    def __init__(self, *, forks: bool = True, coordinator: bool = False) -> None:
        self.forks = forks and not coordinator
        self.coordinator = coordinator

    def full_description(self) -> str:
        """The text for this agent's mode, fixed for the process whatever definitions come and go (the types
        themselves travel as an attachment: ``swarm.agent.agent_listing``), so the tools stay cache-identical."""
        if self.coordinator:
            return self.COORDINATOR
        return f"{self.description}\n\n{self.FORKS}" if self.forks else self.description

    def run(self, args: AgentInput, ctx: ToolContext) -> str:
        host = ctx.services.agents
        if host is None:
            raise ToolError("subagents are not available to this agent")
        if self.coordinator and args.team_name is not None:
            raise ToolError("coordinator mode starts workers, not teammates: leave out team_name")
        if not self.coordinator and (args.team_name is not None or _implicit_teammate(args, ctx)):
            return self._teammate(args, ctx)
        if ctx.identity.fork:  # the run's fact, not text in a conversation compaction may have rewritten
            raise ToolError(FORK_REFUSED)
        plan, background = self._plan(host, args, ctx)
        if args.isolation:
            plan.isolation = args.isolation
        if background:
            task = launch(host, ctx, plan)
            return (f"Async agent launched successfully.\nagentId: {task.id}\noutput_file: {task.output_file}\n"
                    "The agent is working in the background. You will be notified automatically when it "
                    "completes; TaskOutput reads its progress, TaskStop stops it"
                    f"{', SendMessage to ' + repr(task.name) + ' gives it more work' if task.name else ''}.")
        outcome = run_child(host, ctx, plan, LinkedCancel(ctx.turn.cancel))
        return result_text(plan, outcome)

    def _teammate(self, args: AgentInput, ctx: ToolContext) -> str:
        control = ctx.services.team_control
        if control is None:
            raise ToolError(_no_team_spawn(ctx))
        if args.team_name is None and control.team is None:
            control.create(session_team_name(), None, ctx)
        team = args.team_name or control.team
        if control.team != team:
            raise ToolError(f"you lead team {control.team!r}, not {args.team_name!r}" if control.team else
                            f"create the team first with TeamCreate(team_name={team!r})")
        if not args.name:
            raise ToolError("a teammate needs a name: pass name with team_name")
        return control.spawn(ctx, name=args.name, prompt=args.prompt, agent_type=args.subagent_type,
                             model=args.model, runtime=args.runtime, isolation=args.isolation, plan_mode_required=args.plan_mode_required,
                             mode=args.mode, cwd=args.cwd, host=args.host, labels=args.labels)

    def _plan(self, host: AgentHost, args: AgentInput, ctx: ToolContext) -> tuple[ChildPlan, bool]:
        if args.model is not None:
            try:
                check_name(args.model)
            except UsageError as exc:
                raise ToolError(str(exc)) from exc
        named_default = args.name is not None  # a named agent runs in the background unless told otherwise
        if args.subagent_type == FORK_TYPE and not host.fork_enabled:
            raise ToolError("forking is off here (SWARM_FORK_SUBAGENT=0, or coordinator mode); pass another subagent_type")
        if args.subagent_type == FORK_TYPE or (args.subagent_type is None and host.fork_enabled):
            if args.cwd is not None:
                raise ToolError("a fork works in your own directory; pass subagent_type to choose another cwd")
            background = named_default if args.run_in_background is None else args.run_in_background
            return plan_fork(host, ctx, args.prompt, args.description), background
        kind = args.subagent_type or (WORKER_TYPE if self.coordinator else GENERAL_PURPOSE_TYPE)
        definition = host.catalog.get(kind)
        allowed = [n for n in host.catalog.names() if ctx.identity.spawnable is None or n in ctx.identity.spawnable]
        if definition is None or kind not in allowed:
            why = "unknown" if definition is None else "not allowed here"
            raise ToolError(f"agent type {kind!r} is {why}; available: {', '.join(allowed) or '(none)'}")
        cwd = _cwd(args.cwd, ctx)
        asked = named_default if args.run_in_background is None else args.run_in_background
        background = asked or definition.background
        plan = plan_definition(host, ctx, definition, prompt=args.prompt, description=args.description,
                               model=args.model, background=background, cwd=cwd, name=args.name,
                               effort=args.effort)
        return plan, background


def session_team_name() -> str:
    """The team a lead's ``Agent(name=...)`` creates when it leads none yet (Claude Code's implicit team)."""
    return f"session-{secrets.token_hex(4)}"


def _implicit_teammate(args: AgentInput, ctx: ToolContext) -> bool:
    """A named agent from a lead (an agent holding a ``TeamControl``) is a teammate even without ``team_name``:
    in the team it leads, else in a new session team."""
    return (args.name is not None and ctx.services.team_control is not None
            and not ctx.identity.subagent)


def _cwd(raw: str | None, ctx: ToolContext) -> Path | None:
    if raw is None:
        return None
    path = ctx.resolve(raw)
    if not path.is_dir():
        raise ToolError(f"cwd {raw!r} is not a directory")
    return path


def _no_team_spawn(ctx: ToolContext) -> str:
    if ctx.services.mailbox is not None:
        return (f"{ctx.identity.name} is a teammate, and only the team lead starts teammates; "
                "ask the lead with SendMessage, or start a subagent without team_name")
    return ("this agent leads no team; create one with TeamCreate first (or start teammates with "
            "`swarm spawn NAME --team TEAM`), or start a subagent without team_name")


class TaskOutputInput(ToolInput):
    task_id: str = Field(description="The agentId of a background agent.")
    block: bool = Field(default=True, description="Wait for the agent to finish (up to timeout).")
    timeout: PosInt | NoneOmitted = Field(
        default=None, description=f"Milliseconds to wait when blocking (default {DEFAULT_OUTPUT_WAIT_MS}, "
        f"max {MAX_OUTPUT_WAIT_MS}).")


class TaskOutput(Tool[TaskOutputInput]):
    name = "TaskOutput"
    description = ("Read a background agent's state: status (running/completed/failed/killed), tokens, tool uses, "
                   "its last activities, and its result once finished. block=true waits for it to finish.")
    input_model = TaskOutputInput
    read_only = True

    def run(self, args: TaskOutputInput, ctx: ToolContext) -> str:
        host, task = _task(ctx, args.task_id, self.name)
        if args.block and task.status == "running":
            wait_ms = min(args.timeout or DEFAULT_OUTPUT_WAIT_MS, MAX_OUTPUT_WAIT_MS)
            host.background.wait(task, wait_ms / 1000)
        return task.describe()


class TaskStopInput(ToolInput):
    task_id: str | NoneOmitted = Field(default=None, description="The agentId or name of the background agent to stop.")
    shell_id: str | NoneOmitted = Field(default=None, description="Deprecated: use task_id instead.")


class TaskStop(Tool[TaskStopInput]):
    name = "TaskStop"
    description = "Stop a background agent after its current step; its state becomes killed."
    input_model = TaskStopInput
    read_only = True

    def run(self, args: TaskStopInput, ctx: ToolContext) -> str:
        task_id = args.task_id or args.shell_id  # shell_id: Claude Code's old name, which models still send
        if not task_id:
            raise ToolError("TaskStop needs task_id: the agentId or name of the background agent to stop")
        host, task = _task(ctx, task_id, self.name)
        if task.status != "running":
            return f"task {task.id} is already {task.status}"
        host.background.stop(task)
        return f"task {task.id} stopped (killed)"


def _task(ctx: ToolContext, task_id: str, tool: str) -> tuple[AgentHost, BackgroundAgent]:
    if ctx.identity.subagent:
        raise ToolError(f"{tool} is for the main agent only: a subagent or fork cannot read or stop its "
                        "parent's background agents")
    host = ctx.services.agents
    if host is None:
        raise ToolError("this agent has no background agents")
    task = host.background.get(task_id)
    if task is None:
        known = ", ".join(t.id for t in host.background.running()) or "none running"
        raise ToolError(f"no background agent {task_id!r} ({known})")
    return host, task
