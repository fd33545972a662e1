"""From a member entry back to its backend and handle, and liveness checks."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from swarm.backends.base import Backend, Handle
from swarm.backends.procs import is_pid_alive
from swarm.backends.select import make_backend
from swarm.core.protocol import Member


def handle_of(member: Member) -> Handle:
    backend = member.backend_type or "subprocess"
    pane = member.tmux_pane_id if backend == "tmux" else ""
    extra = {"socket": member.tmux_socket} if member.tmux_socket else {}
    return Handle(backend=backend, pid=member.pid, pane_id=pane, extra=extra)


def backend_of(member: Member, env: Mapping[str, str]) -> Backend:
    kind = member.backend_type if member.backend_type in ("tmux", "subprocess") else "subprocess"
    return make_backend(kind, env=env, tmux_socket=member.tmux_socket)


@dataclass
class Backends:
    """One backend object per (kind, tmux server) for a batch of members: the tmux checks run once."""

    env: Mapping[str, str]
    _made: dict[tuple[str | None, str | None], Backend] = field(default_factory=dict)

    def of(self, member: Member) -> Backend:
        key = (member.backend_type, member.tmux_socket)
        if key not in self._made:
            self._made[key] = backend_of(member, self.env)
        return self._made[key]


def process_alive(member: Member) -> bool:
    """True if the member's recorded process still runs (pid reuse ruled out)."""
    if member.pid is None:
        return False
    return is_pid_alive(member.pid, member.proc_start)
