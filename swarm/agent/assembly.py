"""The one agent assembler: what every kind of agent is, built from a definition (or none) in one place.

Every role calls ``assemble`` — a process's main agent (``swarm run``, the
lead), a teammate, a subagent — with the definition it runs as, where it
sits (``Seat``: role, cwd, environment, skills) and what it inherits from
whoever starts it (``Parent``: model, write roots, permission gate). It
returns an ``AssembledAgent``: the tool list, the system prompt, the model,
the write roots, the agent types it may start, the gate, the turn limit.
A fork is not assembled: it is a copy of its parent
(``swarm.agent.subagents.plan_fork``).

The rules, each stated once here:

- **model**: ``swarm.models.aliases.agent_model`` (explicit ask >
  definition > parent; aliases expanded; an offline parent keeps its children
  offline);
- **tools**: the process's full list (then its MCP tools, re-read each turn), cut by the definition's ``tools`` /
  ``disallowedTools`` through ``swarm.agent.toolpool.tool_pool`` (a subagent
  also passes the three gates; a main agent or teammate does not), plus the
  tools the role always keeps (a lead's Team tools, a teammate's messaging
  and task tools, the plan tool);
- **permission mode**: permissions only narrow. A subagent runs in its
  parent's mode when that is kept (``PARENT_MODES_KEPT``: a definition does
  not narrow it, as in Claude Code), else in the narrower of its parent's
  mode and its definition's ``permissionMode`` — a child of an agent in plan
  mode stays in plan mode, and a definition never widens its parent's mode;
  a read-only definition wraps the gate read-only (``swarm.agent.read_only``);
- **hooks**: the definition's frontmatter ``hooks:`` (``swarm.agent.hooks``), for the agent's lifetime only;
  a subagent's ``Stop`` hooks fire as ``SubagentStop``;
- **effort**: an explicit ask (``swarm run --effort``) > the definition's
  ``effort`` > the parent's;
- **write roots**: the parent's (or the person's), plus the definition's
  memory directory (``swarm.agent.memory.with_memory``);
- **system prompt**: the definition's body + environment + memory + preloaded
  skills (``swarm.agent.prompts.agent_system_prompt``; the built-in guide's
  body is built now from the person's configuration: ``swarm.agent.guide``), or swarm's own prompt
  (``system_prompt``: working guidance, environment) when there is no
  definition; a main agent that holds the team tools (``prompts.is_lead``)
  gets the lead's section (``LEAD``), a teammate the team section
  (``TEAMMATE``), the same for every teammate: its name and team go into its
  first message (``AssembledAgent.introduction``), so teammates of one
  definition and team send the same system prompt and share its cache;
- **coordinator mode** (``swarm.agent.coordinator``): a main agent keeps only
  Agent, SendMessage and TaskStop, and its prompt is the coordinator's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from swarm.agent.builtin_agents import GUIDE_TYPE
from swarm.agent.coordinator import COORDINATOR_PROMPT, COORDINATOR_TOOLS, coordinator_mode
from swarm.agent.definition_model import GENERAL_PURPOSE_TYPE
from swarm.agent.definitions import (
    AgentCatalog,
    AgentDefinition,
    load_agents,
)
from swarm.agent.executor import ToolGate
from swarm.agent.guide import guide_prompt
from swarm.agent.mcp.tools import LiveTools, McpToolset
from swarm.agent.hooks.config import HookSet, definition_hooks
from swarm.agent.memory import memory_prompt, with_memory
from swarm.agent.permissions.policy import narrowest
from swarm.agent.prompts import (
    LEAD,
    TEAMMATE,
    agent_system_prompt,
    environment,
    is_lead,
    system_prompt,
    teammate_introduction,
)
from swarm.agent.read_only import read_only_gate
from swarm.agent.skills import SkillCatalog, load_skills, preload_text
from swarm.agent.toolpool import tool_pool
from swarm.agent.tool_api.base import Tool
from swarm.models.aliases import agent_model
from swarm.models.base import Effort

log = logging.getLogger(__name__)

Role = Literal["main", "teammate", "subagent"]

PARENT_MODES_KEPT = ("bypassPermissions", "acceptEdits")
"""A parent in one of these modes passes it on: a child's definition does not narrow it."""


@dataclass(frozen=True)
class Catalogs:
    """The agent definitions and skills an agent sees from its cwd (its worktree, for a teammate that has one)."""

    agents: AgentCatalog
    skills: SkillCatalog

    @classmethod
    def load(cls, cwd: Path, env: Mapping[str, str], *, cli_json: str | None = None,
             note: Callable[[str], None] | None = None) -> Catalogs:
        """Definitions and skills for ``cwd``; each warning (a bad file, say) goes to ``note`` (default: the log)."""
        catalogs = cls(load_agents(cwd, env=env, cli_json=cli_json), load_skills(cwd, env=env))
        for warning in [*catalogs.agents.warnings, *catalogs.skills.warnings]:
            (note or _log_warning)(warning)
        return catalogs

    @classmethod
    def empty(cls) -> Catalogs:
        return cls(AgentCatalog(definitions={}, warnings=[]), SkillCatalog(skills={}, warnings=[]))


@dataclass(frozen=True)
class Seat:
    """Where an agent is built: its role, its cwd, the process environment and the skills it may preload."""

    role: Role
    cwd: Path
    env: Mapping[str, str]
    skills: SkillCatalog
    note: Callable[[str], None] = field(default=lambda text: _log_warning(text))
    """Where remarks for the person go (a definition's ``skills:`` naming no skill)."""


@dataclass(frozen=True)
class Parent:
    """What an agent inherits: from the agent that starts it, or for a process's own agent from the person."""

    model: str | None
    """The parent's model; None for a process's own agent (its provider's default then)."""
    write_roots: list[Path] | None
    """Where the parent may write (None: anywhere)."""
    gate: ToolGate | None = None
    """The parent's permission gate (None: every call runs)."""
    effort: Effort | None = None
    """How hard the parent's model thinks (None: the model's default)."""


@dataclass(frozen=True)
class TeamSeat:
    """A teammate's place in its team: its name and team open its first message, ``extra`` ends its system prompt."""

    name: str
    team: str
    extra: str = ""
    """Role text added last (plan mode's note)."""


@dataclass
class AssembledAgent:
    """What the loop needs to run one agent (``swarm.agent.loop.AgentSpec`` is made from it)."""

    definition: AgentDefinition | None
    tools: Sequence[Tool[Any]]
    """Its tools; with MCP servers a ``LiveTools`` (its own tools, then the MCP tools it may use, re-read per turn)."""
    system: str
    model: str | None
    """The model to make the provider for (None: the provider's default)."""
    write_roots: list[Path] | None
    spawnable: frozenset[str] | None
    """Agent types it may start (``Agent(Explore, Plan)`` in its definition); None: any."""
    gate: ToolGate | None
    max_turns: int
    """Most model calls the definition allows; 0: no limit of its own."""
    omit_instructions: bool
    """Leave CLAUDE.md out of its context block (the definition's ``omitClaudeMd``)."""
    introduction: str = ""
    """What opens its first message's context block: a teammate's name and team (not in the system prompt, so
    teammates of one definition and team share it and its cache); "" for other agents."""
    effort: Effort | None = None
    """How hard its model thinks (``swarm.agent.loop.AgentSpec.effort``); None: the model's default."""
    reminder: str = ""
    """Sent after each of its tool results (the definition's ``critical_system_reminder``); "": none."""
    hooks: HookSet = field(default_factory=HookSet)
    """Its definition's ``hooks:`` (a subagent's ``Stop`` as ``SubagentStop``), for its lifetime only: added to the
    settings files' hooks where the agent's ``AgentHooks`` are made, dropped with them when it ends."""


def assemble(definition: AgentDefinition | None, seat: Seat, parent: Parent, *, tools: Sequence[Tool[Any]],
             kept: Sequence[Tool[Any]] = (), kept_names: Sequence[str] = (), asked_model: str | None = None,
             also_preload: Sequence[str] = (), team: TeamSeat | None = None,
             background: bool = False, asked_effort: Effort | None = None,
             mcp: McpToolset | None = None) -> AssembledAgent:
    """The agent ``definition`` makes in ``seat`` under ``parent`` (see the module docstring for each rule).

    ``tools``: every tool this process can give an agent, fresh, in the
    order the model sees them; ``kept`` (objects) and ``kept_names`` survive
    the definition's cut. ``asked_model``: an explicit choice (``--model``,
    a teammate's ``model``, the Agent tool's ``model``). ``also_preload``:
    skills preloaded beside the definition's (a team file's ``skills``).
    ``background``: a subagent that runs in the background (gate 3).
    ``asked_effort``: an explicit effort (``--effort``). ``mcp``: the MCP tools the agent may see; they
    follow its own tools, through the same cut, taken at each turn's start (``swarm.agent.mcp.tools``).
    """
    as_definition = definition is not None and not (seat.role == "teammate"
                                                    and definition.name == GENERAL_PURPOSE_TYPE)
    mode = child_mode(parent.gate, definition) if seat.role == "subagent" and definition is not None else None
    chosen, spawnable = list(tools), None
    if definition is not None and as_definition:
        pool = tool_pool([t.name for t in tools], tools=definition.tools, disallowed=definition.disallowed_tools,
                         builtin=definition.builtin, background=background, main_thread=seat.role != "subagent",
                         permission_mode=mode)
        keep = {id(t) for t in kept}
        chosen = [t for t in tools if t.name in pool.names or id(t) in keep or t.name in kept_names]
        spawnable = pool.spawnable
    coordinating = seat.role == "main" and coordinator_mode(seat.env)
    if coordinating:  # the coordinator only starts, continues and stops workers
        chosen = [t for t in chosen if t.name in COORDINATOR_TOOLS]
    model = agent_model(env=seat.env, asked=asked_model,
                        definition_model=definition.model if definition is not None and as_definition else None,
                        parent_model=parent.model, subagent=seat.role == "subagent")
    preload = _preload(definition, also_preload, seat)
    names = [t.name for t in chosen]
    lead = seat.role == "main" and is_lead(names)
    if coordinating:
        system = "\n\n".join((COORDINATOR_PROMPT, environment(seat.cwd, model=model or "default", tools=names)))
    elif definition is not None and as_definition:
        body = (guide_prompt(definition.prompt, seat.cwd, seat.env)
                if definition.builtin and definition.name == GUIDE_TYPE else definition.prompt)
        system = agent_system_prompt(body, seat.cwd, model=model or "default", tools=names,
                                     memory=memory_prompt(definition, seat.cwd, env=seat.env), skills=preload)
        roles = (LEAD if lead else "", TEAMMATE if team is not None else "", team.extra if team else "")
        system = "\n\n".join(p for p in (system, *roles) if p)
    else:
        system = system_prompt(seat.cwd, model=model or "default", tools=names, lead=lead, teammate=team is not None)
        system = "\n\n".join(p for p in (system, team.extra if team else "", preload) if p)
    holds: Sequence[Tool[Any]] = chosen
    if mcp is not None:
        def cut(name: str) -> bool:
            """The definition's tools / disallowedTools, for an MCP tool (they pass the gates)."""
            if definition is None or not as_definition:
                return True
            return bool(tool_pool([name], tools=definition.tools, disallowed=definition.disallowed_tools,
                                  builtin=definition.builtin, background=background,
                                  main_thread=seat.role != "subagent", permission_mode=mode).names)

        holds = LiveTools(chosen, mcp, cut)
    return AssembledAgent(
        definition=definition, tools=holds, system=system, model=model,
        write_roots=with_memory(parent.write_roots, definition, seat.cwd, env=seat.env),
        spawnable=spawnable, gate=_gate(parent.gate, definition, mode),
        max_turns=definition.max_turns or 0 if definition is not None else 0,
        omit_instructions=bool(definition is not None and definition.omit_claude_md),
        introduction=teammate_introduction(team.name, team.team) if team is not None else "",
        effort=asked_effort or (definition.effort if definition is not None and as_definition else None)
        or parent.effort,
        reminder=definition.critical_system_reminder if definition is not None and as_definition else "",
        hooks=_hooks(definition if as_definition else None, seat))


def child_mode(gate: ToolGate | None, definition: AgentDefinition) -> str | None:
    """A subagent's permission mode: the parent's when kept or the definition names none, else the narrower of the
    two (a definition asks for less, never for more). None: no gate, and the definition names no mode."""
    if gate is None:
        return definition.permission_mode
    if definition.permission_mode is None or gate.mode in PARENT_MODES_KEPT:
        return gate.mode
    return narrowest(gate.mode, definition.permission_mode)


def _gate(gate: ToolGate | None, definition: AgentDefinition | None, mode: str | None) -> ToolGate | None:
    """The parent's gate in the agent's mode, read-only when the definition is."""
    if gate is not None and mode is not None and mode != gate.mode:
        gate = gate.with_mode(mode)
    return read_only_gate(gate, definition)


def _preload(definition: AgentDefinition | None, also: Sequence[str], seat: Seat) -> str:
    """The text of the skills the definition (and ``also``) preload; a name that is no skill is a remark."""
    names = list(dict.fromkeys([*(definition.skills if definition else []), *also]))
    text, warnings = preload_text(names, seat.skills, where=definition.origin if definition else "")
    for warning in warnings:
        seat.note(warning)
    return text


def _hooks(definition: AgentDefinition | None, seat: Seat) -> HookSet:
    """The definition's ``hooks:``; an entry that cannot be read is a remark."""
    if definition is None:
        return HookSet()
    found = definition_hooks(definition, subagent=seat.role == "subagent")
    for warning in found.warnings:
        seat.note(warning)
    return HookSet(found.hooks)


def _log_warning(text: str) -> None:
    log.warning("%s", text)
