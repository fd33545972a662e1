"""The lead's permission desk: pending requests, approve / deny, plans, the policy.

Every answer goes through ``PermissionLog.decide`` (one answer per request,
recorded with who decided) and is delivered to the teammate's inbox as a
``permission_response`` or ``plan_approval_response`` frame.

What the lead is shown about a request is ``what_is_asked``: the real call,
described from the request's input by the one describer
(``agent.permissions.describe``), never the description its sender wrote —
``swarm permissions``, the ``swarm up`` prompt and the interactive desk all
show that line, whole.

Where a request's call runs is the directory its teammate recorded with it
(``PermissionEvent.cwd``: a subagent's own), never a guess: the policy and
``what_is_asked`` judge and show its paths there. A request that names a
relative path and no cwd (a Claude Code teammate's) is not the policy's to
answer: a person does. The policy's relative rule patterns are read from the
teammate's own cwd, where the person meant them.

The desk never reads the lead's inbox: the requests Claude Code teammates
send there are recorded by the process's one consumer of it
(``runtime.lead_inbox``; in the CLI, ``lead_inbox.catch_up``) before the desk
lists or answers them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from swarm.agent.permissions.describe import describe
from swarm.agent.permissions.paths import names_relative_path
from swarm.agent.permissions.policy import PERMISSION_MODES, CallFacts, rule_decision
from swarm.agent.permissions.rules import as_update
from swarm.agent.permissions.settings import rules_of
from swarm.core.clock import now_iso, now_ms
from swarm.core.frames import (
    PermissionRequest,
    PermissionResponse,
    PermissionResponseBody,
    PlanApprovalRequest,
    PlanApprovalResponse,
    entry_frame,
    plan_digest,
)
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.names import LEAD_NAME
from swarm.core.permlog import PermissionEvent, PermissionLog
from swarm.core.protocol import InboxEntry, LeadPolicy, TeamFile
from swarm.core.teams import TeamStore
from swarm.core.text import one_line
from swarm.errors import ConflictError, UsageError

log = logging.getLogger(__name__)


def what_is_asked(request: PermissionEvent, cwd: Path) -> str:
    """The line the lead reads about ``request``: the call that would really run, built from its input (paths
    resolved where the call runs: the cwd it was recorded with, else the requester's ``cwd``), the model's own
    description only after it; a plan's first line."""
    if request.kind == "plan":
        return one_line(request.plan or "") or "(empty plan)"
    tool = request.tool or "?"
    if request.input is None:
        return f"{tool} (no input recorded)"
    return describe(tool, request.input, Path(request.cwd) if request.cwd else cwd, usual=cwd)


def requester_cwd(team_file: TeamFile, agent: str) -> Path:
    """Where ``agent``'s relative paths point: its own cwd, else the team lead's, else this process's."""
    for member in (team_file.member(agent), team_file.member(LEAD_NAME)):
        if member is not None and member.cwd:
            return Path(member.cwd)
    return Path.cwd()


def pending(home: Home, team: str) -> list[PermissionEvent]:
    """The requests nobody answered yet (those of Claude Code teammates once the lead's inbox was collected)."""
    TeamStore(home).get(team)
    return PermissionLog(home, team).pending()


def ingest_requests(home: Home, team: str, entries: Iterable[InboxEntry]) -> list[PermissionEvent]:
    """Record the permission and plan-approval requests Claude Code teammates wrote to the lead's inbox.

    swarm's teammates record their requests in ``permissions.jsonl`` themselves;
    Claude Code's only write the frame, so the lead side records them here
    (once each) and they are answered like any other. ``entries``: what the
    lead's inbox consumer (``runtime.lead_inbox``) collected.
    """
    team_file = TeamStore(home).get(team)
    senders = team_file.unmarked_senders()
    if not senders:
        return []
    permlog = PermissionLog(home, team)
    known = {event.request_id for event in permlog.events()}
    added = []
    for entry in entries:
        frame = entry_frame(entry, unmarked_from=senders)
        if not isinstance(frame, (PermissionRequest, PlanApprovalRequest)) or frame.request_id in known \
                or entry.sender not in senders:
            continue
        if isinstance(frame, PermissionRequest):  # the frame's own description is the model's: not kept
            event = PermissionEvent(event="request", request_id=frame.request_id, ts=now_ms(), agent=entry.sender,
                                    tool=frame.tool_name, input=frame.input,
                                    permission_suggestions=frame.permission_suggestions)
        else:
            event = PermissionEvent(event="request", request_id=frame.request_id, ts=now_ms(), kind="plan",
                                    agent=entry.sender, tool="ExitPlanMode", plan=frame.plan_content)
        event.description = what_is_asked(event, requester_cwd(team_file, entry.sender))
        permlog.record_request(event)
        known.add(frame.request_id)
        added.append(event)
    return added


def approve(home: Home, team: str, request_id: str, *, always: bool = False, by: str = "lead",
            updated_input: dict[str, Any] | None = None) -> PermissionEvent:
    """Let the call run; ``always`` also adds the suggested rule for that teammate."""
    permlog = PermissionLog(home, team)
    request = _permission(permlog, request_id)
    own = request.permission_suggestions if always else []  # a Claude Code teammate applies its own suggestions
    rule = _rule_to_add(request) if always and not own else None

    def deliver() -> None:
        if rule:
            TeamStore(home).modify(team, lambda t: _add_rule(t, request.agent, rule))
        updates = own or ([as_update(rule)] if rule else None)
        body = PermissionResponseBody(updated_input=updated_input, permission_updates=updates)
        _send(home, team, request.agent, PermissionResponse(request_id=request_id, subtype="success", response=body))

    return permlog.decide(request, "allow", by, rule_added=rule, deliver=deliver)


def deny(home: Home, team: str, request_id: str, *, reason: str | None = None, by: str = "lead") -> PermissionEvent:
    permlog = PermissionLog(home, team)
    request = _permission(permlog, request_id)
    why = reason or "denied by the lead"

    def deliver() -> None:
        _send(home, team, request.agent, PermissionResponse(request_id=request_id, subtype="error", error=why))

    return permlog.decide(request, "deny", by, reason=why, deliver=deliver)


def answer_plan(home: Home, team: str, request_id: str, *, approved: bool, feedback: str | None = None,
                mode: str | None = None, by: str = "lead") -> PermissionEvent:
    if mode is not None and mode not in PERMISSION_MODES:
        raise UsageError(f"unknown permission mode {mode!r}; use one of {', '.join(PERMISSION_MODES)}")
    permlog = PermissionLog(home, team)
    request = permlog.request(request_id)
    if request.kind != "plan":
        raise UsageError(f"{request_id} is a permission request; answer it with `swarm approve` or `swarm deny`")

    def deliver() -> None:
        _send(home, team, request.agent, PlanApprovalResponse(
            request_id=request_id, approved=approved, feedback=feedback, timestamp=now_iso(),
            permission_mode=mode, plan_digest=plan_digest(request.plan) if request.plan is not None else None))

    return permlog.decide(request, "allow" if approved else "deny", by, reason=feedback, deliver=deliver)


def apply_policy(home: Home, team: str) -> list[PermissionEvent]:
    """Answer pending requests that the team's lead policy covers (rules, and ``plans``)."""
    decided = []
    for request in PermissionLog(home, team).pending():
        decision = answer_by_policy(home, team, request)
        if decision is not None:
            decided.append(decision)
    return decided


def answer_by_policy(home: Home, team: str, request: PermissionEvent) -> PermissionEvent | None:
    """The policy's answer to one request, or None when the policy does not cover it (or it was answered)."""
    team_file = TeamStore(home).get(team)
    if team_file.lead_policy is None:
        return None
    try:
        return _by_policy(home, team, team_file, team_file.lead_policy, request)
    except ConflictError:  # someone answered it meanwhile
        return None


def _by_policy(home: Home, team: str, team_file: TeamFile, policy: LeadPolicy,
               request: PermissionEvent) -> PermissionEvent | None:
    if request.kind == "plan":
        if policy.plans == "ask":
            return None
        return answer_plan(home, team, request.request_id, approved=policy.plans == "approve",
                           by=f"policy:plans={policy.plans}",
                           feedback=None if policy.plans == "approve" else "plans are denied by the lead policy")
    tool, args, own = request.tool or "", request.input or {}, requester_cwd(team_file, request.agent)
    if request.cwd is None and names_relative_path(tool, args):
        return None  # where the call runs is not known: a person answers
    call = CallFacts(tool, args, read_only=False, cwd=Path(request.cwd) if request.cwd else own, rules_cwd=own)
    decision = rule_decision(call, rules_of(policy))
    by = "policy:" + (decision.by.removeprefix("rule:") if decision else "")
    if decision is not None and decision.verdict == "deny":
        return deny(home, team, request.request_id, reason=f"denied by lead {by.replace(':', ' ', 1)}", by=by)
    if decision is not None and decision.verdict == "allow":
        return approve(home, team, request.request_id, by=by)
    return None  # no rule, an ask rule, or a protected path: a person answers


def _permission(permlog: PermissionLog, request_id: str) -> PermissionEvent:
    request = permlog.request(request_id)
    if request.kind != "permission":
        raise UsageError(f"{request_id} is a plan; answer it with `swarm plan approve` or `swarm plan reject`")
    return request


def _rule_to_add(request: PermissionEvent) -> str:
    if not request.suggestions:
        raise UsageError(f"request {request.request_id} has no suggested rule to add; approve it without --always")
    return request.suggestions[0]


def _add_rule(team_file: TeamFile, agent: str, rule: str) -> None:
    member = team_file.member(agent)
    if member is None:
        return
    rules = list(member.allowed_tools or [])
    if rule not in rules:
        rules.append(rule)
    member.allowed_tools = rules


def _send(home: Home, team: str, agent: str, frame: PermissionResponse | PlanApprovalResponse) -> None:
    Mailbox(home, team).send_frame(agent, frame, sender=LEAD_NAME, summary="answer to your request")
