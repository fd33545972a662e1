"""Questions for the person at the terminal: one queue, answered in order, withdrawn when answered elsewhere.

Two kinds of askers meet here. A teammate's permission or plan request is
*offered*: the session answers it through the runtime's desk (recorded and
delivered like ``swarm approve``), and it is *withdrawn* when another
terminal answered it first. The lead's own tool calls *ask*: the lead's
worker thread blocks until the person replies (``PersonGate``).
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from swarm.agent.hooks.permission_hooks import notify, permission_request
from swarm.agent.permissions.describe import describe
from swarm.agent.permissions.paths import anchored
from swarm.agent.permissions.policy import CallFacts, RuleSet, decide
from swarm.agent.permissions.rules import parse_rules, suggest
from swarm.agent.tool_api.base import Tool
from swarm.agent.tool_api.context import ToolContext, ToolError
from swarm.core.permlog import PermissionEvent
from swarm.runtime.lead_pump import Answer
from swarm.runtime.permission_desk import what_is_asked

LEAD_ASKER = "you"
"""Who a question from the lead's own tools is shown as coming from."""


@dataclass(frozen=True)
class PersonAnswer:
    choice: Answer
    reason: str | None = None
    """Why a denial (or a plan's feedback); None when the person gave none."""


@dataclass
class Question:
    kind: Literal["permission", "plan"]
    asker: str
    """The teammate's name, or ``LEAD_ASKER`` for the lead's own tool call."""
    tool: str
    what: str
    """The real command, path or plan summary: what the person is asked about."""
    request_id: str | None = None
    """The team's permission record id (a teammate's request); None for the lead's own."""
    rule: str | None = None
    """What "allow always" adds, e.g. ``Bash(pytest:*)``."""
    plan: str = ""
    _reply: PersonAnswer | None = field(default=None, repr=False)
    _done: threading.Event = field(default_factory=threading.Event, repr=False)

    @classmethod
    def of_request(cls, request: PermissionEvent, cwd: Path) -> Question:
        """A teammate's request; what it asks is ``desk.what_is_asked`` (from its input, in the teammate's
        ``cwd``), never the description the requester wrote, so the person sees the call that would really run."""
        what = what_is_asked(request, cwd)
        if request.kind == "plan":
            return cls("plan", request.agent, "ExitPlanMode", what, request.request_id, plan=request.plan or "")
        return cls("permission", request.agent, request.tool or "?", what, request.request_id,
                   rule=request.suggestions[0] if request.suggestions else None)


class Desk:
    """The open questions, oldest first; ``on_change`` runs (on the changing thread) when the set changes."""

    def __init__(self, on_change: Callable[[], None] = lambda: None) -> None:
        self._lock = threading.Lock()
        self._open: list[Question] = []
        self._answered: set[str] = set()
        """Request ids answered here: a request still pending on disk a moment longer is not offered again."""
        self.on_change = on_change

    def offer(self, question: Question) -> None:
        """Queue a teammate's request (once per request id, never again once answered here)."""
        with self._lock:
            if question.request_id in self._answered or any(q.request_id == question.request_id for q in self._open):
                return
            self._open.append(question)
        self.on_change()

    def ask(self, question: Question, cancel: threading.Event) -> PersonAnswer | None:
        """Queue ``question`` and block until the person answers it; None when ``cancel`` is set first."""
        with self._lock:
            self._open.append(question)
        self.on_change()
        while not question._done.wait(0.1):
            if cancel.is_set():
                self._remove(question)
                return None
        return question._reply

    def current(self) -> Question | None:
        with self._lock:
            return self._open[0] if self._open else None

    def open(self) -> list[Question]:
        with self._lock:
            return list(self._open)

    def answer(self, question: Question, reply: PersonAnswer) -> None:
        if question.request_id is not None:
            with self._lock:
                self._answered.add(question.request_id)
        question._reply = reply
        question._done.set()
        self._remove(question)

    def withdraw(self, request_ids: set[str]) -> list[Question]:
        """Drop the offered questions whose requests were answered elsewhere; returns them."""
        with self._lock:
            gone = [q for q in self._open if q.request_id is not None and q.request_id in request_ids]
            self._open = [q for q in self._open if q not in gone]
        if gone:
            self.on_change()
        return gone

    def offered_ids(self) -> set[str]:
        with self._lock:
            return {q.request_id for q in self._open if q.request_id is not None}

    def _remove(self, question: Question) -> None:
        with self._lock:
            if question in self._open:
                self._open.remove(question)
        self.on_change()


class PersonGate:
    """The lead's own tool calls: rules and mode decide, the person answers what they leave open."""

    def __init__(self, desk: Desk, rules: RuleSet, mode: str = "default", *, cwd: Path | None = None) -> None:
        self.desk = desk
        self.rules = rules
        self._mode = mode
        self.cwd = cwd
        """The session's directory, where the person's rules are anchored (a subagent's cwd is not); None: the call's."""
        self.granted: list[str] = []
        """Rules the person allowed "always" in this session."""

    @property
    def mode(self) -> str:
        return self._mode

    def with_mode(self, mode: str) -> PersonGate:
        view = copy.copy(self)
        view._mode = mode
        return view

    def authorize(self, tool: Tool[BaseModel], args: BaseModel, tool_use_id: str, ctx: ToolContext) -> BaseModel:
        facts = CallFacts(tool=tool.name, args=args.model_dump(mode="json", by_alias=True, exclude_none=True),
                          read_only=tool.read_only, cwd=ctx.identity.cwd, write_roots=ctx.identity.write_roots,
                          rules_cwd=self.cwd)
        own = RuleSet(allow=tuple(parse_rules([*self.granted, *ctx.turn.granted_rules])),
                      ask=tuple(parse_rules(ctx.turn.asked_rules)))
        decision = decide(facts, self._mode, self.rules.merged(own))
        if decision.verdict == "allow":
            return args
        if decision.verdict == "deny":
            raise ToolError(f"permission denied: {decision.reason}")
        if permission_request(ctx, tool.name, facts.args, mode=self._mode, asked_by=decision.by) == "allow":
            return args
        notify(ctx, f"swarm needs your permission to use {tool.name}")
        rules = suggest(tool.name, anchored(tool.name, facts.args, facts.cwd), self.cwd or facts.cwd)
        question = Question("permission", LEAD_ASKER, tool.name,
                            describe(tool.name, facts.args, facts.cwd, usual=self.cwd), rule=rules[0] if rules else None)
        reply = self.desk.ask(question, ctx.turn.cancel)
        _record(ctx, question, reply)
        if reply is None:
            raise ToolError("not run: the turn was interrupted before the person answered")
        if reply.choice == "deny":
            raise ToolError(f"permission denied by the person{': ' + reply.reason if reply.reason else ''}")
        if reply.choice == "always" and question.rule:
            self.granted.append(question.rule)
        return args


def _record(ctx: ToolContext, question: Question, reply: PersonAnswer | None) -> None:
    """The person's answer to the lead's own call, in the session's transcript (a teammate's goes to the team's
    permission record instead)."""
    transcript = ctx.turn.running.conversation.transcript if ctx.turn.running is not None else None
    if transcript is not None:
        transcript.event("permission_answered", tool=question.tool, input_described=question.what,
                         decision=reply.choice if reply else "interrupted", reason=reply.reason if reply else None,
                         rule_added=question.rule if reply and reply.choice == "always" else None)
