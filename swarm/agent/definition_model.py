"""What an agent definition is: the data one ``run_agent`` runs every kind of agent from (DESIGN.md).

Where definitions come from (files, ``--agents``, the built-ins) is
``swarm.agent.definitions``; the built-ins are ``swarm.agent.builtin_agents``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from swarm.models.base import Effort

Source = Literal["built-in", "user", "project", "cli"]
GENERAL_PURPOSE_TYPE = "general-purpose"
"""The built-in agent with every tool: the Agent tool's default type, and a teammate's role label."""


class AgentDefinition(BaseModel):
    """One kind of agent. ``tools`` None or ``["*"]`` means every tool the caller offers."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str = ""
    prompt: str = ""
    """The system prompt's body; empty means swarm's ``prompts.BASE``."""
    tools: list[str] | None = None
    disallowed_tools: list[str] = []
    model: str | None = None
    """An alias (sonnet/opus/haiku), a model id, or ``inherit``; None = inherit."""
    permission_mode: str | None = None
    max_turns: int | None = None
    effort: Effort | None = None
    """How hard the model thinks (``swarm.models.api_shapes.thinking_params``); None: the parent's."""
    background: bool = False
    isolation: Literal["worktree"] | None = None
    color: str | None = None
    memory: Literal["user", "project", "local"] | None = None
    skills: list[str] = []
    mcp_servers: list[str | dict[str, Any]] = []
    """``mcpServers:``: a server's name (the parent's connection, shared) or ``{name: config}`` (started for this
    agent and closed when it ends); read by ``swarm.agent.mcp.agent_servers``."""
    required_mcp_servers: list[str] = []
    """``requiredMcpServers:``: servers the agent cannot run without (it waits up to 30 s for each, then fails)."""
    omit_claude_md: bool = False
    """Skip the instruction files (CLAUDE.md ...) in the context block; git status and date stay."""
    read_only: bool = False
    critical_system_reminder: str = ""
    """Text sent again after every tool result of this agent, in a ``<system-reminder>`` block (frontmatter
    ``criticalSystemReminder``, or Claude Code's ``criticalSystemReminder_EXPERIMENTAL``): the rule the agent
    must not drift from (Verification: verify, never fix). "": none."""
    """Bash runs only read-only commands, Write and Edit never (built-in Explore and Plan; ``swarm.agent.read_only``)."""
    source: Source = "built-in"
    path: Path | None = None
    overrides: Source | None = None
    """The source of the same-named definition this one replaced, if any."""
    extra: dict[str, Any] = {}

    @property
    def builtin(self) -> bool:
        return self.source == "built-in"

    @property
    def origin(self) -> str:
        """Where it was written, for a warning about it: its file, else ``--agents NAME`` or ``built-in NAME``."""
        return str(self.path) if self.path else f"{'--agents' if self.source == 'cli' else self.source} {self.name}"
