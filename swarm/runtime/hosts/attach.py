"""``swarm attach`` to a teammate on another host: what to run there instead.

A teammate on a host runs in that host's home, on that host's tmux server (or
as a subprocess there); its entry records what the host knows (``backend``,
``tmuxSocket``, ``tmuxPaneId``: the host's ``spawn`` wrote them). From any
other home ``elsewhere`` says, on one line, the command that attaches on its
host; in the host's own home (the teammate's work directory is this home's and
its process runs here) it returns None and ``swarm attach`` attaches as for a
local teammate.
"""

from __future__ import annotations

import shlex

from swarm.backends.procs import is_pid_alive
from swarm.core.home import Home
from swarm.core.protocol import Member
from swarm.core.text import visible
from swarm.runtime.hosts.serve import work_of


def runs_here(home: Home, team: str, member: Member) -> bool:
    """This home is the host that runs ``member``: its work directory is here and its process runs here."""
    return (member.cwd is not None and member.cwd == str(work_of(home, team, member.name))
            and work_of(home, team, member.name).is_dir()
            and member.pid is not None and is_pid_alive(member.pid, member.proc_start))


def elsewhere(home: Home, team: str, member: Member) -> str | None:
    """Why ``swarm attach`` cannot attach here to ``member`` on another host, and what to run on that host
    (None: a local teammate, or this home is its host)."""
    if member.host is None or runs_here(home, team, member):
        return None
    name = member.name
    if not member.host:
        return f"{name} is still being placed on a host; `swarm status --team {team}` shows where once it runs"
    host = visible(member.host)
    if member.backend_type == "tmux" and member.tmux_pane_id:
        socket = member.tmux_socket
        server = (f" -S {shlex.quote(socket)}" if "/" in socket else f" -L {shlex.quote(socket)}") if socket else ""
        pane = shlex.quote(member.tmux_pane_id)
        return (f"{name} runs on host {host} in tmux; attach on that host: `swarm attach {name} --team {team}` "
                f"(or `tmux{visible(server)} attach -t {visible(pane)}`)")
    return (f"{name} runs on host {host} as a subprocess (no pane); on that host follow it with "
            f"`swarm logs {name} -f --team {team}` (or `swarm top --team {team}`)")
