"""``swarm up``: bring a whole team up from a team file, run it, bring it down.

``start_team`` creates (or reuses) the team, writes its policy and rules, and
spawns every member — all or nothing. ``run_headless`` coordinates until the
work settles or a timeout, shuts everything down and returns a report.
``stop_team`` is ``swarm down``.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from swarm.core.clock import now_ms
from swarm.core.home import Home
from swarm.core.names import LEAD_NAME
from swarm.core.permlog import PermissionEvent, PermissionLog
from swarm.core.protocol import CLAUDE_RUNTIME, LeadPolicy, RuleLists, TeamFile, command_author
from swarm.core.signing import rotate_lead_key
from swarm.core.tasks import TaskStore
from swarm.core.store import check_store
from swarm.core.teams import TeamStore
from swarm.errors import ConflictError, SwarmError
from swarm.models.credentials import find_credentials
from swarm.models.team_gate import write_limits
from swarm.runtime import claude_teammate
from swarm.runtime.costs import team_cost
from swarm.runtime.lead_pump import LeadPump
from swarm.runtime.lead_inbox import LeadInbox, LeadMessage
from swarm.runtime.member_kinds import Machine, member_kind
from swarm.runtime.shutdown import Outcome, shutdown
from swarm.runtime.hosts.place import place
from swarm.runtime.lead_process import forget_dead_lead, record_lead
from swarm.runtime.restart_policy import end_policies
from swarm.runtime.spawn import SpawnRequest, spawn_reporting, wait_joined
from swarm.runtime.upfile import MemberTable, UpFile

log = logging.getLogger(__name__)

SETTLE_CHECKS = 3
"""Consecutive settled checks (a pump apart) before a headless run counts as done."""


class Started(BaseModel):
    team: str
    members: list[str]
    warnings: list[str] = []
    requests: list[SpawnRequest] = []
    """How each member was started (its model and playbook: what it runs on)."""


def start_team(home: Home, spec: UpFile, *, cwd: Path, env: Mapping[str, str],
               tmux_socket: str | None = None, offline: bool = False, backend: str | None = None,
               lead: bool = True) -> Started:
    """Create or reuse the team and spawn every member; on any failure stop what was started.

    Members with a playbook run on it when there are no credentials for Claude
    (``swarm.models.credentials``) or ``offline``; with them they run on their model. ``backend``
    overrides every member's backend. ``lead``: this process stays and leads
    the team (foreground, headless), recorded before any member starts so the
    members stop on their own if it dies; False (``--detach``): a person
    leads, and an earlier lead process that is gone is forgotten.
    """
    name = spec.team.name
    spec.check_paths(cwd)
    _check_claude_members(spec, env)
    created = not TeamStore(home).exists(name)
    _prepare_team(home, spec, cwd, env)
    write_limits(home.gate_dir(name), spec.team.limits())
    if lead:
        record_lead(home, name)
    else:
        forget_dead_lead(home, name)
    started: list[SpawnRequest] = []
    warnings: list[str] = []
    try:
        requests = _member_requests(spec, cwd=cwd, env=env, tmux_socket=tmux_socket, offline=offline,
                                    backend=backend)
        for member, request in zip(spec.members, requests, strict=True):
            if member.placed():
                _place(home, request, member)
            else:
                warnings += spawn_reporting(home, request, env).warnings
            started.append(request)
        wait_joined(home, name, [r.name for r in started])
    except (SwarmError, OSError, KeyboardInterrupt) as exc:
        _undo_start(home, spec, env, created=created, at_once=isinstance(exc, KeyboardInterrupt))
        raise
    return Started(team=name, members=[r.name for r in started], warnings=warnings, requests=started)


def _member_requests(spec: UpFile, *, cwd: Path, env: Mapping[str, str], tmux_socket: str | None,
                     offline: bool, backend: str | None) -> list[SpawnRequest]:
    """How ``start_team`` spawns each member (see there)."""
    online = find_credentials(env) is not None and not offline
    requests = []
    for member in spec.members:
        request = _request(spec, member, cwd, tmux_socket)
        request.prompt_author = command_author(env)  # the up file's prompts are the person's who ran `swarm up`
        if online and member.model != "scripted":
            request.playbook = None
        if backend is not None:
            request.backend = backend
        requests.append(request)
    return requests


def _place(home: Home, request: SpawnRequest, member: MemberTable) -> None:
    """Start a member with ``host``/``labels`` on a host: a signed request (``runtime/hosts/place.py``); its code
    travels through the team's remote (``hosts.code.team_remote``)."""
    place(home, request.team, request.name, request.prompt, host=member.host, labels=member.labels,
          prompt_author=request.prompt_author, agent_type=request.agent_type, model=request.model,
          permission_mode=request.permission_mode, backend=request.backend, playbook=request.playbook,
          cwd=request.cwd, restart=member.restart, max_restarts=member.max_restarts)


def _check_claude_members(spec: UpFile, env: Mapping[str, str]) -> None:
    """Before anything is made: what each ``runtime = "claude"`` member lacks, as one line naming it."""
    for index, member in enumerate(spec.members):
        if member.runtime != CLAUDE_RUNTIME:
            continue
        try:
            claude_teammate.preflight(member.claude_bin, member.backend, env)
        except SwarmError as exc:
            raise type(exc)(f"{spec.source}: members[{index}] ({member.name}) runs Claude Code, but {exc}") from exc


def _undo_start(home: Home, spec: UpFile, env: Mapping[str, str], *, created: bool, at_once: bool) -> None:
    """Stop every member this start spawned — also the one being spawned when it failed or Ctrl-C came.

    A member still starting has no pid recorded yet; it is found by its token.
    After Ctrl-C nobody waits for a handshake.
    """
    name = spec.team.name
    if not TeamStore(home).exists(name):
        return
    present = {m.name for m in TeamStore(home).get(name).members}
    ours = [m.name for m in spec.members if m.name in present]
    if ours:
        shutdown(home, name, ours, env, reason="swarm up failed", timeout=0.0 if at_once else 5.0)
    if created:
        TeamStore(home).delete(name, force=True)


def _prepare_team(home: Home, spec: UpFile, cwd: Path, env: Mapping[str, str]) -> None:
    teams = TeamStore(home)
    name = spec.team.name
    if teams.exists(name):
        machine = Machine({}, home)  # a team swarm made: its teammates are judged by their recorded pids
        live = [m.name for m in teams.get(name).members if m.name != LEAD_NAME and member_kind(m, machine).running()]
        if live:
            raise ConflictError(f"team {name!r} is already up ({', '.join(live)} running); `swarm down {name}` first")
    else:
        teams.create(name, spec.team.description, cwd=str(cwd),
                     store=check_store(spec.team.store or env.get("SWARM_STORE")), repo=spec.team.repo)
        rotate_lead_key(home, name)

    def configure(team: TeamFile) -> None:
        if spec.team.description:
            team.description = spec.team.description
        policy = spec.lead.policy
        team.lead_policy = LeadPolicy(allow=policy.allow, deny=policy.deny, plans=policy.plans)
        rules = spec.permissions
        team.permissions = RuleLists(allow=rules.allow, deny=rules.deny, ask=rules.ask)
        team.sandbox = spec.sandbox
        if spec.team.repo:
            team.repo = spec.team.repo

    teams.modify(name, configure)


def _request(spec: UpFile, member: MemberTable, cwd: Path, tmux_socket: str | None) -> SpawnRequest:
    where = (cwd / member.cwd).resolve() if member.cwd else cwd.resolve()
    return SpawnRequest(
        team=spec.team.name, name=member.name, prompt=member.prompt, backend=member.backend,
        agent_type=member.agent_type, model=member.model, permission_mode=member.permission_mode,
        plan_mode_required=member.plan_mode_required, cwd=where, color=member.color, playbook=member.playbook,
        tmux_socket=tmux_socket, allowed_tools=member.allowed_tools, disallowed_tools=member.disallowed_tools,
        skills=member.skills, permission_timeout=member.permission_timeout, worktree=member.worktree, base=member.base,
        runtime=member.runtime, claude_bin=member.claude_bin, sandbox=member.sandbox, restart=member.restart,
        max_restarts=member.max_restarts,
    )


def stop_team(home: Home, team: str, env: Mapping[str, str], *, timeout: float,
              reason: str = "team going down", inbox: LeadInbox | None = None) -> list[Outcome]:
    """The shutdown handshake for every teammate; a Ctrl-C while it runs forces the rest down at once.

    ``inbox``: the lead's inbox as this process's coordinator consumes it (``shutdown``).
    """
    end_policies(home, team)  # before any teammate is asked to stop: no restart policy brings one back
    try:
        return shutdown(home, team, None, env, reason=reason, timeout=timeout, inbox=inbox)
    except KeyboardInterrupt:
        return shutdown(home, team, None, env, reason="forced by Ctrl-C during shutdown", timeout=0.0, inbox=inbox)


# -- headless ------------------------------------------------------------------------------


class Report(BaseModel):
    team: str
    ok: bool
    reason: str
    """``settled`` (every teammate idle, nothing pending), ``timeout``, ``interrupted`` or ``failed``."""
    elapsed_s: float
    members: list[dict[str, Any]]
    messages: list[dict[str, Any]]
    decisions: list[dict[str, Any]]
    worktrees: list[dict[str, Any]]
    usage: dict[str, int]
    """Teammates' tokens in all (``tokens``) and, of those, input read from / written to the prompt cache."""
    warnings: list[str] = []
    tasks: list[dict[str, Any]] = []
    """The team's task list at the end (id, subject, status, owner)."""
    cost: dict[str, Any] = {}
    """``usd`` the team spent (lead included), its ``max_cost`` and whether that ``budget_reached``."""


def run_headless(home: Home, spec: UpFile, *, cwd: Path, env: Mapping[str, str], timeout: float,
                 tmux_socket: str | None = None, offline: bool = False, backend: str | None = None,
                 on_started: Callable[[Started], None] = lambda s: None,
                 on_message: Callable[[LeadMessage], None] = lambda m: None,
                 on_decision: Callable[[PermissionEvent], None] = lambda d: None) -> Report:
    """Start the team, coordinate without a person until settled or ``timeout``, stop it, report."""
    began, since_ms = time.monotonic(), now_ms()
    started = start_team(home, spec, cwd=cwd, env=env, tmux_socket=tmux_socket, offline=offline, backend=backend)
    coordinator = LeadPump(home, spec.team.name, on_message=on_message, on_decision=on_decision, env=env,
                           stall_after=spec.team.stall_after)
    try:
        on_started(started)
        reason = _until_settled(coordinator, began + timeout)
    except BaseException:  # a failure while coordinating must not leave the team running
        stop_team(home, spec.team.name, env, timeout=0.0, inbox=coordinator.inbox)
        coordinator.close()
        raise
    try:
        outcomes = stop_team(home, spec.team.name, env, timeout=spec.lead.shutdown_timeout, inbox=coordinator.inbox)
        coordinator.pump(0)
    finally:
        coordinator.close()
    if reason == "settled" and coordinator.failures:
        reason = "failed"
    return team_report(home, spec.team.name, coordinator, outcomes, reason, time.monotonic() - began,
                       started.warnings, since_ms, ok=reason == "settled")


def _until_settled(coordinator: LeadPump, deadline: float) -> str:
    """``settled``, ``timeout``, or ``interrupted`` (Ctrl-C: the team is still stopped cleanly)."""
    streak = 0
    try:
        while time.monotonic() < deadline:
            coordinator.pump(min(0.2, max(0.0, deadline - time.monotonic())))
            streak = streak + 1 if coordinator.settled() else 0
            if streak >= SETTLE_CHECKS:
                return "settled"
    except KeyboardInterrupt:
        return "interrupted"
    return "timeout"


def team_report(home: Home, team: str, coordinator: LeadPump, outcomes: list[Outcome], reason: str,
                elapsed: float, warnings: list[str], since_ms: int, *, ok: bool) -> Report:
    """How a team run went: members and how each ended, messages, decisions, worktrees, tasks, tokens.

    ``ok`` is the caller's verdict, from what ``reason`` means for its kind of run
    (``run_headless``: settled; ``runtime.lead.run_lead``: done, and the lead's run ended well).
    """
    team_file = TeamStore(home).get(team)
    spent = team_cost(home, team)
    if spent.reached:
        warnings = [*warnings, f"the team's budget was reached: {spent.line()}"]
    by_name = {o.name: o for o in outcomes}
    members = []
    for member in team_file.members:
        if member.name == LEAD_NAME:
            continue
        outcome = by_name.get(member.name)
        members.append({
            "name": member.name,
            "stopped": (member.status or outcome.result) if outcome and outcome.result == "not_running"
            else outcome.result if outcome else None,
            "result": coordinator.results.get(member.name), "failure": coordinator.failures.get(member.name),
            "tokens": member.tokens or 0, "cache_read_tokens": member.cache_read_tokens or 0,
            "cache_creation_tokens": member.cache_creation_tokens or 0, "worktree": member.worktree_path,
            "cost_usd": spent.by_member.get(member.name, 0.0),
        })
    decisions = [e.model_dump(mode="json", exclude_none=True)
                 for e in PermissionLog(home, team).events() if e.event == "decision" and e.ts >= since_ms]
    return Report(
        team=team, ok=ok, reason=reason, elapsed_s=round(elapsed, 3), members=members,
        messages=[dataclasses.asdict(m) for m in coordinator.messages], decisions=decisions,
        worktrees=[dataclasses.asdict(o.worktree) for o in outcomes if o.worktree is not None],
        usage={key: sum(m[key] for m in members) for key in ("tokens", "cache_read_tokens", "cache_creation_tokens")},
        warnings=warnings,
        tasks=[t.wire() for t in TaskStore(home, team).list()],
        cost={"usd": spent.usd, "max_cost": spent.max_cost, "budget_reached": spent.reached},
    )
