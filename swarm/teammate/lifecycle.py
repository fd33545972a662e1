"""A teammate's life as one state machine, and the only place its shutdown state lives.

    starting ──join──▶ idle ◀──▶ busy ──▶ stopping ──▶ gone

- ``idle`` / ``busy`` are published to the team file (``swarm status``); a
  repeat of the published state with the same token count is not rewritten.
- A ``shutdown_request`` from the lead does not stop anything by itself: it is
  *owed* an answer. The model answers it through SendMessage
  (``answer_shutdown``): approve → ``stopping`` and the run ends after the
  current step; reject → the request is forgotten and work goes on. A turn that
  ends with the request still owed is approved by the runtime
  (``approve_owed``), so a teammate never ignores a shutdown.
- The lead process gone (``teammate.lead_watch``: crashed, ``kill -9``) is
  taken as a shutdown nobody can ask for any more (``lead_gone``):
  ``stopping``, then ``gone`` as ``stopped``, with nothing sent back.
- ``gone`` is written through ``swarm.core.members.mark_gone`` — the one owner
  of "this member is no longer active" — with ``stopped`` after a shutdown and
  ``dead`` (plus one ``teammate_terminated`` notice to the lead) after a signal.

The frames a teammate sends about its own life (``shutdown_approved``,
``shutdown_rejected``, ``idle_notification``) are built here and nowhere else.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Literal

from pydantic import ValidationError

from swarm.agent.limits import EndRun
from swarm.agent.tool_api.context import ToolError
from swarm.agent.transcript import Transcript
from swarm.core.clock import now_iso, now_ms
from swarm.core.frames import (
    IdleNotification,
    ShutdownApproved,
    ShutdownRejected,
    ShutdownRequest,
)
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.members import mark_gone
from swarm.core.names import LEAD_NAME
from swarm.core.protocol import Activity
from swarm.core.teams import TeamStore
from swarm.core.text import one_line
from swarm.errors import SwarmError
from swarm.models.messages import Usage
from swarm.teammate.config import TeammateConfig

log = logging.getLogger(__name__)

State = Literal["starting", "idle", "busy", "stopping", "gone"]
IdleReason = Literal["available", "interrupted", "failed"]


class Lifecycle:
    """The state of one teammate process, published to the team file and the lead."""

    def __init__(self, config: TeammateConfig, home: Home, mailbox: Mailbox, transcript: Transcript,
                 pane_id: str) -> None:
        self.config = config
        self.home = home
        self.mailbox = mailbox
        self.transcript = transcript
        self.pane_id = pane_id
        self.teams = TeamStore(home)
        self.state: State = "starting"
        self.owed: ShutdownRequest | None = None
        """The shutdown request this teammate still has to answer."""
        self._published: tuple[str, int] | None = None
        self.on_state: Callable[[str, Usage], None] = lambda state, usage: None
        """Told each state published (busy, idle) and the end (gone), with the tokens so far: the live view."""

    # -- states ------------------------------------------------------------------

    @property
    def stopping(self) -> bool:
        return self.state in ("stopping", "gone")

    def joined(self, pid: int, proc_start: float | None, usage: Usage,
               worker: tuple[int, float | None] | None = None) -> None:
        """Membership (durable, in the team file), then a fresh activity record replacing an earlier process's.

        ``worker``: this process when it is not ``pid`` itself but forked for it (``swarm.teammate.served``).
        """
        stamp = now_ms()
        worker_pid, worker_start = worker or (None, None)
        # the transcript first: whoever sees this member idle may count on its life being recorded
        self.transcript.event("joined", pid=pid, backend=self.config.backend, pane=self.pane_id)
        self.teams.update_member(
            self.config.team, self.config.name, is_active=True, pid=pid, proc_start=proc_start,
            worker_pid=worker_pid, worker_start=worker_start,
            tmux_pane_id=self.pane_id, backend_type=self.config.backend, status="idle",
            last_activity=stamp, cwd=str(self.config.cwd), tokens=usage.total)
        self.state = "idle"
        self._publish("idle", usage, stamp)

    def busy(self, usage: Usage) -> None:
        self._enter("busy", usage)

    def idle(self, usage: Usage) -> None:
        self._enter("idle", usage)

    def _enter(self, state: Literal["idle", "busy"], usage: Usage) -> None:
        if self.stopping or (state == "idle" and self.owed is not None):
            return  # stopping, or about to: "idle" would tell the lead this teammate waits for work
        self.state = state
        if (state, usage.total) != self._published:
            self._publish(state, usage, now_ms())

    def _publish(self, state: Literal["idle", "busy"], usage: Usage, stamp: int) -> None:
        """Busy/idle and tokens go to the activity file beside the team file: no config.json rewrite, no fsync."""
        self.teams.set_activity(self.config.team, self.config.name, Activity(
            status=state, last_activity=stamp, tokens=usage.total, cache_read_tokens=usage.cache_read_input_tokens,
            cache_creation_tokens=usage.cache_creation_input_tokens))
        self._published = (state, usage.total)
        self.on_state(state, usage)

    def gone(self, usage: Usage, killed_by: str | None) -> None:
        """Mark the member inactive; after a signal (not a shutdown) the lead is told, once."""
        self.state = "gone"
        self.on_state("gone", usage)
        try:
            self.teams.update_member(self.config.team, self.config.name, tokens=usage.total,
                                     cache_read_tokens=usage.cache_read_input_tokens,
                                     cache_creation_tokens=usage.cache_creation_input_tokens)
            if killed_by is None:
                mark_gone(self.home, self.config.team, self.config.name, "stopped")
            else:
                mark_gone(self.home, self.config.team, self.config.name, "dead",
                          notice=f"{self.config.name} was stopped by {killed_by} (pane closed or process killed)")
        except SwarmError as exc:  # the team may have been deleted under us; nothing left to mark
            log.warning("could not mark member inactive", extra={"reason": str(exc)})

    # -- shutdown ----------------------------------------------------------------

    def lead_gone(self) -> None:
        """The process leading the team is gone: stop as after an approved shutdown (nobody is left to ask)."""
        if self.stopping:
            return
        self.transcript.event("lead_gone", durable=True)
        self.owed = None
        self.state = "stopping"

    def shutdown_requested(self, request: ShutdownRequest) -> None:
        """Remember that the lead asked this teammate to stop (a repeat of the same request is ignored)."""
        if self.stopping or (self.owed is not None and self.owed.request_id == request.request_id):
            return
        self.owed = request
        self.transcript.event("shutdown_requested", request_id=request.request_id, request=request.wire())

    def restore(self) -> None:
        """After a restart: the shutdown request an earlier process of this teammate took but never answered."""
        answered = {e.get("request_id") for e in self.transcript.events("shutdown_answered")}
        for event in reversed(self.transcript.events("shutdown_requested")):
            if event.get("request_id") in answered:
                return
            try:
                self.owed = ShutdownRequest.model_validate(event.get("request"))
            except ValidationError:
                continue
            return

    def answer_shutdown(self, request_id: str, approve: bool, reason: str | None) -> str:
        """The model's answer (through SendMessage); approving ends the run after this step."""
        if self.owed is None or self.owed.request_id != request_id:
            waiting = f"the open request is {self.owed.request_id!r}" if self.owed else "no shutdown request is open"
            raise ToolError(f"no shutdown request {request_id!r} is waiting for your answer; {waiting}")
        if approve:
            self._approve(self.owed)
            raise EndRun("shutdown", "Shutdown approved; this agent stops after this step.")
        if not reason:
            raise ToolError("rejecting a shutdown needs a reason")
        self._send(ShutdownRejected(request_id=request_id, sender=self.config.name, reason=reason,
                                    timestamp=now_iso()), "shutdown rejected")
        self.transcript.event("shutdown_answered", request_id=request_id, approved=False)
        self.owed = None
        return "Shutdown rejected; keep working."

    def approve_owed(self) -> None:
        """Approve the request still owed after a turn (the model did not answer it)."""
        if self.owed is not None and not self.stopping:
            self._approve(self.owed)

    def _approve(self, request: ShutdownRequest) -> None:
        self._send(ShutdownApproved(request_id=request.request_id, sender=self.config.name, timestamp=now_iso(),
                                    pane_id=self.pane_id, backend_type=self.config.backend), "shutdown approved")
        self.transcript.event("shutdown_answered", request_id=request.request_id, approved=True)
        self.owed = None
        self.state = "stopping"

    # -- telling the lead ----------------------------------------------------------

    def notify_idle(self, reason: IdleReason, *, result: str | None = None, summary: str | None = None,
                    failure: str | None = None, completed: str | None = None) -> None:
        """One ``idle_notification`` to the lead (with the task the turn completed), unless about to stop."""
        if self.stopping or self.owed is not None:
            return  # the shutdown_approved frame is the lead's news, not an idle turn
        frame = IdleNotification(sender=self.config.name, timestamp=now_iso(), idle_reason=reason,
                                 summary=summary or one_line(result or ""), result=result, failure_reason=failure)
        if completed is not None:
            frame.completed_task_id, frame.completed_status = completed, "resolved"
        self._send(frame, summary or one_line(result or "") or "idle")

    def _send(self, frame: ShutdownApproved | ShutdownRejected | IdleNotification, summary: str) -> None:
        self.mailbox.send_frame(LEAD_NAME, frame, sender=self.config.name, summary=summary)
