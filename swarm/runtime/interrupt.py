"""Interrupt a teammate's running turn from outside its pane, the way a person's Ctrl-C in the pane does.

One mechanism: the teammate's process gets the SIGINT its pane's Ctrl-C
sends (``MemberKind.interrupt``; ``swarm.teammate.__main__`` reads SIGINT as
"stop the running turn": the turn ends ``interrupted``, a running command is
killed, a wait for an answer ends, the teammate stays and waits for its next
message). Used by the interactive session's teammate view (``interactive/focus.py``)
and the watchdog (``runtime/watchdog.py``).
"""

from __future__ import annotations

from collections.abc import Mapping

from swarm.core.home import Home
from swarm.core.teams import TeamStore
from swarm.errors import NotFoundError
from swarm.runtime.member_kinds import Machine, member_kind


def interrupt_turn(home: Home, team: str, name: str, env: Mapping[str, str] | None = None) -> bool:
    """Interrupt ``name``'s running turn: True when it was busy and reached, False when it runs no turn.

    NotFoundError for a name not in the team; BackendError for a member swarm cannot reach (not its own)."""
    member = TeamStore(home).get(team).member(name)
    if member is None:
        raise NotFoundError(f"no teammate {name!r} in team {team!r}")
    if member.status != "busy":
        return False
    return member_kind(member, Machine(dict(env or {}), home)).interrupt()
