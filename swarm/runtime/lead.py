"""The LLM team lead: ``swarm run`` whose main agent creates and runs a team.

``LeadTeam`` is the runtime's side of the lead's team tools (``TeamControl``):
it creates the team, spawns teammates through the runtime's own spawn (so
worktrees, panes and the permission record work as for ``swarm spawn``),
answers plans through the desk and asks teammates to stop.

``run_lead`` is the lead's loop. After each of its turns, while it leads a
team, it waits — event-driven, on its inbox in the team it leads *now*
(``TeamFollower``: a lead may delete its team and create another) — and what the
teammates sent becomes its next turn: messages as ``<teammate-message>``,
idle notifications in a compact form, plan requests to answer, deaths.
Permission requests never reach the model: the team's lead policy (and
settings rules) answers them, or, with nobody to ask, they are denied.
The run ends when the lead's turn has ended, no teammate is active and
nothing is unread; a team whose teammates all sit idle is reminded once to
finish, then shut down. ``timeout`` bounds the whole run. Teammates are
always shut down before it returns, in every team it created that is still
there; the team directory and task list stay. This process is recorded as
the team's lead (``runtime.lead_process``): if it dies without shutting its
teammates down (``kill -9``), they stop on their own.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from swarm.agent.hooks.permission_hooks import stalled_hooks
from swarm.agent.headless import MainSession
from swarm.agent.loop import AgentRun
from swarm.agent.peer_messages import teammate_block
from swarm.agent.permissions.policy import PERMISSION_MODES, narrowest, wider_than
from swarm.agent.tool_api.context import ToolContext, ToolError
from swarm.agent.tool_api.walking import within_roots
from swarm.core.clock import now_ms
from swarm.core.frames import (
    IdleNotification,
    PlanApprovalRequest,
    ShutdownApproved,
    ShutdownRejected,
)
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.members import request_shutdown
from swarm.core.names import LEAD_NAME, validate_name
from swarm.core.permlog import PermissionEvent
from swarm.core.protocol import CLAUDE_RUNTIME, LeadPolicy
from swarm.core.signing import rotate_lead_key
from swarm.core.store import check_store
from swarm.core.teams import TeamStore
from swarm.errors import SwarmError
from swarm.models.team_gate import GateLimits, TeamGate, write_limits
from swarm.runtime.hosts.place import PLACE_TIMEOUT
from swarm.runtime.lead_hosts import place_teammate, refusal
from swarm.runtime.lead_inbox import LeadInbox, LeadMessage
from swarm.runtime.lead_process import record_lead
from swarm.runtime.lead_pump import LeadPump
from swarm.runtime.permission_desk import answer_plan
from swarm.runtime.shutdown import Outcome
from swarm.core.sandbox_config import SandboxSettings
from swarm.runtime.spawn import SpawnRequest, spawn_reporting, wait_joined
from swarm.runtime.merge_queue import run_queue
from swarm.runtime.team_resume import Resumed, resume_team
from swarm.runtime.up import Report, stop_team, team_report

log = logging.getLogger(__name__)

PUMP = 0.5
"""Seconds the lead waits on its inbox per check (events wake it sooner)."""
SHUTDOWN_TIMEOUT = 30.0
"""Seconds teammates get to approve the shutdown at the end of a run before they are forced."""
QUIET_NOTE = ("All your teammates are idle and nothing is unread. If the work is done, ask each teammate to shut "
              "down (SendMessage with message {type: 'shutdown_request'}); otherwise give them the next task.")


@dataclass
class LeadTeam:
    """The runtime side of a lead agent's team tools."""

    home: Home
    env: Mapping[str, str]
    cwd: Path
    backend: str = "auto"
    tmux_socket: str | None = None
    policy: LeadPolicy | None = None
    playbooks: Mapping[str, Path] = field(default_factory=dict)
    """Offline playbooks for teammates by name (the scripted model; ``--teammate-playbook``)."""
    ceiling: str = "default"
    """The widest permission mode the person lets this lead give its teammates (``--permission-mode``):
    a mode the model asks for beyond it, at spawn or in a plan answer, is refused."""
    sandbox: SandboxSettings | None = None
    """The person's ``--sandbox``: the ``sandbox`` settings of every teammate the model starts (it cannot leave
    them out)."""
    person_answers_plans: bool = False
    """The person is asked about every plan (the interactive session): the model's plan answers are refused."""
    team: str | None = None
    """The team it leads now (one at a time)."""
    led: list[str] = field(default_factory=list)
    """Every team it created, in order (a name twice if it deleted that team and created it again)."""
    limits: GateLimits = field(default_factory=GateLimits)
    """The budget and cap on requests in flight of every team it creates (``--max-cost`` and the rest)."""
    stall_after: float | None = None
    """Seconds a teammate holding a task in progress may do nothing before the watchdog nudges it (None: off)."""
    gate: TeamGate = field(default_factory=lambda: TeamGate(None, LEAD_NAME))
    """The lead's own model calls' gate: bound to the team it leads, so they count and wait with the team's."""
    place_timeout: float = PLACE_TIMEOUT
    """Seconds a teammate the model places on a host (``Agent(host=…)``) may take to start there."""
    on_team: Callable[[str | None], None] = lambda team: None
    """Told the team it leads from now on (None: none): the interactive session records it for ``--resume``."""

    def create(self, name: str, description: str | None, ctx: ToolContext) -> str:
        if self.team is not None:
            raise ToolError(f"you already lead team {self.team!r}; one team at a time (TeamDelete it first)")
        try:
            validate_name(name, "team name")
            TeamStore(self.home).create(name, description, cwd=str(self.cwd),
                                        store=check_store(self.env.get("SWARM_STORE")))
            record_lead(self.home, name)  # before any teammate: each one watches this process
            rotate_lead_key(self.home, name)
            write_limits(self.home.gate_dir(name), self.limits)
            if self.policy is not None:
                policy = self.policy
                TeamStore(self.home).modify(name, lambda t: setattr(t, "lead_policy", policy))
        except SwarmError as exc:
            raise ToolError(str(exc)) from exc
        self._lead(name, ctx)
        return (f"Team {name!r} created; you are its lead ({LEAD_NAME}). Write the task list with TaskCreate, "
                f"then start teammates with Agent(team_name={name!r}, name=..., prompt=...).")

    def adopt(self, name: str, ctx: ToolContext) -> Resumed:
        """Lead ``name`` again (a resumed session): its live teammates stay, the gone ones start again."""
        resumed = resume_team(self.home, name, self.env)
        self._lead(name, ctx)
        return resumed

    def _lead(self, name: str, ctx: ToolContext) -> None:
        self.team = name
        self.led.append(name)
        self.gate.bind(self.home.gate_dir(name))
        self.on_team(name)
        ctx.with_team(name, LEAD_NAME, Mailbox(self.home, name))

    def delete(self, ctx: ToolContext) -> str:
        team = self._team()
        active = [m.name for m in TeamStore(self.home).get(team).members if m.present() and m.name != LEAD_NAME]
        if active:
            raise ToolError(f"team {team!r} still has active teammates ({', '.join(active)}); ask them to shut "
                            "down with SendMessage {type: 'shutdown_request'} and wait for their answers")
        TeamStore(self.home).delete(team)
        self.team = None
        self.gate.bind(None)
        self.on_team(None)
        ctx.with_team(None, ctx.identity.name, None)
        return f"Team {team!r} deleted."

    def spawn(self, ctx: ToolContext, *, name: str, prompt: str, agent_type: str | None, model: str | None,
              runtime: str | None, isolation: str | None, plan_mode_required: bool, mode: str | None,
              cwd: str | None, host: str | None = None, labels: list[str] | None = None) -> str:
        team = self._team()
        granted = self.teammate_mode(mode)
        where = ctx.resolve(cwd) if cwd else self.cwd
        if cwd and not within_roots(where.resolve(), [r.resolve() for r in ctx.identity.write_roots or [where]]):
            roots = ", ".join(map(str, ctx.identity.write_roots or []))
            raise ToolError(f"cwd {where} is outside the directories you may write ({roots}): a teammate starts "
                            "there or below; the person can start one elsewhere with `swarm spawn --cwd`")
        if host is not None or labels:
            why = refusal(runtime=runtime, plan_mode_required=plan_mode_required, sandbox=self.sandbox)
            if why is not None:
                raise ToolError(why)
            return place_teammate(self.home, team, name, prompt, host=host, labels=labels or [], agent_type=agent_type,
                                  model=model, mode=granted, cwd=where, playbook=self.playbooks.get(name),
                                  backend=self.backend, timeout=self.place_timeout)
        claude = runtime == CLAUDE_RUNTIME  # a Claude Code session: its own model, always in a tmux pane
        request = SpawnRequest(team=team, name=name, prompt=prompt,
                               agent_type=agent_type or "general-purpose", model=model,
                               permission_mode=granted,
                               plan_mode_required=plan_mode_required,
                               cwd=where, tmux_socket=self.tmux_socket, worktree=isolation == "worktree",
                               playbook=None if claude else self.playbooks.get(name),
                               runtime=CLAUDE_RUNTIME if claude else "swarm", backend="auto" if claude else self.backend,
                               sandbox=self.sandbox)
        try:
            spawned = spawn_reporting(self.home, request, self.env)
            wait_joined(self.home, team, [name])
        except SwarmError as exc:
            raise ToolError(f"could not start teammate {name!r}: {exc}") from exc
        member = spawned.member
        tree = f" in worktree {member.worktree_path} (branch {member.worktree_branch})" if member.worktree_path else ""
        return (f"Started teammate {name!r} (agent id {member.agent_id}){tree}. It works on its prompt and "
                f"messages you when it is done or blocked; message it with SendMessage(to={name!r}).")

    def answer_plan(self, request_id: str, approve: bool, feedback: str | None, mode: str | None) -> str:
        if self.person_answers_plans:
            raise ToolError(f"the person answers plans in this session ({request_id} is asked of them); "
                            "tell them what you think of it instead")
        mode = self.plan_answer_mode(approve, mode)
        try:
            answer_plan(self.home, self._team(), request_id, approved=approve, feedback=feedback, mode=mode,
                        by="lead")
        except SwarmError as exc:
            raise ToolError(str(exc)) from exc
        return f"Plan {request_id} {'approved' if approve else 'rejected'}."

    def teammate_mode(self, asked: str | None) -> str:
        """The mode a teammate the model starts gets: what it asked for within the grant, else the narrower of
        ``default`` and the grant; ToolError for a mode wider than the grant."""
        self._within_grant(asked)
        return asked or narrowest("default", self.ceiling)

    def plan_answer_mode(self, approve: bool, asked: str | None) -> str | None:
        """The mode a model's plan answer passes on (None: the teammate's own; ``teammate.gate`` ``after_plan``).

        ToolError for a mode wider than the grant, and for an approval where the grant is plan mode only: an
        approved plan lets the teammate write. A teammate that would leave plan mode for ``default`` is held to
        the grant when that is narrower (``dontAsk``).
        """
        self._within_grant(asked)
        if not approve:
            return asked
        if asked is None or asked == "plan":
            if self.ceiling == "plan":
                raise ToolError("this session grants plan mode only: approving a plan would let the teammate "
                                "write; reject it with your feedback, or the person approves it (`swarm plan`)")
            return self.ceiling if wider_than("default", self.ceiling) else None
        return asked

    def _within_grant(self, mode: str | None) -> None:
        """ToolError when the model asks for a mode wider than the person granted (``ceiling``)."""
        if mode is None:
            return
        if mode not in PERMISSION_MODES:
            raise ToolError(f"unknown permission mode {mode!r}; use one of {', '.join(PERMISSION_MODES)}")
        if wider_than(mode, self.ceiling):
            raise ToolError(f"mode {mode!r} is wider than what this session may grant ({self.ceiling!r}); ask for "
                            f"{self.ceiling!r} or narrower. Only the person grants more (`swarm run "
                            f"--permission-mode {mode}`, or `swarm spawn --permission-mode {mode}` for one teammate)")

    def request_shutdown(self, name: str, reason: str | None) -> str:
        team = self._team()
        member = TeamStore(self.home).get(team).member(name)
        if member is None or name == LEAD_NAME:
            raise ToolError(f"no teammate {name!r} in team {team!r}")
        request_id = request_shutdown(self.home, team, name, reason)
        return f"Asked {name} to shut down ({request_id}); its answer arrives as a message."

    def merge(self, names: list[str], into: str | None, test: str | None) -> str:
        try:
            run = run_queue(self.home, self._team(), names, into=into, test=test, cwd=self.cwd)
        except SwarmError as exc:
            raise ToolError(str(exc)) from exc
        if not run.steps:
            return "Nothing to merge: no teammate has a branch of its own (start them with isolation 'worktree')."
        lines = [f"{s.name} ({s.branch}): {s.result.replace('_', ' ')}" + (f" — {s.detail}" if s.detail else "")
                 + (f"; {s.name} was sent this to fix" if s.told else "") for s in run.steps]
        head = f"Merged into {run.into}." if run.ok else f"The queue stopped; {run.into} is unchanged by that merge."
        return "\n".join([head, *lines])

    def stop_teams(self, *, timeout: float, reason: str = "team going down",
                   inboxes: Mapping[str, LeadInbox] | None = None) -> dict[str, list[Outcome]]:
        """The shutdown handshake for every team this lead created that is still there, by team.

        ``inboxes``: the lead's inbox of a team as this process's coordinator consumes it, by team.
        """
        return {team: stop_team(self.home, team, self.env, timeout=timeout, reason=reason,
                                inbox=(inboxes or {}).get(team))
                for team in dict.fromkeys(self.led) if TeamStore(self.home).exists(team)}

    def _team(self) -> str:
        if self.team is None:
            raise ToolError("you lead no team yet; create one with TeamCreate")
        return self.team


class TeamFollower:
    """The coordinator of the team the lead leads *now* (``lead.team``): one per team, so one consumer of its inbox.

    A lead may delete its team and create another; ``follow`` then closes the
    old team's coordinator and makes one for the new team (``make``), so the
    lead never reads a deleted team's inbox. Threads may share one follower:
    each ``follow`` of the same team returns the same coordinator.
    """

    def __init__(self, lead: LeadTeam, make: Callable[[str], LeadPump]) -> None:
        self.lead = lead
        self._make = make
        self.coordinator: LeadPump | None = None
        self._created = 0
        self._seen = 0
        self._lock = threading.Lock()

    def follow(self) -> LeadPump | None:
        """The coordinator of the team the lead leads now (None while it leads none)."""
        with self._lock:
            current = (self.lead.team, len(self.lead.led))
            if self.coordinator is not None and (self.coordinator.team, self._created) != current:
                self._close()
            if self.coordinator is None and self.lead.team is not None:
                self.coordinator, self._created, self._seen = self._make(self.lead.team), len(self.lead.led), 0
            return self.coordinator

    def fresh(self) -> list[LeadMessage]:
        """What the coordinator recorded since the last call (whichever thread collected it)."""
        with self._lock:
            if self.coordinator is None:
                return []
            recorded = self.coordinator.inbox.recorded()
            fresh, self._seen = recorded[self._seen:], len(recorded)
            return fresh

    def close(self) -> None:
        with self._lock:
            self._close()

    def _close(self) -> None:
        if self.coordinator is not None:
            self.coordinator.close()
            self.coordinator = None


@dataclass
class LeadOutcome:
    run: AgentRun
    team: str | None
    """The team the lead created last (None: it created none)."""
    report: Report | None
    """How that team's run went (``Report.ok`` decided here: ended ``done`` and the lead's run ended well);
    None when there is no team left to report on."""
    reason: str
    """``done``, ``timeout``, ``interrupted``, or ``no_team`` (the agent never created one)."""


def run_lead(session: MainSession, lead: LeadTeam, prompt: str, *, timeout: float = 0,
             shutdown_timeout: float = SHUTDOWN_TIMEOUT,
             on_message: Callable[[LeadMessage], None] = lambda m: None,
             on_decision: Callable[[PermissionEvent], None] = lambda d: None) -> LeadOutcome:
    """Run the lead's first turn, then its team, to the end (see the module docstring)."""
    began, since = time.monotonic(), now_ms()
    deadline = began + timeout if timeout else float("inf")
    try:
        run = session.start(prompt)
    except KeyboardInterrupt:  # aborted (a second Ctrl-C) in the first turn: its teammates are forced down at once
        lead.stop_teams(timeout=0.0, reason="the lead was aborted")
        raise
    if not lead.led:
        return LeadOutcome(run, None, None, "no_team")
    follower = TeamFollower(lead, lambda team: LeadPump(lead.home, team, plans_by_model=True, env=lead.env,
                                                           stall_after=lead.stall_after,
                                                           on_stalled=lambda _name, text: stalled_hooks(session.ctx,
                                                                                                        text),
                                                           on_message=on_message, on_decision=on_decision))
    reason = "done"
    try:
        run, reason = _lead_loop(session, lead, follower, run, deadline)
    except KeyboardInterrupt:
        reason = "interrupted"
    finally:
        # the handshake when the run ended or was interrupted; at the time limit nothing more is waited for;
        # the answers are heard through the coordinator of the team it leads at the end, if any
        coordinator = follower.follow()
        outcomes = lead.stop_teams(timeout=0.0 if reason == "timeout" else shutdown_timeout,
                                   inboxes={coordinator.team: coordinator.inbox} if coordinator else None)
        if coordinator is not None and coordinator.team in outcomes:
            coordinator.pump(0)
        else:
            coordinator = None
        follower.close()
    report = None
    if coordinator is not None:
        report = team_report(lead.home, coordinator.team, coordinator, outcomes[coordinator.team], reason,
                             time.monotonic() - began, [], since, ok=reason == "done" and run.ok)
    return LeadOutcome(run, lead.led[-1], report, reason)


def _lead_loop(session: MainSession, lead: LeadTeam, follower: TeamFollower, run: AgentRun,
               deadline: float) -> tuple[AgentRun, str]:
    reminded = False
    while (coordinator := follower.follow()) is not None:
        if time.monotonic() >= deadline:
            return run, "timeout"
        if session.ctx.turn.cancel.is_set():
            return run, "interrupted"
        coordinator.pump(min(PUMP, max(0.0, deadline - time.monotonic())))
        texts = [t for t in (render(m) for m in follower.fresh()) if t]
        if texts:
            run = session.turn("\n\n".join(texts), by_person=False)
            reminded = False
            continue
        if not _active(lead) and not coordinator.inbox.waiting():
            return run, "done"
        if _active(lead) and coordinator.settled():
            if reminded:
                return run, "done"  # reminded once and still nothing to do: the run ends, teammates are stopped
            run, reminded = session.turn(QUIET_NOTE, by_person=False), True
    return run, "done"


def _active(lead: LeadTeam) -> list[str]:
    if lead.team is None or not TeamStore(lead.home).exists(lead.team):
        return []
    return [m.name for m in TeamStore(lead.home).get(lead.team).members if m.present() and m.name != LEAD_NAME]


def render(message: LeadMessage, *, person_answers_plans: bool = False) -> str:
    """What the lead model reads for one message (empty for what the runtime handled itself).

    ``person_answers_plans``: a plan is shown for what it is, the person's to approve (the interactive session).
    """
    who = message.sender
    frame = message.frame
    if isinstance(frame, IdleNotification):
        done = f" (completed task {frame.completed_task_id}: {frame.completed_status})" if frame.completed_task_id else ""
        what = frame.failure_reason if frame.idle_reason == "failed" else (frame.summary or frame.result or "")
        return teammate_block(who, f"[idle{done}] {what}")
    if isinstance(frame, PlanApprovalRequest) and person_answers_plans:
        return teammate_block(who, f"plan_approval_request {frame.request_id}, for the person to approve (they are "
                                   f"asked; you cannot answer it):\n{frame.plan_content}")
    if isinstance(frame, PlanApprovalRequest):
        return teammate_block(who, f"plan_approval_request {frame.request_id}: answer with SendMessage "
                                   f"message={{type: 'plan_approval_response', request_id: '{frame.request_id}', "
                                   f"approve, feedback}}\n{frame.plan_content}")
    if message.kind == "permission_request":
        return ""  # answered by the lead policy or denied; never the model's call
    if isinstance(frame, ShutdownApproved):
        return teammate_block(who, f"[shut down: approved {frame.request_id}]")
    if isinstance(frame, ShutdownRejected):
        return teammate_block(who, f"[shutdown rejected: {frame.reason}]")
    if message.kind == "terminated":
        return teammate_block(who, f"[terminated] {message.text}")
    return teammate_block(who, message.text, summary=message.summary)
