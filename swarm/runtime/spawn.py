"""Spawn a teammate: check names -> (worktree) -> write member -> initial prompt -> start process.

Any failure after the worktree is created or the member entry is written
takes back exactly what this call made: the worktree, its prompt entry, its
member entry (putting back the inactive entry a respawn replaced). Messages
others queued for the member, and an inbox that was there before, stay.
"""

from __future__ import annotations

import logging
import sys
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from swarm.agent.permissions.policy import PERMISSION_MODES
from swarm.agent.permissions.settings import record_settings
from swarm.backends.base import Backend, LaunchSpec
from swarm.backends.select import make_backend
from swarm.core.clock import now_ms
from swarm.core.frames import parse_frame
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox, delivery_key
from swarm.core.members import mark_gone
from swarm.core.names import LEAD_NAME, RESERVED_NAMES, agent_id, validate_name
from swarm.core.sandbox_config import SandboxSettings
from swarm.core.protocol import CLAUDE_RUNTIME, Author, InboxEntry, Member, TeamFile
from swarm.core.signing import verify_key_arg
from swarm.core.store import locate
from swarm.core.teams import TeamStore
from swarm.errors import BackendError, SwarmError, UsageError
from swarm.models.catalog import check_name
from swarm.models.playbook import load_playbook
from swarm.runtime import claude_teammate, worktrees
from swarm.runtime.env import teammate_env
from swarm.runtime.member_kinds import Machine, member_kind, reap_dead
from swarm.runtime.restart_policy import DEFAULT_MAX_RESTARTS, RestartPolicy, save_policy
from swarm.teammate import served_command, teammate_command
from swarm.teammate.config import PLAYBOOK_VARIABLES, TeammateConfig

log = logging.getLogger(__name__)

JOIN_TIMEOUT = 30.0
"""Seconds a new teammate gets to start (imports, join) before spawn gives up on it."""
JOIN_POLL = 0.02
JOIN_KILL_GRACE = 1.0
"""Seconds a teammate that failed to join gets between SIGTERM and SIGKILL."""


class SpawnRequest(BaseModel):
    team: str
    name: str
    prompt: str
    prompt_author: Author = "model"
    """Who chose the prompt: ``person`` (``swarm spawn``, ``swarm up``, run by a person) or ``model`` (a lead
    model's Agent call; the default). Only a person's prompt may start a person-only skill (``core.signing``)."""
    backend: str = "auto"
    agent_type: str = "general-purpose"
    model: str | None = None
    permission_mode: str = "default"
    plan_mode_required: bool = False
    cwd: Path
    color: str | None = None
    playbook: Path | None = None
    tmux_socket: str | None = None
    allowed_tools: list[str] = []
    disallowed_tools: list[str] = []
    skills: list[str] = []
    """Skills whose instructions are preloaded into the teammate's system prompt."""
    permission_timeout: float = 300.0
    worktree: bool = False
    """Work in a new git worktree on branch ``swarm/<team>/<name>`` (its cwd), created from ``base``."""
    base: str | None = None
    """Commit the worktree starts from; default: HEAD of the checkout ``cwd`` is in."""
    runtime: Literal["swarm", "claude"] = "swarm"
    """``claude``: run the Claude Code CLI in a tmux pane instead of swarm's teammate (``claude_teammate``)."""
    sandbox: SandboxSettings | None = None
    """The teammate's own ``sandbox`` settings (``--sandbox``, a ``swarm up`` member's ``[sandbox]``), kept in its
    member entry; the teammate stacks them on the team's (``swarm.agent.sandbox``)."""
    claude_bin: str | None = None
    """The ``claude`` binary for ``runtime="claude"``; default ``$SWARM_CLAUDE_BIN``, else ``claude`` on PATH."""
    restart: RestartPolicy = "no"
    """Start it again when it ends: ``on-failure`` (it died: crash, ``kill -9``, a signal) or ``always`` (also
    after it stopped) — by whoever coordinates the team (``swarm.runtime.restart``)."""
    max_restarts: int = Field(default=DEFAULT_MAX_RESTARTS, ge=0)
    host: str | None = None
    """Set by a host (``swarm host serve``) starting the teammate for a lead elsewhere: recorded in its entry."""
    epoch: int | None = None
    """The placement's epoch, from the lead's signed request (``runtime.hosts``)."""
    remote_repo: str | None = None
    """Set by a host: the git remote the teammate's branch is pushed to, and its base commit (recorded in its entry)."""
    remote_base: str | None = None
    lead_verify_key: str | None = None
    """Set by a host: the remote lead's public key (its signed request's). The teammate verifies the lead with it,
    and the lead sent the initial prompt itself (signed), so none is sent here."""


class Spawned(BaseModel):
    member: Member
    warnings: list[str] = []
    """Things the user should know, e.g. uncommitted changes the worktree does not have."""


def spawn(home: Home, request: SpawnRequest, env: Mapping[str, str]) -> Member:
    """Start teammate ``request.name``; returns its member entry once the process runs."""
    return spawn_reporting(home, request, env).member


def spawn_reporting(home: Home, request: SpawnRequest, env: Mapping[str, str], *,
                    again: Member | None = None) -> Spawned:
    """``spawn``, also returning the warnings met on the way.

    ``again``: the gone entry of this teammate when it is started again (a restart): no initial prompt
    (it goes on from its transcript) and its worktree, if any, is its own again.
    """
    _check(request)
    if request.runtime == CLAUDE_RUNTIME and locate(home, request.team) is not None:
        raise UsageError(f"team {request.team!r} keeps its state in PostgreSQL, and a Claude Code teammate reads "
                         f"and writes files only; use a file team (the default) for Claude Code teammates")
    binary = _check_claude(request, env) if request.runtime == CLAUDE_RUNTIME else None
    TeamStore(home).current(request.team)  # the team exists (else NotFoundError): no copy, no activity overlay
    reap_dead(home, request.team, {request.name})  # a dead member of the same name may be replaced
    backend = make_backend("tmux" if binary else request.backend, env=env, tmux_socket=request.tmux_socket)
    if again is not None and again.worktree_path:
        request = request.model_copy(update={"cwd": Path(again.worktree_path), "worktree": False, "base": None})
    tree = worktrees.create(request.cwd, request.team, request.name, request.base) if request.worktree else None
    try:
        member = _start(home, request if tree is None else request.model_copy(update={"cwd": tree.path}),
                        backend, tree, env, binary, again)
    except (SwarmError, OSError):
        if tree is not None:
            worktrees.discard(tree)
        raise
    if again is None and request.runtime != CLAUDE_RUNTIME:  # how to start it again: its policy, a resume
        save_policy(home, request.team, request.name, request.restart, request.max_restarts,
                    request.model_dump(mode="json"))
    return Spawned(member=member, warnings=tree.warnings if tree else [])


def _start(home: Home, request: SpawnRequest, backend: Backend, tree: worktrees.NewWorktree | None,
           env: Mapping[str, str], claude_bin: Path | None, again: Member | None = None) -> Member:
    teams = TeamStore(home)
    inbox_existed = home.inbox_path(request.team, request.name).exists()
    found: list[Member | None] = []

    def before_adding(team: TeamFile) -> None:  # in add_member's one locked rewrite of the team file
        record_settings(team, request.cwd)  # as the lead sees them now
        found[:] = [team.member(request.name)]  # an inactive entry add_member replaces

    member = teams.add_member(request.team, _member(request, backend.name, tree, again), also=before_adding)
    replaced = found[0] if found else None
    prompt: list[InboxEntry] = []
    try:
        if again is None and request.lead_verify_key is None:  # again: the task is in its transcript; on a host:
            # the lead sent it, signed
            prompt = Mailbox(home, request.team).send(request.name, request.prompt, sender=LEAD_NAME,
                                                      author=request.prompt_author, summary="initial task")
        launch = (_launch(home, request, member, backend.name, env) if claude_bin is None else
                  claude_teammate.launch_spec(home, member, request.team, binary=claude_bin, env=env,
                                              lead_session=teams.get(request.team).lead_session_id,
                                              log_path=home.log_path(request.team, request.name),
                                              team_sandbox=teams.get(request.team).sandbox))
        handle = backend.start(launch)
    except (SwarmError, OSError):
        _undo(home, request.team, _Made(member, replaced, prompt, inbox_existed))
        raise
    started = {"is_active": True} if claude_bin is None else {}  # Claude Code owns a claude teammate's isActive
    return teams.update_member(request.team, request.name, pid=handle.pid, proc_start=handle.create_time,
                               tmux_pane_id=handle.pane_id or "subprocess", backend_type=backend.name, **started)


def wait_joined(home: Home, team: str, names: list[str], timeout: float = JOIN_TIMEOUT) -> None:
    """Block until every named teammate has joined (its process runs and it reported a status;
    a claude teammate: it took its initial prompt from its inbox).

    A teammate that exits during start-up is a BackendError carrying the last
    line of its log, so the user sees why at once instead of a dead member later.
    One that does not join within ``timeout`` is stopped (with whatever it
    started) before the BackendError: a spawn reported as failed leaves nothing running.
    """
    deadline = time.monotonic() + timeout
    waiting = set(names)
    machine = Machine({}, home)  # teammates swarm started: judged by their recorded pids
    while waiting:
        for member in TeamStore(home).get(team).members:
            if member.name not in waiting:
                continue
            teammate = member_kind(member, machine)
            if member.status in ("idle", "busy") or claude_teammate.joined(home, team, teammate):
                waiting.discard(member.name)
            elif teammate.ended():
                teammate.sweep(JOIN_KILL_GRACE)
                mark_gone(home, team, member.name, "dead")  # reported here, not as a later death
                raise BackendError(f"{member.name} exited while starting: {_last_log_line(home, team, member.name)} "
                                   f"(`swarm logs {member.name} --team {team}` shows all)")
        if waiting and time.monotonic() > deadline:
            _give_up(home, team, waiting)
            raise BackendError(f"{', '.join(sorted(waiting))} did not join within {timeout:g}s and were stopped; "
                               f"`swarm logs NAME --team {team}` shows what they were doing")
        time.sleep(JOIN_POLL)


def _give_up(home: Home, team: str, names: set[str]) -> None:
    machine = Machine({}, home)
    for member in TeamStore(home).get(team).members:
        if member.name in names:
            member_kind(member, machine).sweep(JOIN_KILL_GRACE)
            mark_gone(home, team, member.name, "killed")


def _last_log_line(home: Home, team: str, name: str) -> str:
    try:
        lines = [line for line in home.log_path(team, name).read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "(no log)"
    errors = [line.split(": ", 1)[-1] for line in lines if " ERROR " in line]  # drop time, name, level, logger
    return (errors or lines or ["(empty log)"])[-1].strip()


def _check_claude(request: SpawnRequest, env: Mapping[str, str]) -> Path:
    """What a claude teammate needs, checked before anything is made: its binary, tmux, credentials."""
    problem = claude_teammate.swarm_only({"--playbook": request.playbook, "--skill": request.skills})
    if problem is not None:
        raise UsageError(problem)
    return claude_teammate.preflight(request.claude_bin, request.backend, env)


def _check(request: SpawnRequest) -> None:
    validate_name(request.team, "team name")
    validate_name(request.name, "agent name")
    if request.name in RESERVED_NAMES:
        whose = "the lead's" if request.name == LEAD_NAME else "the runtime's"
        raise UsageError(f"{request.name!r} is {whose} name; pick another name for the teammate")
    if not request.prompt.strip():
        raise UsageError("the initial prompt is empty; say what the teammate should do with --prompt")
    if not isinstance(parse_frame(request.prompt), str):
        raise UsageError("the initial prompt is a protocol frame; a prompt must be plain text")
    if request.permission_mode not in PERMISSION_MODES:
        raise UsageError(f"unknown permission mode {request.permission_mode!r}; use one of {', '.join(PERMISSION_MODES)}")
    if request.model is not None:
        check_name(request.model)
    if not request.cwd.is_dir():
        raise UsageError(f"--cwd {request.cwd} is not a directory")
    if request.playbook is not None and request.runtime != CLAUDE_RUNTIME:  # a claude teammate refuses it
        if not request.playbook.is_file():
            raise UsageError(f"playbook {request.playbook} not found")
        load_playbook(request.playbook).check_slots(PLAYBOOK_VARIABLES)  # a bad playbook fails here, not in the teammate
    if request.base is not None and not request.worktree:
        raise UsageError("--base only applies with --worktree")


def _member(request: SpawnRequest, backend: str, tree: worktrees.NewWorktree | None,
            again: Member | None = None) -> Member:
    member = Member(
        agent_id=agent_id(request.name, request.team), name=request.name, agent_type=request.agent_type,
        prompt=request.prompt, plan_mode_required=request.plan_mode_required, joined_at=now_ms(),
        cwd=str(request.cwd.resolve()), backend_type=backend, is_active=False, status="starting",
        mode=request.permission_mode, subscriptions=[], proc_token=uuid.uuid4().hex,
    )
    if request.runtime == CLAUDE_RUNTIME:  # its rules go on its command line, read from here
        member.runtime = CLAUDE_RUNTIME
        member.allowed_tools, member.disallowed_tools = request.allowed_tools or None, request.disallowed_tools or None
    for field, value in (("model", request.model), ("color", request.color), ("tmux_socket", request.tmux_socket),
                         ("sandbox", request.sandbox), ("host", request.host), ("epoch", request.epoch),
                         ("remote_repo", request.remote_repo), ("remote_base", request.remote_base),
                         ("playbook", str(request.playbook.resolve()) if request.playbook else None)):
        if value is not None:
            setattr(member, field, value)
    if tree is not None:
        member.worktree_path, member.worktree_branch = str(tree.path), tree.branch
        member.worktree_base, member.worktree_repo = tree.base, str(tree.repo)
    elif again is not None and again.worktree_path:
        member.worktree_path, member.worktree_branch = again.worktree_path, again.worktree_branch
        member.worktree_base, member.worktree_repo = again.worktree_base, again.worktree_repo
    return member


def _launch(home: Home, request: SpawnRequest, member: Member, backend: str,
            env: Mapping[str, str]) -> LaunchSpec:
    config = TeammateConfig(
        team=request.team, name=request.name, agent_id=member.agent_id, color=member.color,
        agent_type=request.agent_type, model=request.model, permission_mode=request.permission_mode,
        plan_mode_required=request.plan_mode_required, cwd=request.cwd.resolve(),
        playbook=request.playbook.resolve() if request.playbook else None, backend=backend, home=home.root,
        allowed_tools=request.allowed_tools, disallowed_tools=request.disallowed_tools, skills=request.skills,
        permission_timeout=request.permission_timeout,
        lead_verify_key=request.lead_verify_key or verify_key_arg(home, request.team),
    )
    return LaunchSpec(argv=teammate_command(sys.executable, config.argv()), served=served_command(config.argv()),
                      env=teammate_env(env, str(home.root), member.proc_token), cwd=request.cwd.resolve(), team=request.team,
                      name=request.name, log_path=home.log_path(request.team, request.name), color=member.color)


@dataclass(frozen=True)
class _Made:
    """What a ``_start`` call changed, so that a failure takes back exactly that."""

    member: Member
    """The entry it wrote into the team file."""
    replaced: Member | None
    """The inactive entry of the same name that ``member`` replaced (a respawn)."""
    prompt: list[InboxEntry]
    """The initial-prompt entries it queued."""
    inbox_existed: bool
    """The inbox was there before (messages others queued for a dead teammate): never delete it."""


def _undo(home: Home, team: str, made: _Made) -> None:
    """Take back what the failed start wrote, and only that: others' messages and entries stay."""
    name = made.member.name
    try:
        mailbox = Mailbox(home, team)
        if made.prompt:
            mailbox.acknowledge(name, [delivery_key(e) for e in made.prompt])
        if not made.inbox_existed:
            mailbox.discard_if_empty(name)
        TeamStore(home).modify(team, lambda current: _put_back(current, made))
    except (SwarmError, OSError) as exc:  # keep the original error; this one is only logged
        log.warning("could not undo failed spawn", extra={"agent": name, "reason": str(exc)})


def _put_back(current: TeamFile, made: _Made) -> None:
    """Replace the entry ``made`` wrote by the one it replaced (or drop it), unless someone changed it since."""
    now = current.member(made.member.name)
    if now is None or now.joined_at != made.member.joined_at:
        return
    index = current.members.index(now)
    if made.replaced is None:
        del current.members[index]
    else:
        current.members[index] = made.replaced
