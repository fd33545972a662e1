"""What a teammate is as an agent: its definition, tools, system prompt, and the subagents it may start.

A teammate is the main agent of its own process: it holds the Agent, Skill,
TaskOutput and TaskStop tools, and its children go through the same
permission gate (a teammate's subagent asks the lead). Its background
subagents report to the teammate's own inbox (``InboxSink``), so the
notification is delivered like any message — durably, exactly once, and
waking a teammate that went idle. Definitions and skills come from the
teammate's cwd (its worktree, when it has one).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swarm.agent.background import BackgroundAgents, BackgroundTask, notification_text
from swarm.agent.definitions import AgentCatalog, AgentDefinition, load_agents
from swarm.agent.memory import memory_prompt
from swarm.agent.prompts import TEAMMATE, agent_system_prompt, system_prompt
from swarm.agent.skills import SkillCatalog, load_skills, preload_text
from swarm.agent.subagents import AgentHost, forks_enabled
from swarm.agent.toolpool import tool_pool
from swarm.agent.tools.agent_tool import GENERAL_PURPOSE
from swarm.agent.tools.base import Tool
from swarm.agent.tools.messaging import SendMessage, ShutdownAnswerer
from swarm.agent.tools.tasks import TASK_TOOL_NAMES
from swarm.agent.toolset import agent_tools
from swarm.core.frames import TaskNotification
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.names import RUNTIME_NAME
from swarm.models.aliases import expand_alias
from swarm.models.base import ModelProvider
from swarm.teammate.config import TeammateConfig

log = logging.getLogger(__name__)

ALWAYS_KEPT = ("SendMessage", *TASK_TOOL_NAMES)
"""Tools a teammate keeps whatever its definition lists: it talks to its team and works the team's task list
(its system prompt tells it to claim tasks with TaskUpdate)."""


class InboxSink:
    """Background subagents of a teammate report to the teammate's own inbox."""

    def __init__(self, mailbox: Mailbox, name: str) -> None:
        self.mailbox = mailbox
        self.name = name

    def post(self, task: BackgroundTask) -> None:
        frame = TaskNotification(task_id=task.id, status=task.status, text=notification_text(task))
        self.mailbox.send_frame(self.name, frame, sender=RUNTIME_NAME, summary=f"agent {task.id} {task.status}")


@dataclass(frozen=True)
class Catalogs:
    """The agent definitions and skills a teammate sees (from its cwd)."""

    agents: AgentCatalog
    skills: SkillCatalog

    @classmethod
    def load(cls, cwd: Path, env: Mapping[str, str]) -> Catalogs:
        catalogs = cls(load_agents(cwd, env=env), load_skills(cwd, env=env))
        for warning in [*catalogs.agents.warnings, *catalogs.skills.warnings]:
            log.warning("%s", warning)
        return catalogs


@dataclass
class TeammateAgent:
    definition: AgentDefinition | None
    tools: list[Tool[Any]]
    system: str
    model: str | None
    """The model the teammate's provider is made for (None: the provider's default)."""


def teammate_agent(config: TeammateConfig, catalogs: Catalogs, env: Mapping[str, str], *,
                   shutdown: ShutdownAnswerer, plan_tool: Tool[Any] | None, extra: str) -> TeammateAgent:
    """The teammate's own tools and system prompt, from its ``agent_type`` definition if there is one.

    An ``agent_type`` that names no definition (or ``general-purpose``) is a
    role label: the teammate gets every tool and swarm's teammate prompt.
    Skills named by the definition or the team file are preloaded into it.
    """
    tools = [*agent_tools(catalogs.agents, catalogs.skills, messaging=SendMessage(shutdown=shutdown)),
             *([plan_tool] if plan_tool else [])]
    definition = catalogs.agents.get(config.agent_type)
    preload = _preloaded(config, definition, catalogs.skills)
    if definition is None or definition.name == GENERAL_PURPOSE:
        if definition is None:
            log.info("agent type is a role label: no definition of that name", extra={"agent_type": config.agent_type})
        system = system_prompt(config.cwd, name=config.name, team=config.team, extra=extra)
        return TeammateAgent(definition=definition, tools=tools, model=config.model,
                             system="\n\n".join(p for p in (system, preload) if p))
    kept = tool_pool([t.name for t in tools], tools=definition.tools, disallowed=definition.disallowed_tools,
                     builtin=definition.builtin, background=False, main_thread=True).names
    tools = [t for t in tools if t.name in kept or t.name in ALWAYS_KEPT or t is plan_tool]
    chosen = definition.model if definition.model and definition.model != "inherit" else None
    model = config.model or (expand_alias(chosen, env) if chosen else None)
    parts = [agent_system_prompt(definition, config.cwd, model=model or "default", tools=[t.name for t in tools],
                                 memory=memory_prompt(definition, config.cwd, env=env), skills=preload),
             TEAMMATE.format(name=config.name, team=config.team), extra]
    return TeammateAgent(definition=definition, tools=tools, model=model,
                         system="\n\n".join(p for p in parts if p))


def _preloaded(config: TeammateConfig, definition: AgentDefinition | None, skills: SkillCatalog) -> str:
    names = [*(definition.skills if definition else []), *config.skills]
    text, warnings = preload_text(list(dict.fromkeys(names)), skills)
    for warning in warnings:
        log.warning("%s", warning)
    return text


def teammate_host(config: TeammateConfig, home: Home, catalogs: Catalogs, env: Mapping[str, str], *,
                  mailbox: Mailbox, provider: ModelProvider, make_provider: Callable[[str], ModelProvider],
                  gate: Any) -> AgentHost:
    """What the teammate's subagents are made from; their transcripts go under the teammate's."""
    def make_tools() -> list[Tool[Any]]:
        return agent_tools(catalogs.agents, catalogs.skills)

    transcripts = home.transcript_path(config.team, config.name).parent / config.name / "subagents"
    return AgentHost(catalog=catalogs.agents, env=env, model=provider.model, make_provider=make_provider,
                     make_tools=make_tools, transcript_dir=transcripts,
                     background=BackgroundAgents(InboxSink(mailbox, config.name)), gate=gate,
                     fork_enabled=forks_enabled(env), skills=catalogs.skills)
