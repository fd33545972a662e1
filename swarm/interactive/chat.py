"""The interactive session's engine: the lead's turns on a worker thread, its team followed as events arrive.

- ``submit`` queues what the person typed (a turn already running: it waits
  its turn); slash commands run at once (``commands``).
- The worker runs one input at a time through the lead's ``MainSession``.
  A turn cut short by ``interrupt`` (Ctrl-C) ends at once — a running
  command is stopped, streaming text stops — and the model is told at the
  next input that the person interrupted it.
- While the lead leads a team, a watcher waits on the lead's inbox (the
  headless lead's ``LeadPump``): messages are shown as they arrive and
  become the lead's next turn (``render``, as headless); requests the lead
  policy leaves open go to the person's ``Desk`` and are withdrawn when
  answered elsewhere. A second watcher follows the teammates' activity
  files; the status line is rebuilt only when one of them saw a change.
- ``close`` ends the session: the turn is interrupted, the team shut down
  (handshake, then force) — the answers heard through the watcher's own
  coordinator, the one consumer of the lead's inbox here, even while its pump
  is still in flight — and what was kept (or refused to stop) is said.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from swarm.agent.headless import MainSession
from swarm.agent.hooks.permission_hooks import notify, stalled_hooks
from swarm.agent.limits import Interrupted
from swarm.core.clock import now_ms
from swarm.core.frames import IdleNotification, PlanApprovalRequest, ShutdownRejected
from swarm.core.names import LEAD_NAME
from swarm.core.permlog import PermissionEvent
from swarm.core.tasks import TaskStore
from swarm.core.teams import TeamStore
from swarm.core.text import flat
from swarm.errors import ConflictError, SwarmError
from swarm.interactive.focus import Focus
from swarm.interactive.questions import Desk, PersonAnswer, Question
from swarm.interactive.view import View
from swarm.runtime import permission_desk as team_desk
from swarm.runtime.costs import team_cost, usd
from swarm.runtime.lead_pump import LeadPump
from swarm.runtime.lead import SHUTDOWN_TIMEOUT, LeadTeam, TeamFollower, render
from swarm.runtime.lead_inbox import LeadMessage
from swarm.runtime.member_kinds import Machine, member_kind
from swarm.runtime.worktrees import of_member

log = logging.getLogger(__name__)

INTERRUPTED_NOTE = "[Request interrupted by user]"
WATCH_WAIT = 0.5
"""Seconds a watcher blocks per wait (events wake it sooner); also how soon it notices the session ending."""
CLOSE_WAIT = 10.0
"""Seconds ``close`` waits for an interrupted turn to come to a stop."""


@dataclass(frozen=True)
class LeadInput:
    text: str
    from_team: bool = False


class Chat:
    def __init__(self, session: MainSession, lead: LeadTeam, view: View, desk: Desk, session_id: str,
                 on_change: Callable[[], None] = lambda: None, shutdown_timeout: float = SHUTDOWN_TIMEOUT) -> None:
        self.session = session
        self.session_id = session_id
        self.home = lead.home
        self.lead = lead
        self.view = view
        self.desk = desk
        self.on_change = on_change
        self.shutdown_timeout = shutdown_timeout
        self.inputs: queue.Queue[LeadInput | None] = queue.Queue()
        self.busy = threading.Event()
        self.ended = threading.Event()
        self.status = ""
        """The team's status lines (rebuilt when something changed)."""
        self._rebuilding = threading.Lock()
        self._interrupted = False
        self._team_event = threading.Event()
        self.focus = Focus(lead.home, view, lambda: self.lead.team, on_change=lambda: self.on_change())
        """Whose transcript the main view shows, and where what the person types goes (``/view``, Ctrl-T)."""
        self._follower = TeamFollower(lead, lambda team: LeadPump(lead.home, team, on_request=self._offer,
                                                                  env=lead.env, stall_after=lead.stall_after,
                                                                  on_stalled=lambda name, text: stalled_hooks(
                                                                      self.session.ctx, text)))
        """The coordinator of the lead's team: pumped by the inbox thread, shared with the shutdown at ``close``."""
        self._threads = [threading.Thread(target=self._work, name="lead-turns", daemon=True),
                         threading.Thread(target=self._follow_inbox, name="lead-inbox", daemon=True),
                         threading.Thread(target=self._follow_activity, name="team-activity", daemon=True)]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    # -- the person's side ----------------------------------------------------------------

    def submit(self, text: str) -> None:
        """Queue a prompt for the lead (after the running turn, if any)."""
        if self.busy.is_set() or not self.inputs.empty():
            self.view.note("queued: the lead reads it when its current turn ends")
        self.inputs.put(LeadInput(text))

    def interrupt(self) -> bool:
        """Stop the running turn (True), or say there was none (False)."""
        if not self.busy.is_set():
            return False
        self.session.ctx.turn.cancel.set()
        self.session.ctx.turn.interrupt.set()
        return True

    def answer(self, question: Question, reply: PersonAnswer) -> None:
        """The person's answer: the lead's own call goes on; a teammate's request is answered and recorded."""
        if question.request_id is None:
            self.desk.answer(question, reply)
            return
        team = self.lead.team
        try:
            if team is None:
                raise ConflictError("the team is gone")
            if question.kind == "plan":
                team_desk.answer_plan(self.lead.home, team, question.request_id, approved=reply.choice != "deny",
                                      feedback=reply.reason, by="person")
            elif reply.choice == "deny":
                team_desk.deny(self.lead.home, team, question.request_id, reason=reply.reason, by="person")
            else:
                team_desk.approve(self.lead.home, team, question.request_id, always=reply.choice == "always",
                                  by="person")
        except SwarmError as exc:
            self.view.note(f"not recorded: {exc}")
        self.desk.answer(question, reply)

    def close(self) -> list[str]:
        """End the session: stop the turn, shut the team down; returns what was kept, one line each."""
        self.session.ctx.turn.cancel.set()
        self.session.ctx.turn.interrupt.set()
        self.inputs.put(None)
        self.focus.show(None)
        deadline = time.monotonic() + CLOSE_WAIT
        while self.busy.is_set() and time.monotonic() < deadline:
            time.sleep(0.05)
        self.ended.set()
        kept: list[str] = []
        team = self.lead.team
        if team is not None and TeamStore(self.lead.home).exists(team):
            self.view.note(f"shutting down team {team!r} (each teammate is asked, then stopped)")
        # the inbox thread's coordinator (made now if it had none yet): the one consumer of the lead's inbox here
        coordinator = self._follower.follow()
        stopped = self.lead.stop_teams(timeout=self.shutdown_timeout, reason="the lead's session ended",
                                       inboxes={coordinator.team: coordinator.inbox} if coordinator else None)
        if team is not None and team in stopped:
            kept += [f"{o.name} refused to shut down: {o.detail}; it is still running "
                     f"(`swarm kill {o.name} --team {team}` stops it)" for o in stopped[team] if o.result == "rejected"]
            for member in TeamStore(self.lead.home).get(team).members:  # also those that stopped earlier
                tree = of_member(team, member)
                if tree is not None and tree.state != "removed":
                    kept.append(f"{member.name}'s worktree {tree.path} (branch {tree.branch}): {tree.state}"
                                + (f", {tree.summary}" if tree.summary else ""))
            kept.append(f"team {team!r} and its task list stay on disk: `swarm status --team {team}`")
        self.session.close()
        return kept

    # -- the lead's turns -------------------------------------------------------------------

    def _work(self) -> None:
        while True:
            item = self.inputs.get()
            if item is None or self.ended.is_set():
                return
            self._turn(item)

    def _turn(self, item: LeadInput) -> None:
        self.busy.set()
        self.session.ctx.turn.cancel.clear()
        self.session.ctx.turn.interrupt.clear()
        text = item.text
        if self._interrupted:
            text, self._interrupted = f"{INTERRUPTED_NOTE}\n\n{text}", False
        began = time.monotonic()
        try:
            run = self.session.turn(text, by_person=False) if item.from_team else self.session.prompt(text)
        except SwarmError as exc:  # the model failed (after its retries): say so, keep the session
            self.view.warn(str(exc))
        except Exception:
            log.exception("lead turn failed")
            self.view.warn("the turn failed unexpectedly; the log has the details")
        else:
            self.view.turn_end(run, time.monotonic() - began)
            self._interrupted = run.stop_reason == "interrupted"
        finally:
            self.busy.clear()
            self._team_event.set()  # the turn may have created (or deleted) a team
            self.refresh()

    def stream(self, piece: str) -> None:
        """The provider's ``on_text``: shown live; stops the stream once the turn is interrupted."""
        if self.session.ctx.turn.cancel.is_set():
            raise Interrupted("interrupted while the model was writing")
        self.view.stream(piece)

    # -- the team ---------------------------------------------------------------------------

    def _follow_inbox(self) -> None:
        follower = self._follower  # this thread pumps its coordinator; ``close`` shares it
        try:
            while not self.ended.is_set():
                before = follower.coordinator
                coordinator = follower.follow()
                if coordinator is None:
                    self._team_event.wait(WATCH_WAIT)
                    self._team_event.clear()
                    continue
                if coordinator is not before:
                    self.refresh()
                try:
                    coordinator.pump(WATCH_WAIT)
                except SwarmError as exc:  # e.g. the team was deleted under us
                    log.warning("lead inbox", extra={"reason": str(exc)})
                    self._team_event.wait(WATCH_WAIT)
                    continue
                fresh = follower.fresh()
                self._show(fresh)
                offered = self.desk.offered_ids()
                gone = self.desk.withdraw(offered - {r.request_id for r in coordinator.permlog.pending()}) \
                    if offered else []
                for question in gone:
                    self.view.note(f"{question.asker}'s request was answered elsewhere: {question.what}")
                if fresh or gone:
                    self.refresh()
        finally:
            follower.close()

    def _show(self, fresh: list[LeadMessage]) -> None:
        for message in fresh:
            line = _line(message)
            if line:
                self.view.teammate(message, line)
        texts = [t for t in (render(m, person_answers_plans=self.lead.person_answers_plans) for m in fresh) if t]
        if texts:
            self.inputs.put(LeadInput("\n\n".join(texts), from_team=True))

    def _offer(self, request: PermissionEvent) -> None:
        if request.request_id in self.desk.offered_ids():
            return
        team = self.lead.team
        member = TeamStore(self.lead.home).get(team).member(request.agent) if team else None
        self.desk.offer(Question.of_request(request, Path(member.cwd) if member and member.cwd else self.lead.cwd))
        notify(self.session.ctx, f"{request.agent} needs your permission to use {request.tool}")

    def _follow_activity(self) -> None:
        watching: str | None = None
        watcher = None
        try:
            while not self.ended.is_set():
                team = self.lead.team
                if team != watching:
                    if watcher is not None:
                        watcher.close()
                    watcher, watching = None, team
                    if team is not None and TeamStore(self.lead.home).exists(team):
                        watcher = TeamStore(self.lead.home).watcher(team)  # who is active; busy, idle
                if watcher is None:
                    self._team_event.wait(WATCH_WAIT)
                    continue
                if watcher.wait(WATCH_WAIT):
                    self.refresh()
        finally:
            if watcher is not None:
                watcher.close()

    def refresh(self) -> None:
        """Rebuild the status lines from the team's files and tell the screen.

        The inbox, activity and keyboard threads all rebuild them, one at a time:
        a rebuild that read the files before another thread's change (a request
        now offered) can never land after the rebuild that saw it.
        """
        with self._rebuilding:
            self.status = self._status()
        self.on_change()

    def _status(self) -> str:
        team = self.lead.team
        if team is None:
            return ""
        try:
            members = [m for m in TeamStore(self.lead.home).get(team).members if m.name != LEAD_NAME]
            tasks = TaskStore(self.lead.home, team).list()
            cost = team_cost(self.lead.home, team)
        except SwarmError:
            return ""
        self.view.colors = {m.name: m.color for m in members if m.color}
        asking = {q.asker for q in self.desk.open()}
        machine = Machine(self.lead.env, self.lead.home)
        rows = []
        for member in members:
            state = "asking" if member.name in asking else member_kind(member, machine).state()
            task = next((t for t in tasks if t.owner == member.name and t.status == "in_progress"), None)
            parts = [f"{member.name}: {state}"]
            if task is not None:
                parts.append(f"#{task.id} {flat(task.subject, 40)}")
            if member.last_activity and state in ("busy", "idle", "asking"):
                parts.append(f"{_ago(now_ms() - member.last_activity)} ago")
            if member.tokens:
                parts.append(f"{member.tokens:,} tok")
            if cost.by_member.get(member.name):
                parts.append(usd(cost.by_member[member.name]))
            rows.append(" · ".join(parts))
        spent = f" | spent {cost.line()}" if cost.usd or cost.max_cost is not None else ""
        return f"team {team}: " + (" | ".join(rows) if rows else "no teammates yet") + spent


def _line(message: LeadMessage) -> str:
    """What the person reads for one message to the lead ('' for what needs no line)."""
    frame = message.frame
    if isinstance(frame, IdleNotification):
        done = f" (completed task #{frame.completed_task_id})" if frame.completed_task_id else ""
        what = frame.failure_reason if frame.idle_reason == "failed" else (frame.summary or frame.result or "")
        return f"idle{done}" + (f": {flat(what, 160)}" if what else "")
    if message.kind == "permission_request":
        return ""  # the question itself follows
    if isinstance(frame, PlanApprovalRequest):
        return "submitted a plan for approval"
    if message.kind == "shutdown_approved":
        return "shut down"
    if isinstance(frame, ShutdownRejected):
        return f"refused to shut down: {flat(frame.reason, 160)}"
    if message.kind == "terminated":
        return f"terminated: {flat(message.text, 160)}"
    return flat(message.text, 240) if message.kind == "message" else ""


def _ago(ms: int) -> str:
    seconds = max(0, ms // 1000)
    return f"{seconds}s" if seconds < 60 else f"{seconds // 60}m"
