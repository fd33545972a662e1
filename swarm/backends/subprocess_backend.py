"""Teammates as plain child processes, output appended to a log file.

Each teammate runs in its own session (``start_new_session``), so its whole
process group can be signalled without touching the caller. The ``Popen``
objects stay inside the backend instance: ``is_alive`` and ``stop`` poll them,
which reaps the child, so a long-lived coordinator collects no zombies. A
handle that came from another process (read back from the team file) has no
``Popen`` here and is checked through psutil, guarded against pid reuse by the
create time recorded in ``handle.create_time``.
"""

from __future__ import annotations

import logging
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from swarm.backends.base import Handle, LaunchSpec
from swarm.backends.procs import (
    check_cwd,
    is_pid_alive,
    kill_tree,
    launch_env,
    process_create_time,
    resolve_program,
)
from swarm.core.home import FILE_MODE, ensure_dir
from swarm.core.rendezvous import SWITCH, DetachLost, fork_detached, home_root
from swarm.core.names import agent_id
from swarm.errors import BackendError

log = logging.getLogger(__name__)

NAME = "subprocess"
_REAP_WAIT = 1.0
"""Seconds ``stop`` waits to reap our own child after the tree is gone."""


def open_log(path: Path) -> int:
    """An append-only fd on ``path`` (file 0600, missing parents 0700)."""
    ensure_dir(path.parent)
    try:
        return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
    except OSError as exc:
        raise BackendError(f"cannot open log file {str(path)!r}: {exc.strerror}") from exc


class SubprocessBackend:
    """Start teammates with ``subprocess.Popen`` in their own session."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self._inherited: Mapping[str, str] = dict(os.environ if env is None else env)
        self._children: dict[int, subprocess.Popen[bytes]] = {}

    @property
    def name(self) -> str:
        return NAME

    def start(self, spec: LaunchSpec) -> Handle:
        if not spec.argv:
            raise BackendError(f"cannot start {spec.name}: the command is empty")
        env = launch_env(self._inherited, spec.env)
        cwd = check_cwd(spec.cwd)
        forked = self._fork_served(spec, cwd, env)
        if forked is not None:
            log.info("forked by the CLI server",
                     extra={"team": spec.team, "agent_id": agent_id(spec.name, spec.team), "pid": forked})
            return Handle(backend=NAME, pid=forked, pane_id="", create_time=process_create_time(forked))
        program = resolve_program(spec.argv[0], path=env.get("PATH"), cwd=cwd)
        popen = self._spawn(spec, program, cwd, env)
        self._children[popen.pid] = popen
        log.info(
            "started subprocess",
            extra={"team": spec.team, "agent_id": agent_id(spec.name, spec.team), "pid": popen.pid},
        )
        return Handle(backend=NAME, pid=popen.pid, pane_id="", create_time=process_create_time(popen.pid))

    def _fork_served(self, spec: LaunchSpec, cwd: Path, env: dict[str, str]) -> int | None:
        """The pid of ``spec.served`` forked loose by the home's running CLI server; None when there is none (or it
        is off, stale, another installation's): then ``argv`` is started, and its launcher starts a server."""
        if spec.served is None or env.get(SWITCH, "1") == "0":
            return None
        log_fd = open_log(spec.log_path)
        null = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        try:
            return fork_detached(home_root(env), spec.served, env, str(cwd), (null, log_fd, log_fd))
        except DetachLost as exc:
            raise BackendError(f"cannot start {spec.name}: {exc}; `swarm status` shows whether it runs") from exc
        finally:
            os.close(null)
            os.close(log_fd)

    def _spawn(
        self, spec: LaunchSpec, program: str, cwd: Path, env: dict[str, str]
    ) -> subprocess.Popen[bytes]:
        log_fd = open_log(spec.log_path)
        try:
            return subprocess.Popen(
                spec.argv,
                executable=program,
                stdin=subprocess.DEVNULL,
                stdout=log_fd,
                stderr=subprocess.STDOUT,
                cwd=cwd,
                env=env,
                start_new_session=True,
                close_fds=True,
            )
        except OSError as exc:
            raise BackendError(f"cannot start {spec.argv[0]!r}: {exc.strerror or exc}") from exc
        finally:
            os.close(log_fd)  # the child holds its own copy

    def is_alive(self, handle: Handle) -> bool:
        if handle.pid is None:
            return False
        popen = self._children.get(handle.pid)
        if popen is not None and popen.poll() is not None:  # reaps it
            self._children.pop(handle.pid, None)
            return False
        alive = is_pid_alive(handle.pid, handle.create_time)
        if not alive and popen is not None and popen.poll() is not None:  # it died since the poll above
            self._children.pop(handle.pid, None)
        return alive

    def stop(self, handle: Handle, grace: float = 3.0) -> None:
        if handle.pid is None:
            return
        popen = self._children.pop(handle.pid, None)
        kill_tree(handle.pid, grace, handle.create_time)
        if popen is not None:
            _reap(popen)
        log.info("stopped subprocess", extra={"pid": handle.pid})

    def describe(self, handle: Handle) -> str:
        return f"subprocess (pid {handle.pid})"


def _reap(popen: subprocess.Popen[bytes]) -> None:
    try:
        popen.wait(timeout=_REAP_WAIT)
    except subprocess.TimeoutExpired:
        log.warning("child outlived sigkill; left unreaped", extra={"pid": popen.pid})
