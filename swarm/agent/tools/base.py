"""What a tool is: a name, a description, a pydantic input model, and ``run``.

The input model's JSON schema is what the model sees. ``run`` returns the text
of the tool result, or raises ``ToolError`` whose message goes back to the
model as an error result (never a crash of the loop).
"""

from __future__ import annotations

import subprocess
import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Generic, TypeVar

from pydantic import BaseModel

from swarm.agent.tools.walking import within_roots
from swarm.models.base import ToolSpec

if TYPE_CHECKING:
    from swarm.agent.loop import RunningAgent
    from swarm.agent.subagents import AgentHost
    from swarm.agent.tools.team_tools import TeamControl
    from swarm.agent.turn_model import TurnModel
    from swarm.core.mailbox import Mailbox

I = TypeVar("I", bound=BaseModel)


class ToolError(Exception):
    """A tool failed in a way the model should hear about and can react to."""


@dataclass
class ToolContext:
    """What a tool may know about the agent running it."""

    cwd: Path
    agent_name: str = "agent"
    team: str | None = None
    write_roots: list[Path] | None = None
    """Directories Write/Edit may touch; None means anywhere."""
    background: list[subprocess.Popen[bytes]] = field(default_factory=list)
    """Background processes started by tools; the loop's owner stops them."""
    mailbox: Mailbox | None = None
    """The team's mailbox when the agent is a teammate (SendMessage needs it)."""
    cancel: threading.Event = field(default_factory=threading.Event)
    """Set to stop the loop before its next model call (shutdown, SIGINT)."""
    interrupt: threading.Event = field(default_factory=threading.Event)
    """Set (with ``cancel``) to stop what runs now, not after it: a running command is killed (the person's Ctrl-C)."""
    pane_id: str = ""
    backend_type: str = ""
    color: str | None = None
    running: RunningAgent | None = None
    """The agent this call belongs to (its spec and conversation), set by ``run_agent``."""
    agents: AgentHost | None = None
    """What this agent may start children with (the Agent tool); None: no subagents here."""
    spawnable: frozenset[str] | None = None
    """Subagent types this agent may start (a definition's ``Agent(Explore, Plan)``); None: any."""
    subagent: bool = False
    """A subagent or fork child: its parent's background agents are not its own (TaskOutput, TaskStop refuse)."""
    granted_rules: list[str] = field(default_factory=list)
    """Allow rules for the rest of this turn (an active skill's ``allowed-tools``); the gate adds them."""
    team_control: TeamControl | None = None
    """The team this agent leads (TeamCreate, teammates through Agent, shutdown and plan answers); None: no team."""
    models: TurnModel | None = None
    """The agent's provider, when a skill may switch its model for the rest of the turn."""
    completed_tasks: list[str] = field(default_factory=list)
    """Ids of the tasks this agent completed with TaskUpdate and still holds, oldest first (its subagents share
    the list); a teammate's session clears it when a turn starts and reports the turn's in its idle notification."""

    def resolve(self, file_path: str) -> Path:
        """``file_path`` made absolute against ``cwd`` (no symlink resolution)."""
        path = Path(file_path).expanduser()
        return path if path.is_absolute() else (self.cwd / path)

    def check_writable(self, path: Path) -> None:
        """Raise ToolError if ``path`` lies outside every write root."""
        if self.write_roots is None or within_roots(path, self.write_roots):
            return
        roots = ", ".join(str(r) for r in self.write_roots)
        raise ToolError(f"{path} is outside the directories this agent may write ({roots})")


class Tool(ABC, Generic[I]):
    """Base class for tools; subclasses set the class variables and ``run``."""

    name: ClassVar[str]
    description: ClassVar[str]
    input_model: ClassVar[type[BaseModel]]
    read_only: ClassVar[bool] = False
    _spec: ToolSpec | None = None

    def spec(self) -> ToolSpec:
        """The tool as the model sees it (its schema is built once per tool object)."""
        if self._spec is None:
            schema = self.input_model.model_json_schema()
            schema.pop("title", None)
            listing = self.listing()
            description = f"{self.description}\n\n{listing}" if listing else self.description
            self._spec = ToolSpec(name=self.name, description=description, input_schema=schema)
        return self._spec

    def listing(self) -> str:
        """Text appended to the description, fixed for the tool object (e.g. the choices it offers)."""
        return ""

    @abstractmethod
    def run(self, args: I, ctx: ToolContext) -> str:
        """Do the work; return the result text or raise ToolError."""
