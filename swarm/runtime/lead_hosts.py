"""A lead model's teammate on another machine: ``Agent(host=…)`` / ``Agent(labels=[…])`` (``LeadTeam.spawn``).

The lead's side of the placement is ``runtime/hosts/place.py`` (a signed
request a host takes); this module is what the model may ask of it. The mode
and directory were narrowed by ``LeadTeam`` exactly as for a teammate on this
machine; here the model is refused what a host cannot carry yet rather than
silently losing it (the person's sandbox, plan mode, a Claude Code session), a
file team, and a host that is not there (at once, rather than after the
placement's wait).
"""

from __future__ import annotations

from pathlib import Path

from swarm.agent.tool_api.context import ToolError
from swarm.core.home import Home
from swarm.core.protocol import CLAUDE_RUNTIME
from swarm.core.sandbox_config import SandboxSettings
from swarm.errors import SwarmError
from swarm.runtime.hosts.place import host_rows, place
from swarm.runtime.spawn import wait_joined


def refusal(*, runtime: str | None, plan_mode_required: bool, sandbox: SandboxSettings | None) -> str | None:
    """Why a teammate with these settings cannot run on a host yet (None: it can)."""
    if runtime == CLAUDE_RUNTIME:
        return 'runtime "claude" runs on this machine only; leave out host/labels or runtime'
    if plan_mode_required:
        return "plan_mode_required is not carried to a host yet; leave out host/labels to start it here"
    if sandbox is not None:
        return ("this session sandboxes every teammate (--sandbox) and a host does not apply that sandbox yet; "
                "start it on this machine (leave out host/labels)")
    return None


def check_hosts(home: Home, team: str, host: str | None, labels: list[str]) -> None:
    """ToolError unless a live host of ``team``'s database can take the teammate (named, or with ``labels``)."""
    rows = host_rows(home, team)
    live = [h for h in rows.hosts() if not h.lost]
    names = ", ".join(h.name + (f" [{','.join(h.labels)}]" if h.labels else "") for h in live) or "none"
    if host is not None and host not in [h.name for h in live]:
        raise ToolError(f"no live host {host!r} in team {team!r}'s database (live hosts: {names}); leave out host "
                        "to start the teammate on this machine")
    if host is None and not any(set(labels) <= set(h.labels) for h in live):
        raise ToolError(f"no live host has all the labels {', '.join(labels)} (live hosts: {names})")


def place_teammate(home: Home, team: str, name: str, prompt: str, *, host: str | None, labels: list[str],
                   agent_type: str | None, model: str | None, mode: str, cwd: Path, playbook: Path | None,
                   backend: str, timeout: float) -> str:
    """Place teammate ``name`` on a host for the lead model; what happened, for the model (ToolError if not)."""
    try:
        check_hosts(home, team, host, labels)
        member = place(home, team, name, prompt, host=host, labels=labels, prompt_author="model",
                       agent_type=agent_type or "general-purpose", model=model, permission_mode=mode,
                       backend=backend, playbook=playbook, cwd=cwd, timeout=timeout)
        wait_joined(home, team, [name])
    except SwarmError as exc:
        raise ToolError(f"could not start teammate {name!r} on a host: {exc}") from exc
    return (f"Started teammate {name!r} (agent id {member.agent_id}) on host {member.host}. It works on its prompt "
            f"and messages you when it is done or blocked; message it with SendMessage(to={name!r}).")
