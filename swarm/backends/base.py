"""The interface every process backend implements.

A backend starts a teammate from an argument list (never a shell string),
tells whether it is alive, and stops it: SIGTERM to the whole process tree,
SIGKILL after a grace period, the pane removed. ``stop`` is safe to call twice
and on something already dead.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True)
class LaunchSpec:
    """Everything needed to start one teammate process."""

    argv: list[str]
    """Program and arguments, executed directly (no shell)."""
    env: dict[str, str]
    """Variables to set for the process on top of a minimal base (PATH, HOME, ...)."""
    cwd: Path
    team: str
    name: str
    log_path: Path
    """Where stdout/stderr go for backends without a terminal."""
    color: str | None = None
    served: list[str] | None = None
    """The same command as the home's CLI server runs it (``swarm _teammate ARGS``), when it can: a backend
    with no terminal to give the process asks a running server to fork it loose
    (``swarm.core.rendezvous.fork_detached``: no launcher process beside it) and starts ``argv`` only when
    none answers. None: always ``argv``."""


@dataclass(frozen=True)
class Handle:
    """How to find a started teammate again (also stored in the team file)."""

    backend: str
    """``tmux`` or ``subprocess``."""
    pid: int | None = None
    pane_id: str = ""
    """tmux pane id such as ``%12``; empty for subprocesses."""
    create_time: float | None = None
    """When ``pid`` started: a pid with another start time is a reused one, never signalled.

    The same fact as a member's ``proc_start`` in the team file."""
    extra: dict[str, str] = field(default_factory=dict)


class Backend(Protocol):
    @property
    def name(self) -> str: ...

    def start(self, spec: LaunchSpec) -> Handle:
        """Start the process; raise BackendError with a one-line reason on failure."""
        ...

    def is_alive(self, handle: Handle) -> bool:
        """``procs.is_pid_alive`` on the handle's pid and create time (and, for tmux, its pane is there)."""
        ...

    def stop(self, handle: Handle, grace: float = 3.0) -> None:
        """SIGTERM the process tree, SIGKILL what is left after ``grace`` s, remove the pane."""
        ...

    def describe(self, handle: Handle) -> str:
        """A short human description, e.g. ``tmux pane %3 (pid 123)``."""
        ...
