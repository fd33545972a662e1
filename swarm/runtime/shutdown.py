"""Stop teammates: the shutdown handshake first, force after the timeout.

request -> wait for the process to exit (or a ``shutdown_rejected`` answer) ->
pane/process cleaned up and the member marked inactive. A teammate that has
not exited when the timeout passes gets SIGTERM, then SIGKILL of its whole
process tree, its pane killed, and the lead is told with ``teammate_terminated``.
Either way a stopped teammate's worktree is then settled: removed if
unchanged, kept and reported to the lead if changed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from swarm.core.clock import now_iso, now_ms
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.names import LEAD_NAME
from swarm.core.protocol import (
    Member,
    ShutdownRejected,
    ShutdownRequest,
    frame_text,
    parse_frame,
)
from swarm.core.teams import TeamStore
from swarm.errors import NotFoundError
from swarm.runtime.handles import Backends, handle_of, process_alive
from swarm.runtime.liveness import notify_terminated, reap_dead
from swarm.runtime.worktrees import Worktree, settle

log = logging.getLogger(__name__)

POLL = 0.02
KILL_GRACE = 2.0


@dataclass
class Outcome:
    name: str
    result: str
    """``approved`` (exited by itself), ``rejected``, ``killed``, or ``not_running``."""
    detail: str = ""
    worktree: Worktree | None = None
    """The teammate's worktree after it stopped: ``removed`` (unchanged) or ``changed`` (kept)."""


def live_members(home: Home, team: str, names: Iterable[str] | None = None) -> list[Member]:
    members = [m for m in TeamStore(home).get(team).members if m.name != LEAD_NAME]
    if names is not None:
        wanted = list(names)
        known = {m.name for m in members}
        missing = [n for n in wanted if n not in known]
        if missing:
            raise NotFoundError(f"no teammate {missing[0]!r} in team {team!r}; `swarm status --team {team}` lists them")
        members = [m for m in members if m.name in wanted]
    return members


def shutdown(home: Home, team: str, names: Iterable[str] | None, env: Mapping[str, str], *,
             reason: str | None = None, timeout: float = 30.0) -> list[Outcome]:
    """Ask each named (default: every) teammate to stop; force the ones that do not."""
    reap_dead(home, team)
    members = live_members(home, team, names)
    running = [m for m in members if m.is_active and process_alive(m)]
    outcomes = [Outcome(m.name, "not_running") for m in members if m not in running]
    requests = {m.name: request_shutdown(home, team, m.name, reason) for m in running}
    outcomes += _await(home, team, running, requests, env, timeout)
    return outcomes


def request_shutdown(home: Home, team: str, name: str, reason: str | None) -> str:
    request_id = f"shutdown-{now_ms()}@{name}"
    frame = ShutdownRequest(request_id=request_id, sender=LEAD_NAME, timestamp=now_iso(), reason=reason)
    Mailbox(home, team).send(name, frame_text(frame), sender=LEAD_NAME, summary="shutdown request")
    return request_id


def _await(home: Home, team: str, members: list[Member], requests: dict[str, str],
           env: Mapping[str, str], timeout: float) -> list[Outcome]:
    deadline = time.monotonic() + timeout
    waiting = {m.name: m for m in members}
    outcomes = []
    backends = Backends(env)
    while waiting and time.monotonic() < deadline:
        rejected = _rejections(home, team, requests)
        for name, member in list(waiting.items()):
            if not process_alive(member):
                outcomes.append(_finish(home, team, member, backends, "approved"))
                del waiting[name]
            elif name in rejected:
                outcomes.append(Outcome(name, "rejected", rejected[name]))
                del waiting[name]
        time.sleep(POLL)
    for member in waiting.values():
        outcomes.append(force_stop(home, team, member, env, why=f"did not shut down within {timeout:g}s",
                                   backends=backends))
    return outcomes


def _rejections(home: Home, team: str, requests: dict[str, str]) -> dict[str, str]:
    by_id = {rid: name for name, rid in requests.items()}
    found = {}
    for entry in Mailbox(home, team).read(LEAD_NAME):
        frame = parse_frame(entry.text)
        if isinstance(frame, ShutdownRejected) and frame.request_id in by_id:
            found[by_id[frame.request_id]] = frame.reason
    return found


def _finish(home: Home, team: str, member: Member, backends: Backends, result: str) -> Outcome:
    backends.of(member).stop(handle_of(member), grace=KILL_GRACE)  # pane gone, nothing left behind
    now = TeamStore(home).get(team).member(member.name)
    if now is not None and now.is_active:  # a teammate that exits cleanly has already marked itself
        _mark_stopped(home, team, member.name)
    return Outcome(member.name, result, worktree=settle(home, team, member))


def force_stop(home: Home, team: str, member: Member, env: Mapping[str, str], *, why: str,
               backends: Backends | None = None) -> Outcome:
    """SIGTERM, then SIGKILL the teammate's process tree, kill its pane, tell the lead (once)."""
    flipped = TeamStore(home).deactivate(team, member.name, "killed")  # before the signal: the teammate stays quiet
    (backends or Backends(env)).of(member).stop(handle_of(member), grace=KILL_GRACE)
    if flipped:
        notify_terminated(home, team, f"{member.name} was terminated: {why}")
    return Outcome(member.name, "killed", why, worktree=settle(home, team, member))


def _mark_stopped(home: Home, team: str, name: str, status: str = "stopped") -> None:
    TeamStore(home).update_member(team, name, is_active=False, status=status, last_activity=now_ms())
