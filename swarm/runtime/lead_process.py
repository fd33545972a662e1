"""A lead process's life: the signals that end it, and the record of it that its teammates watch.

A lead that swarm started — ``swarm run`` (headless or interactive), a
foreground or headless ``swarm up``, ``swarm demo`` — is one OS process, and
its teammates must not outlive it, however it ends:

- **Signals.** SIGINT (Ctrl-C), SIGTERM (``timeout``, ``kill``, a service
  manager) and SIGHUP (the terminal or tmux pane closed) all mean the same:
  stop, shut the team down (handshake, then force), exit. ``StopSignals``
  installs one handler for the three, for the time the process leads; each
  command passes the handler it always had for Ctrl-C, and a SIGTERM or
  SIGHUP takes the same path. Only a second Ctrl-C aborts the stop; a SIGTERM
  or SIGHUP after any stop signal is ignored (``timeout`` sends its SIGTERM
  to the process and again to its process group). After a SIGHUP the terminal is gone: output
  that went to it goes to ``/dev/null`` from then on, so the shutdown's own
  messages cannot fail it.
- **The record.** ``record_lead`` writes the process's pid and create time
  into the team file (``leadPid``, ``leadProcStart``) when it creates or
  takes the lead of a team, before any teammate starts. It stays when the
  process ends: a teammate that outlived it (one that refused to stop) still
  stops on its own, and a person who takes the team over from the CLI
  (``swarm spawn``, ``swarm up --detach``) forgets a lead that is gone
  (``forget_dead_lead``). A swarm teammate watches that
  process (``swarm.teammate.lead_watch``) and, when it is gone — crashed,
  ``kill -9``, or a reused pid — shuts itself down as if it had approved a
  shutdown. A team a person leads from the CLI (``swarm team create``,
  ``swarm spawn``, ``swarm up --detach``) has no lead process: nothing is
  recorded and its teammates run until they are stopped, as before.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
from collections.abc import Callable
from types import FrameType, TracebackType

from swarm.backends.procs import process_create_time
from swarm.core.home import Home
from swarm.core.frames import build_validators
from swarm.core.protocol import TeamFile
from swarm.core.teams import TeamStore
from swarm.teammate.lead_watch import lead_gone

Handler = Callable[[int, FrameType | None], None]

STOP_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""The signals that end a lead process, all meaning Ctrl-C."""


def interrupt(signum: int, frame: FrameType | None) -> None:
    """The plain Ctrl-C: a ``KeyboardInterrupt`` where the process is."""
    raise KeyboardInterrupt


class StopSignals:
    """``handler`` for every stop signal while the block runs (a context manager); the previous ones after.

    ``received`` names the first stop signal that came (``SIGTERM``...), for
    the exit status and the last line the command prints.
    """

    def __init__(self, handler: Handler = interrupt) -> None:
        self.handler = handler
        self.received: str | None = None
        self._previous: dict[signal.Signals, object] = {}

    def __enter__(self) -> StopSignals:
        build_validators()  # before the handlers: a stop raised inside pydantic's lazy build comes out as SchemaError
        for sig in STOP_SIGNALS:
            self._previous[sig] = signal.signal(sig, self._on_signal)
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)  # type: ignore[arg-type]

    def ignore(self) -> None:
        """From now on a stop signal is ignored (a shutdown that must not be cut short); ``__exit__`` restores."""
        for sig in STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)

    @property
    def by_signal(self) -> bool:
        """Ended by SIGTERM or SIGHUP: not by the person's Ctrl-C (the command exits non-zero)."""
        return self.received in ("SIGTERM", "SIGHUP")

    @property
    def exit_code(self) -> int:
        """128 + the signal's number, as a shell reports a process a signal ended."""
        return 128 + signal.Signals[self.received or "SIGINT"].value

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if signum == signal.SIGHUP:
            detach_terminal()
        if signum != signal.SIGINT and self.received is not None:
            return  # the stop is under way: `timeout` signals the process and then its group, a pane may hang up twice
        if self.received is None or self.received == "SIGINT":
            self.received = signal.Signals(signum).name
        self.handler(signum, frame)


def detach_terminal() -> None:
    """stdout and stderr that were a terminal now go to ``/dev/null``: after a hang-up, writing there fails."""
    with contextlib.suppress(OSError):
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            for fd in (1, 2):
                with contextlib.suppress(OSError):
                    if stat.S_ISCHR(os.fstat(fd).st_mode):
                        os.dup2(null, fd)
        finally:
            os.close(null)


def record_lead(home: Home, team: str) -> None:
    """This process leads ``team`` from now on: its pid and create time go into the team file."""
    pid = os.getpid()
    start = process_create_time(pid)

    def take(current: TeamFile) -> None:
        current.lead_pid, current.lead_proc_start = pid, start

    TeamStore(home).modify(team, take)


def forget_dead_lead(home: Home, team: str) -> None:
    """A person takes the lead of ``team``: a recorded lead process that is gone is forgotten, so the teammates
    the person starts do not stop at once for a lead that died before them."""
    def drop(current: TeamFile) -> None:
        if lead_gone(current):
            current.lead_pid = current.lead_proc_start = None

    if TeamStore(home).exists(team):  # no team: the spawn itself says so
        TeamStore(home).modify(team, drop)
