"""The full set of tools a swarm agent may hold, in the order the model sees them.

One list for every kind of agent: ``swarm run``'s main agent, a teammate, and
(filtered by ``swarm.agent.toolpool``) each subagent. Fresh instances each
call: some tools keep per-instance state (Bash's log directory, Grep's backend).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from swarm.agent.coordinator import coordinator_mode
from swarm.agent.subagents import forks_enabled
from swarm.agent.skills import SkillCatalog
from swarm.agent.tools import core_tools
from swarm.agent.tools.agent_tool import AgentTool, TaskOutput, TaskStop
from swarm.agent.tool_api.base import Tool, input_schema
from swarm.agent.tools.messaging import SendMessage
from swarm.agent.tools.skill_tool import SkillTool
from swarm.agent.tools.tasks import task_tools


def agent_tools(skills: SkillCatalog, env: Mapping[str, str], *, messaging: SendMessage | None = None) -> list[Tool[Any]]:
    """Core tools, SendMessage (``messaging``, or a plain one), Agent, Skill, the task list, TaskOutput, TaskStop.

    The Agent tool's text follows the mode ``env`` sets (forks on or off, coordinator mode), never the agent
    definitions: those reach the model as an attachment (``swarm.agent.agent_listing``).
    """
    agent = AgentTool(forks=forks_enabled(env), coordinator=coordinator_mode(env))
    return [*core_tools(), messaging or SendMessage(), agent, SkillTool(skills),
            *task_tools(), TaskOutput(), TaskStop()]


def preload_schemas() -> None:
    """Build the input schema of every tool ``agent_tools`` hands out (``tool_api.base.input_schema`` keeps it on
    the model class), as the CLI server does before it forks: a teammate forked from it builds none of its own."""
    for tool in (*core_tools(), *task_tools()):
        input_schema(tool.input_model)
    for kind in (SendMessage, AgentTool, SkillTool, TaskOutput, TaskStop):
        input_schema(kind.input_model)
