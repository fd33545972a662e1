"""What a tool may know about the agent running it: who it is, this turn's state, and the services it may use.

``ToolContext`` has three parts, each with one way of changing:

- ``identity`` (``AgentIdentity``, frozen): cwd, name, team, write roots,
  pane, the agent types it may start. Decided when the agent is assembled
  (``swarm.agent.assembly``); replaced whole only when a lead creates or
  deletes its team (``with_team``).
- ``turn`` (``TurnState``): cancellation and interruption, the rules a skill
  granted for the rest of the turn, the running agent. The loop and the
  session that runs it change these.
- ``services`` (``AgentServices``, frozen): the team's mailbox, a solo session's task list, what starts
  children, the team a lead controls, the model switch — each behind a small
  protocol here, so no tool module needs the modules that provide them.

Background processes a tool started (``background``) belong to the agent, not
a turn: its owner stops them in its ``finally``.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from swarm.agent.conversation import Conversation
from swarm.agent.hooks.session import AgentHooks
from swarm.agent.limits import Limits
from swarm.agent.sandbox import Sandbox
from swarm.agent.tool_api.walking import within_roots
from swarm.core.mailbox import Mailbox
from swarm.core.tasks import TaskStore
from swarm.models.base import Effort


class ToolError(Exception):
    """A tool failed in a way the model should hear about and can react to."""


@dataclass(frozen=True)
class AgentIdentity:
    """Who the agent is and where it may work; fixed for its life (a lead's team aside: ``with_team``)."""

    cwd: Path
    name: str = "agent"
    team: str | None = None
    write_roots: Sequence[Path] | None = None
    """Directories Write/Edit may touch (kept as a tuple); None means anywhere."""
    pane_id: str = ""
    backend_type: str = ""
    color: str | None = None
    subagent: bool = False
    """A subagent or fork child: its parent's background agents are not its own (TaskOutput, TaskStop refuse)."""
    fork: bool = False
    """A fork child (or anything one started): it may not start agents (the Agent tool refuses). Set where the
    child's identity is built (``run_child``), never read from its conversation, which compaction rewrites."""
    spawnable: frozenset[str] | None = None
    """Subagent types this agent may start (a definition's ``Agent(Explore, Plan)``); None: any."""

    def __post_init__(self) -> None:
        if self.write_roots is not None:
            object.__setattr__(self, "write_roots", tuple(self.write_roots))


class RunningSpec(Protocol):
    """The parts of a running agent's spec a tool reads (a fork copies them)."""

    @property
    def tools(self) -> Sequence[Any]: ...

    @property
    def system(self) -> str: ...

    @property
    def limits(self) -> Limits: ...

    @property
    def effort(self) -> Effort | None: ...


class Running(Protocol):
    """The agent a tool call belongs to (``swarm.agent.loop.RunningAgent``)."""

    @property
    def spec(self) -> RunningSpec: ...

    @property
    def conversation(self) -> Conversation: ...


@dataclass
class TurnState:
    """What changes while the agent runs: set by its session and its loop, read by tools."""

    cancel: threading.Event = field(default_factory=threading.Event)
    """Set to stop the loop before its next model call (shutdown, SIGINT)."""
    interrupt: threading.Event = field(default_factory=threading.Event)
    """Set (with ``cancel``) to stop what runs now, not after it: a running command is killed (the person's Ctrl-C)."""
    granted_rules: list[str] = field(default_factory=list)
    """Allow rules for the rest of this turn (an active skill's ``allowed-tools``); the gate adds them."""
    asked_rules: list[str] = field(default_factory=list)
    """Ask rules for the call under way only (a PreToolUse hook answered ``ask``); the gate adds them."""
    running: Running | None = None
    """The agent this call belongs to (its spec and conversation), set by ``run_agent``."""
    completed_tasks: list[str] = field(default_factory=list)
    """Ids of the tasks this agent completed with TaskUpdate and still holds, oldest first (its subagents share
    the list); a teammate's session clears it when a turn starts and reports the turn's in its idle notification."""


class ChildAgents(Protocol):
    """What starts an agent's subagents (``swarm.agent.subagents.AgentHost``)."""

    @property
    def model(self) -> str:
        """The parent's model."""
        ...


class TeamControl(Protocol):
    """What a lead agent may do with its team (``swarm.runtime.lead.LeadTeam``)."""

    @property
    def team(self) -> str | None:
        """The team this lead leads, once created."""
        ...

    def create(self, name: str, description: str | None, ctx: ToolContext) -> str: ...

    def delete(self, ctx: ToolContext) -> str: ...

    def spawn(self, ctx: ToolContext, *, name: str, prompt: str, agent_type: str | None, model: str | None,
              runtime: str | None, isolation: str | None, plan_mode_required: bool, mode: str | None,
              cwd: str | None, host: str | None = None, labels: list[str] | None = None) -> str:
        """Start teammate ``name``: on this machine, or with ``host``/``labels`` on a host (a PostgreSQL team)."""
        ...

    def answer_plan(self, request_id: str, approve: bool, feedback: str | None, mode: str | None) -> str: ...

    def request_shutdown(self, name: str, reason: str | None) -> str: ...

    def merge(self, names: list[str], into: str | None, test: str | None) -> str:
        """Run the merge queue on teammates' branches; what happened, for the model."""
        ...


class ModelSwitch(Protocol):
    """The agent's provider, when a skill may switch its model for the rest of the turn (``TurnModel``)."""

    @property
    def model(self) -> str: ...

    def use(self, model: str) -> None: ...

    def reset(self) -> None: ...


@dataclass(frozen=True)
class AgentServices:
    """What the agent may use beyond its own tools; None where its role has none."""

    mailbox: Mailbox | None = None
    """The team's mailbox when the agent is in a team (SendMessage, the task tools)."""
    agents: ChildAgents | None = None
    """What this agent may start children with (the Agent tool); None: no subagents here."""
    team_control: TeamControl | None = None
    """The team this agent leads (TeamCreate, teammates through Agent, shutdown and plan answers); None: no team."""
    models: ModelSwitch | None = None
    sandbox: Sandbox | None = None
    """Where the agent's Bash commands run (``swarm.agent.sandbox``); None: unsandboxed. Its subagents share it."""
    session_tasks: TaskStore | None = None
    """The task list of the main agent's session (its subagents share it), used by the task tools while the
    agent is in no team; a team's list replaces it for as long as the agent is in one. None: no solo list."""
    hooks: AgentHooks | None = None
    """The agent's hooks (``swarm.agent.hooks``): settings files' and its definition's; None: no hooks."""


@dataclass
class ToolContext:
    """What a tool may know about the agent running it (see the module docstring for the three parts)."""

    identity: AgentIdentity
    services: AgentServices = field(default_factory=AgentServices)
    turn: TurnState = field(default_factory=TurnState)
    background: list[subprocess.Popen[bytes]] = field(default_factory=list)
    """Background processes started by tools; the agent's owner stops them."""
    background_logs: Path | None = None
    """The directory their output goes to (made by the first one; removed when they are stopped)."""

    @property
    def cwd(self) -> Path:
        return self.identity.cwd

    def with_team(self, team: str | None, name: str, mailbox: Mailbox | None) -> None:
        """The agent joined (or left) ``team`` as ``name``: a lead's TeamCreate and TeamDelete."""
        self.identity = replace(self.identity, team=team, name=name)
        self.services = replace(self.services, mailbox=mailbox)

    def resolve(self, file_path: str) -> Path:
        """``file_path`` made absolute against ``cwd`` (no symlink resolution)."""
        path = Path(file_path).expanduser()
        return path if path.is_absolute() else (self.identity.cwd / path)

    def check_writable(self, path: Path) -> None:
        """Raise ToolError if ``path`` lies outside every write root."""
        roots = self.identity.write_roots
        if roots is None or within_roots(path, list(roots)):
            return
        raise ToolError(f"{path} is outside the directories this agent may write ({', '.join(map(str, roots))})")
