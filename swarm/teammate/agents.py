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
from typing import Any

from swarm.agent.assembly import (
    AssembledAgent,
    Catalogs,
    Parent,
    Seat,
    TeamSeat,
    assemble,
)
from swarm.agent.background import BackgroundAgents, BackgroundAgent, notification_text
from swarm.agent.executor import ToolGate
from swarm.agent.mcp.connections import McpConnections
from swarm.agent.mcp.tools import McpToolset
from swarm.agent.subagents import AgentHost, forks_enabled
from swarm.agent.tool_api.base import Tool
from swarm.agent.tools.messaging import SendMessage, ShutdownAnswerer
from swarm.agent.tools.tasks import TASK_TOOL_NAMES
from swarm.agent.tool_catalog import agent_tools
from swarm.core.frames import BackgroundAgentEnded
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.names import RUNTIME_NAME
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

    def post(self, task: BackgroundAgent) -> None:
        frame = BackgroundAgentEnded(task_id=task.id, status=task.status, text=notification_text(task))
        self.mailbox.send_frame(self.name, frame, sender=RUNTIME_NAME, summary=f"agent {task.id} {task.status}")


def assemble_teammate(config: TeammateConfig, catalogs: Catalogs, env: Mapping[str, str], *,
                   shutdown: ShutdownAnswerer, plan_tool: Tool[Any] | None, extra: str,
                   gate: ToolGate | None, mcp: McpToolset | None = None) -> AssembledAgent:
    """The teammate as an agent, from its ``agent_type`` definition if there is one (``swarm.agent.assembly``).

    An ``agent_type`` that names no definition (or ``general-purpose``) is a
    role label: the teammate gets every tool and swarm's teammate prompt.
    Skills named by the definition or the team file are preloaded into it.
    A teammate writes in its cwd (anywhere in ``bypassPermissions``).
    """
    tools = [*agent_tools(catalogs.skills, env, messaging=SendMessage(shutdown=shutdown)),
             *([plan_tool] if plan_tool else [])]
    definition = catalogs.agents.get(config.agent_type)
    if definition is None:
        log.info("agent type is a role label: no definition of that name", extra={"agent_type": config.agent_type})
    roots = None if config.permission_mode == "bypassPermissions" else [config.cwd]
    return assemble(definition, Seat(role="teammate", cwd=config.cwd, env=env, skills=catalogs.skills),
                    Parent(model=None, write_roots=roots, gate=gate), tools=tools,
                    kept=[plan_tool] if plan_tool else [], kept_names=ALWAYS_KEPT, asked_model=config.model,
                    also_preload=config.skills, team=TeamSeat(name=config.name, team=config.team, extra=extra),
                    mcp=mcp)


def teammate_host(config: TeammateConfig, home: Home, catalogs: Catalogs, env: Mapping[str, str], *,
                  mailbox: Mailbox, provider: ModelProvider, make_provider: Callable[[str], ModelProvider],
                  gate: Any, mcp: McpConnections | None = None) -> AgentHost:
    """What the teammate's subagents are made from; their transcripts go under the teammate's."""
    def make_tools() -> list[Tool[Any]]:
        return agent_tools(catalogs.skills, env)

    transcripts = home.transcript_path(config.team, config.name).parent / config.name / "subagents"
    return AgentHost(catalog=catalogs.agents, env=env, model=provider.model, make_provider=make_provider,
                     make_tools=make_tools, transcript_dir=transcripts,
                     background=BackgroundAgents(InboxSink(mailbox, config.name)), gate=gate,
                     fork_enabled=forks_enabled(env), skills=catalogs.skills, mcp=mcp)
