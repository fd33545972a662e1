"""The swarm home: every path swarm touches is derived here, from one root.

``SWARM_HOME`` or ``--home`` choose the root (default ``~/.swarm``). Names are
validated before they are joined into a path, so nothing is ever created
outside the home.
"""

from __future__ import annotations

import os
from pathlib import Path

from swarm.core.names import validate_name
from swarm.core.rendezvous import CLI_LOCK, CLI_LOG, CLI_SOCKET, DEFAULT_DIR, HOME_VARIABLE, RUN_DIR

TYPE_CHECKING = False  # not ``typing.TYPE_CHECKING``: ``swarm`` finds its CLI server through this module, and
if TYPE_CHECKING:     # importing typing would cost that path ~3 ms (``swarm.cli.entry``)
    from collections.abc import Callable
    from typing import Any, TypeVar

    T = TypeVar("T")

DIR_MODE = 0o700
FILE_MODE = 0o600


def default_root(env: os._Environ[str] | dict[str, str] | None = None) -> Path:
    """``$SWARM_HOME`` if set, else ``~/.swarm`` (the names: ``swarm.core.rendezvous``)."""
    source = os.environ if env is None else env
    value = source.get(HOME_VARIABLE)
    return Path(value).expanduser() if value else Path.home() / DEFAULT_DIR


def ensure_dir(path: Path) -> Path:
    """Create ``path`` and any missing parents, each with mode 0700; return it."""
    if path.is_dir():
        return path
    missing = []
    probe = path
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=DIR_MODE)
        except FileExistsError:
            pass
    return path


class Home:
    """Paths under one swarm home root. Immutable, compared and hashed by root.

    A plain class rather than a dataclass: ``swarm`` finds its CLI server
    through the home before importing anything else, and ``dataclasses``
    alone (with ``inspect``) would cost that path ~7 ms.

    It also carries what this process keeps of the home (``kept``: the view
    of the team files, ``swarm.core.team_view``): a process makes one home
    and passes it down, so every reader of a team shares that view. What is
    kept never changes what a path or a comparison says.
    """

    __slots__ = ("_kept", "root")
    root: Path
    _kept: dict[Any, Any]

    def __init__(self, root: Path) -> None:
        object.__setattr__(self, "root", root)
        object.__setattr__(self, "_kept", {})

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Home is immutable: cannot set {name!r}")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Home) and other.root == self.root

    def __hash__(self) -> int:
        return hash(self.root)

    def __repr__(self) -> str:
        return f"Home(root={self.root!r})"

    def kept(self, make: Callable[[Home], T]) -> T:
        """The one ``make(self)`` this home keeps for the process (made on first use), e.g. the team view.

        Two threads that race here may each make one; the one stored last
        serves from then on, and one dropped that way only costs a read.
        """
        found = self._kept.get(make)
        if found is None:
            found = make(self)
            self._kept[make] = found
        return found  # type: ignore[no-any-return]

    @classmethod
    def from_env(cls, override: str | os.PathLike[str] | None = None) -> Home:
        root = Path(override).expanduser() if override else default_root()
        return cls(root.absolute())

    @property
    def teams_dir(self) -> Path:
        return self.root / "teams"

    @property
    def tasks_root(self) -> Path:
        return self.root / "tasks"

    @property
    def sessions_dir(self) -> Path:
        """swarm: the interactive sessions' transcripts (``<id>.jsonl``) and the prompt history."""
        return self.root / "sessions"

    def team_dir(self, team: str) -> Path:
        return self.teams_dir / validate_name(team, "team name")

    def config_path(self, team: str) -> Path:
        return self.team_dir(team) / "config.json"

    def inboxes_dir(self, team: str) -> Path:
        return self.team_dir(team) / "inboxes"

    def inbox_path(self, team: str, agent: str) -> Path:
        return self.inboxes_dir(team) / f"{validate_name(agent, 'agent name')}.json"

    def logs_dir(self, team: str) -> Path:
        return self.team_dir(team) / "logs"

    def log_path(self, team: str, agent: str) -> Path:
        return self.logs_dir(team) / f"{validate_name(agent, 'agent name')}.log"

    def transcripts_dir(self, team: str) -> Path:
        return self.team_dir(team) / "transcripts"

    def activity_path(self, team: str, agent: str) -> Path:
        """swarm: a teammate's busy/idle state, last activity and tokens (rewritten every turn, not fsynced)."""
        return self.team_dir(team) / "activity" / f"{validate_name(agent, 'agent name')}.json"

    def gate_dir(self, team: str) -> Path:
        """swarm: the team's gate on model requests: budget, slots in flight, shared backoff, spend
        (``swarm.models.team_gate``)."""
        return self.team_dir(team) / "gate"

    def restarts_dir(self, team: str) -> Path:
        """swarm: the restart records of the team's teammates that have a restart policy (``swarm.runtime.restart``)."""
        return self.team_dir(team) / "restart"

    def restart_path(self, team: str, agent: str) -> Path:
        """swarm: how a teammate with a restart policy is started again, and its restarts so far."""
        return self.restarts_dir(team) / f"{validate_name(agent, 'agent name')}.json"

    def events_path(self, team: str, agent: str) -> Path:
        """swarm: a teammate's live events (``agent/live_events.py``): what its pane, ``swarm logs -f`` and
        ``swarm top`` show; rotated at a bound, not fsynced."""
        return self.team_dir(team) / "events" / f"{validate_name(agent, 'agent name')}.jsonl"

    def transcript_path(self, team: str, agent: str) -> Path:
        return self.transcripts_dir(team) / f"{validate_name(agent, 'agent name')}.jsonl"

    @property
    def run_dir(self) -> Path:
        """swarm: rendezvous files of this home's live processes (the CLI server's socket and lock)."""
        return self.root / RUN_DIR

    @property
    def cli_socket_path(self) -> Path:
        """swarm: the CLI server's unix socket (``swarm.cli.forkserver``)."""
        return self.run_dir / CLI_SOCKET

    @property
    def cli_lock_path(self) -> Path:
        """swarm: flocked by the live CLI server for its whole life; holds its pid."""
        return self.run_dir / CLI_LOCK

    @property
    def cli_log_path(self) -> Path:
        """swarm: the CLI server's own errors (a served command's go to its caller's stderr)."""
        return self.run_dir / CLI_LOG

    @property
    def claude_config_dir(self) -> Path:
        """swarm: the Claude Code config dir of claude teammates (its ``teams``/``tasks`` link to the home's)."""
        return self.root / "claude"

    def tasks_dir(self, team: str) -> Path:
        return self.tasks_root / validate_name(team, "team name")
