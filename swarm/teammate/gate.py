"""The teammate's permission gate: rules and mode decide, the lead answers the rest.

A call that needs approval becomes a ``permission_request`` in the lead's inbox
(and the team's permission record); the teammate waits, bounded, for the
matching ``permission_response``. No answer in time is a denial, and the model
is told which. If the request cannot be written, the call fails loudly.

A request carries the directory its call really runs in (a subagent's own
cwd, not the teammate's) and its input with the file path made absolute
there (``paths.anchored``): the lead policy, ``swarm permissions`` and the
desk judge and show that, and an approval runs exactly that input. Rules are
anchored at the teammate's cwd, where they were written (``CallFacts.rules_cwd``).
"""

from __future__ import annotations

import copy
import logging
import os
import secrets
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from swarm.agent.live_events import LiveEvent
from swarm.agent.hooks.permission_hooks import permission_request
from swarm.agent.permissions.describe import describe
from swarm.agent.permissions.paths import anchored
from swarm.agent.permissions.policy import CallFacts, RuleSet, decide
from swarm.agent.permissions.rules import (
    Rule,
    as_update,
    parse_rules,
    rules_in,
    suggest,
)
from swarm.agent.permissions.settings import rules_of
from swarm.agent.sandbox import NETWORK_TOOL, NetworkInput, network_input, sandbox_facts
from swarm.agent.tool_api.base import Tool
from swarm.agent.tool_api.context import ToolContext, ToolError
from swarm.agent.transcript import Transcript
from swarm.core.clock import now_iso, now_ms
from swarm.core.frames import (
    PermissionRequest,
    PermissionResponse,
    PlanApprovalRequest,
    PlanApprovalResponse,
    ShutdownRequest,
    entry_frame,
)
from swarm.backends.procs import PROC_TOKEN_VAR
from swarm.core.home import Home, ensure_dir
from swarm.core.mailbox import Mailbox
from swarm.core.names import LEAD_NAME
from swarm.core.permlog import PermissionEvent, PermissionLog
from swarm.core.protocol import InboxEntry, TeamFile
from swarm.core.signing import LeadVerifier
from swarm.core.teams import TeamStore
from swarm.core.text import one_line
from swarm.errors import ConflictError, SwarmError
from swarm.teammate.config import TeammateConfig
from swarm.teammate.fence import Fence
from swarm.teammate.lifecycle import Lifecycle
from swarm.teammate.answer_wait import wait_for_frame

log = logging.getLogger(__name__)


class TeammateGate:
    def __init__(self, config: TeammateConfig, home: Home, mailbox: Mailbox, transcript: Transcript,
                 settings: RuleSet, lifecycle: Lifecycle, lead: LeadVerifier) -> None:
        self.config = config
        self.lead = lead
        self.lifecycle = lifecycle
        self.home = home
        self.mailbox = mailbox
        self.transcript = transcript
        self.settings = settings
        self.permlog = PermissionLog(home, config.team)
        self.teams = TeamStore(home)
        self.team = self.teams.roster(config.team)  # read per tool call: re-read only when it changed
        self.granted: list[str] = []
        self._built: tuple[TeamFile, tuple[tuple[str, ...], ...], RuleSet] | None = None
        """The rules ``_rules`` built last, with what they were built from."""
        self.mode = "plan" if config.plan_mode_required else config.permission_mode
        self.on_event: Callable[[LiveEvent], object] = lambda event: None
        """Told of each request sent and its answer (the teammate's live view)."""
        self.fencing = Fence(self.teams, config.team, config.name, os.environ.get(PROC_TOKEN_VAR))
        self.fence = self.fencing.check
        """Ends the process when it was declared dead meanwhile (``teammate.fence``); before every tool call."""

    # -- ToolGate ----------------------------------------------------------------

    def authorize(self, tool: Tool[BaseModel], args: BaseModel, tool_use_id: str, ctx: ToolContext) -> BaseModel:
        self.fence()
        dumped = args.model_dump(mode="json", by_alias=True, exclude_none=True)
        facts = CallFacts(tool=tool.name, args=dumped, read_only=tool.read_only, cwd=ctx.identity.cwd,
                          write_roots=ctx.identity.write_roots, rules_cwd=self.config.cwd,
                          **sandbox_facts(ctx.services.sandbox, tool.name, dumped, ctx.identity.cwd))
        decision = decide(facts, self.mode, self._rules(ctx.turn.granted_rules, ctx.turn.asked_rules))
        if decision.verdict == "allow":
            return args
        if decision.verdict == "deny":
            self.transcript.event("permission_denied", tool=tool.name, by=decision.by, reason=decision.reason)
            raise ToolError(f"permission denied: {decision.reason}")
        if self._shutdown_owed():
            raise ToolError("not run: the lead asked this teammate to shut down; answer the shutdown request "
                            "(SendMessage shutdown_response) instead of starting new work")
        if permission_request(ctx, tool.name, facts.args, mode=self.mode, asked_by=decision.by) == "allow":
            self.transcript.event("permission_hook_allowed", tool=tool.name)
            return args
        return self._ask(tool.name, tool.input_model, facts, tool_use_id, ctx.turn.cancel, ctx.turn.interrupt)

    def ask_network(self, host: str, port: int) -> bool:
        """May a sandboxed command connect to ``host`` (the sandbox's proxy asks)? Rules first (``WebFetch(domain:
        host)``), then the lead, as for a tool call; "always" adds that rule for this teammate."""
        facts = CallFacts(tool=NETWORK_TOOL, args=network_input(host, port), read_only=False, cwd=self.config.cwd,
                          rules_cwd=self.config.cwd)
        decision = decide(facts, self.mode, self._rules())
        if decision.verdict != "ask":
            return decision.verdict == "allow"
        try:
            self._ask(NETWORK_TOOL, NetworkInput, facts, f"sandbox-network-{secrets.token_hex(4)}", None, None)
        except ToolError as exc:
            self.transcript.event("network_denied", host=host, port=port, reason=str(exc))
            return False
        return True

    def with_mode(self, mode: str) -> TeammateGate:
        """A view of this gate for a subagent in its own mode: same rules and grants, same lead."""
        view = copy.copy(self)
        view.mode = mode
        return view

    def rules(self) -> RuleSet:
        """The rules in force now (settings, team, member, grants), without a skill's for-the-turn ones."""
        return self._rules()

    def _rules(self, for_now: list[str] | None = None, ask_now: list[str] | None = None) -> RuleSet:
        """Settings, team and member rules, grants from the lead, ``for_now`` (an active skill's allowed-tools)
        and ``ask_now`` (a PreToolUse hook asked for this call).

        Built again only when one of those changed: the team file as read (``Roster`` gives the same object
        until the file changes), the grants, or this call's extras; the settings and config are fixed.
        """
        team = self.team.current()
        inputs = (tuple(self.granted), tuple(for_now or ()), tuple(ask_now or ()))
        built = self._built
        if built is not None and built[0] is team and built[1] == inputs:
            return built[2]
        member = team.member(self.config.name)
        own = RuleSet(
            tuple(parse_rules([*self.config.allowed_tools, *(member.allowed_tools or [] if member else []),
                               *self.granted]) + _valid_rules(for_now or [])),
            tuple(parse_rules([*self.config.disallowed_tools, *(member.disallowed_tools or [] if member else [])])),
            tuple(parse_rules(ask_now or [])),
        )
        rules = self.settings.merged(rules_of(team.permissions)).merged(own)
        self._built = (team, inputs, rules)
        return rules

    # -- asking the lead -----------------------------------------------------------

    def _ask(self, name: str, model: type[BaseModel], facts: CallFacts, tool_use_id: str,
             cancel: threading.Event | None, interrupt: threading.Event | None) -> BaseModel:
        """Ask the lead; ``cancel`` (the turn's) is set when a shutdown request cut the wait short, ``interrupt``
        (the person's Ctrl-C) ends the wait. A network question from the sandbox's proxy has neither."""
        request_id = f"perm-{now_ms()}-{secrets.token_hex(3)}"
        cwd = facts.cwd.resolve()
        asked = replace(facts, args=anchored(name, facts.args, cwd), cwd=cwd)
        rules = suggest(name, asked.args, self.config.cwd)  # a rule reads from where rules are written
        frame = PermissionRequest(
            request_id=request_id, agent_id=self.config.agent_id, tool_name=name, tool_use_id=tool_use_id,
            description=describe(name, asked.args, cwd, usual=self.config.cwd), input=asked.args,
            permission_suggestions=[as_update(r) for r in rules], cwd=str(cwd))
        event = PermissionEvent(event="request", request_id=request_id, ts=now_ms(), agent=self.config.name,
                                tool=name, input=asked.args, cwd=str(cwd), description=frame.description,
                                suggestions=rules)
        self._send(event, frame, f"permission: {frame.description}"[:100])
        response = self._await(request_id, PermissionResponse, event, interrupt)
        if response is None and interrupt is not None and interrupt.is_set():
            raise ToolError("not run: the person interrupted this turn (Ctrl-C) while the request waited")
        if response is None and self._shutdown_owed():
            if cancel is not None:
                cancel.set()
            raise ToolError("not run: the lead asked this teammate to shut down")
        if response is None:
            raise ToolError(f"permission denied: the lead did not answer within {self.config.permission_timeout:g}s")
        if response.subtype == "error":
            raise ToolError(f"permission denied by the lead: {response.error or 'no reason given'}")
        return self._approved(name, model, asked, response)

    def _approved(self, name: str, model: type[BaseModel], facts: CallFacts, response: PermissionResponse
                  ) -> BaseModel:
        body = response.response
        for update in (body.permission_updates or []) if body else []:
            self.granted.extend(rules_in(update))
        new_input = body.updated_input if body and body.updated_input is not None else facts.args
        try:
            return model.model_validate(new_input)
        except ValidationError as exc:
            raise ToolError(f"the lead's updated input for {name} is invalid: {exc.errors()[0]['msg']}") from exc

    def _send(self, event: PermissionEvent, frame: PermissionRequest | PlanApprovalRequest, summary: str) -> None:
        try:
            self.permlog.record_request(event)
            self.mailbox.send_frame(LEAD_NAME, frame, sender=self.config.name, summary=summary)
        except (SwarmError, OSError) as exc:
            raise ToolError(f"could not send the request to the lead ({exc}); the call was not run") from exc
        self.transcript.event("approval_requested", request_id=event.request_id, request_kind=event.kind)
        self.on_event(LiveEvent(
            type="request", request_id=event.request_id, kind=event.kind, answerer=LEAD_NAME,
            text=f"{event.description or event.tool}  (answer: swarm approve|deny {event.request_id} "
                 f"--team {self.config.team})"))

    def _await(self, request_id: str, kind: type, event: PermissionEvent,
               interrupt: threading.Event | None = None) -> Any:
        def match(frame: object, entry: InboxEntry) -> bool:
            return isinstance(frame, kind) and getattr(frame, "request_id", None) == request_id

        answer = wait_for_frame(self.mailbox, self.config.name, match, self.config.permission_timeout,
                                abort=_is_shutdown, lead=self.lead, interrupt=interrupt)
        interrupted = answer is None and interrupt is not None and interrupt.is_set()
        if answer is None:
            by, why = ("person", "interrupted by the person (Ctrl-C)") if interrupted else (
                "shutdown", "the teammate was asked to shut down") if self._shutdown_owed() else (
                "timeout", "no answer from the lead in time")
            try:
                self.permlog.decide(event, "deny", by, reason=why)
            except ConflictError:  # answered just now: the response is on its way
                answer = wait_for_frame(self.mailbox, self.config.name, match, 2.0, lead=self.lead)
        self.transcript.event("approval_answered", request_id=request_id, answered=answer is not None)
        self.on_event(_answered(request_id, answer, self._shutdown_owed() if answer is None else False)
                      if not interrupted else LiveEvent(type="answered", request_id=request_id, kind="denied",
                                                        answerer="person", text="interrupted (Ctrl-C)"))
        return answer

    def _shutdown_owed(self) -> bool:
        """Does this teammate owe the lead a shutdown answer (including a request not delivered yet)?"""
        for entry in self.mailbox.pending(self.config.name):
            frame = entry_frame(entry, self.lead)
            if isinstance(frame, ShutdownRequest):
                self.lifecycle.shutdown_requested(frame)
        return self.lifecycle.owed is not None

    # -- plan mode -----------------------------------------------------------------

    def submit_plan(self, plan: str, interrupt: threading.Event | None = None) -> str:
        if self.mode != "plan":
            raise ToolError(f"you are not in plan mode (mode: {self.mode}); go ahead with the work")
        request_id = f"plan_approval-{now_ms()}@{self.config.name}"
        plan_file = self._write_plan(request_id, plan)
        frame = PlanApprovalRequest(request_id=request_id, sender=self.config.name, timestamp=now_iso(),
                                    plan_file_path=str(plan_file), plan_content=plan)
        event = PermissionEvent(event="request", request_id=request_id, ts=now_ms(), kind="plan",
                                agent=self.config.name, tool="ExitPlanMode", plan=plan,
                                description=one_line(plan) or "(empty plan)")
        self._send(event, frame, "plan approval request")
        answer = self._await(request_id, PlanApprovalResponse, event, interrupt)
        if answer is None and interrupt is not None and interrupt.is_set():
            raise ToolError("the person interrupted this turn (Ctrl-C) while the plan waited; you are still in "
                            "plan mode")
        if answer is None:
            raise ToolError(f"the lead did not answer the plan within {self.config.permission_timeout:g}s; "
                            "you are still in plan mode")
        if not answer.approved:
            return (f"The lead rejected the plan. Feedback: {answer.feedback or '(none)'}\n"
                    "You are still in plan mode: revise the plan and submit it again with ExitPlanMode.")
        self.mode = after_plan(answer.permission_mode, self.config.permission_mode)
        self.teams.update_member(self.config.team, self.config.name, mode=self.mode)
        return f"The lead approved the plan. You are now in {self.mode} mode: implement it."

    def _write_plan(self, request_id: str, plan: str) -> Path:
        directory = ensure_dir(self.home.team_dir(self.config.team) / "plans")
        path = directory / f"{request_id.replace('@', '-')}.md"
        path.write_text(plan)
        return path


def _valid_rules(texts: list[str]) -> list[Rule]:
    """The rules among ``texts`` that parse (a skill's allowed-tools may hold entries swarm cannot read)."""
    rules = []
    for text in texts:
        try:
            rules.append(Rule.parse(text))
        except SwarmError:
            log.warning("ignored an allowed-tools entry that is not a rule", extra={"rule": text})
    return rules


def _answered(request_id: str, answer: object, shutdown: bool) -> LiveEvent:
    """The live event for a request's answer (``None``: nobody answered in time, or a shutdown cut it short)."""
    if answer is None:
        return LiveEvent(type="answered", request_id=request_id, kind="denied" if shutdown else "timeout",
                         text="the teammate was asked to shut down" if shutdown else "no answer in time")
    if isinstance(answer, PlanApprovalResponse):
        return LiveEvent(type="answered", request_id=request_id, kind="approved" if answer.approved else "denied",
                         answerer=LEAD_NAME, text=answer.feedback or None)
    denied = isinstance(answer, PermissionResponse) and answer.subtype == "error"
    return LiveEvent(type="answered", request_id=request_id, kind="denied" if denied else "approved",
                     answerer=LEAD_NAME, text=(answer.error or None) if denied and isinstance(
                         answer, PermissionResponse) else None)


def _is_shutdown(frame: object, entry: InboxEntry) -> bool:
    return isinstance(frame, ShutdownRequest)


def after_plan(granted: str | None, spawned: str) -> str:
    """The mode a teammate works in once its plan is approved: the one the answer granted, else the one it was
    started in (``default`` if that was plan mode)."""
    if granted and granted != "plan":
        return granted
    return spawned if spawned != "plan" else "default"
