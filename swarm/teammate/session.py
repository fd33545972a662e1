"""One teammate's life: join the team, deliver messages, run turns, leave.

Frames are handled by code: a ``shutdown_request`` is shown to the model (so it
can reject with a reason) and approved by the runtime if the model's turn ends
without an answer — a teammate never ignores a shutdown. Everything else
becomes a turn of the agent loop, followed by an ``idle_notification`` to the lead.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Literal

import psutil

from swarm.agent.conversation import Conversation
from swarm.agent.inbound import wrap
from swarm.agent.loop import AgentRun, AgentSpec, run_agent
from swarm.agent.permissions.settings import settings_rules
from swarm.agent.prompts import system_prompt
from swarm.agent.tools import core_tools
from swarm.agent.tools.base import ToolContext
from swarm.agent.tools.messaging import SendMessage
from swarm.agent.transcript import Transcript
from swarm.backends.procs import kill_tree, process_create_time
from swarm.core.clock import now_iso, now_ms
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.names import LEAD_NAME
from swarm.core.protocol import (
    IdleNotification,
    InboxEntry,
    PermissionResponse,
    PlanApprovalResponse,
    ShutdownApproved,
    ShutdownRequest,
    TeammateTerminated,
    frame_text,
    parse_frame,
)
from swarm.core.teams import TeamStore
from swarm.core.text import one_line
from swarm.errors import ModelError, SwarmError
from swarm.models.factory import make_provider
from swarm.models.messages import Usage
from swarm.teammate.config import PLAYBOOK_VARIABLES, TeammateConfig
from swarm.teammate.delivery import Delivery
from swarm.teammate.gate import TeammateGate
from swarm.teammate.plan_tool import ExitPlanMode

log = logging.getLogger(__name__)


class Terminated(BaseException):
    """Raised in the main thread by SIGTERM/SIGINT/SIGHUP so ``finally`` blocks run."""


PLAN_NOTE = ("You start in plan mode: explore with read-only tools, then submit a plan with ExitPlanMode. "
             "You may edit files only after the lead approves it.")

CHILD_GRACE = 1.0
"""Seconds the teammate's leftover child processes get after SIGTERM when it exits."""

IDLE_WAIT = 3600.0
"""Seconds an idle teammate blocks on its inbox before re-checking (events wake it sooner)."""


class TeammateSession:
    def __init__(self, config: TeammateConfig, home: Home, env: Mapping[str, str]) -> None:
        self.config = config
        self.teams = TeamStore(home)
        self.mailbox = Mailbox(home, config.team)
        self.transcript = Transcript(home.transcript_path(config.team, config.name))
        self.conversation = Conversation.resume(self.transcript)
        self.delivery = Delivery(self.mailbox, config.name, self.transcript)
        self.pane_id = env.get("TMUX_PANE", "") if config.backend == "tmux" else "subprocess"
        self.ctx = ToolContext(
            cwd=config.cwd, agent_name=config.name, team=config.team, mailbox=self.mailbox,
            write_roots=None if config.permission_mode == "bypassPermissions" else [config.cwd],
            pane_id=self.pane_id, backend_type=config.backend, color=config.color,
        )
        self.gate = TeammateGate(config, home, self.mailbox, self.transcript, settings_rules(
            config.cwd, self.teams.get(config.team).settings_digests or {},
            lambda path: self.transcript.event("settings_allow_ignored", path=str(path))))
        tools = [*core_tools(), SendMessage()]
        if config.plan_mode_required:
            tools.append(ExitPlanMode(self.gate))
        provider = make_provider(config.model, playbook=config.playbook, env=env,
                                 variables=self._playbook_variables())
        self.spec = AgentSpec(provider=provider, tools=tools, gate=self.gate,
                              system=system_prompt(config.cwd, name=config.name, team=config.team,
                                                   extra=PLAN_NOTE if config.plan_mode_required else ""))
        self.usage = Usage()
        self._published: tuple[str, int] | None = None
        self.pending_shutdown: ShutdownRequest | None = None
        self.stopping = False

    def _playbook_variables(self) -> dict[str, str]:
        """What a scripted playbook may refer to: ``{agent_name}``, ``{team}``, ``{cwd}``, ``{branch}``."""
        member = self.teams.get(self.config.team).member(self.config.name)
        branch = member.worktree_branch if member and member.worktree_branch else ""
        return dict(zip(PLAYBOOK_VARIABLES, (self.config.name, self.config.team, str(self.config.cwd), branch),
                        strict=True))

    # -- lifecycle -------------------------------------------------------------

    def run(self) -> int:
        """Serve the inbox until a shutdown is approved; the member is marked inactive on any exit."""
        watcher = self.mailbox.watcher(self.config.name)
        killed_by: str | None = None
        try:
            self._join()
            while not self.stopping:
                if not self.mailbox.pending(self.config.name):
                    self.mailbox.wait(self.config.name, IDLE_WAIT, watcher=watcher)
                    continue
                self._status("busy")  # before the inbox is pruned, so "idle + empty inbox" means done
                entries = self.delivery.collect()
                if entries:
                    self._handle(entries)
                if not self.stopping:
                    self._status("idle")
            return 0
        except Terminated as signal_name:
            killed_by = str(signal_name)
            raise
        finally:
            watcher.close()
            self.spec.provider.close()
            _stop_children()
            self._leave(killed_by)

    def _join(self) -> None:
        pid = os.getpid()
        self.teams.update_member(
            self.config.team, self.config.name, is_active=True, pid=pid,
            proc_start=process_create_time(pid), tmux_pane_id=self.pane_id,
            backend_type=self.config.backend, status="idle", last_activity=now_ms(),
            cwd=str(self.config.cwd), mode=self.gate.mode,
        )
        self.transcript.event("joined", pid=pid, backend=self.config.backend, pane=self.pane_id)
        log.info("joined team", extra={"team": self.config.team, "agent_id": self.config.agent_id})

    def _leave(self, killed_by: str | None) -> None:
        """Mark the member inactive; after a signal (not a shutdown) also tell the lead, once."""
        try:
            self.teams.update_member(self.config.team, self.config.name, tokens=self.usage.total)
            if killed_by is None:
                self.teams.deactivate(self.config.team, self.config.name, "stopped")
            elif self.teams.deactivate(self.config.team, self.config.name, "dead"):
                self.mailbox.send(LEAD_NAME, frame_text(TeammateTerminated(
                    message=f"{self.config.name} was stopped by {killed_by} (pane closed or process killed)")),
                    sender="swarm", summary="teammate terminated")
        except SwarmError as exc:  # the team may have been deleted under us; nothing left to mark
            log.warning("could not mark member inactive", extra={"reason": str(exc)})
        self.transcript.event("left", usage=self.usage.model_dump(), killed_by=killed_by)

    # -- delivery --------------------------------------------------------------

    def _handle(self, entries: list[InboxEntry]) -> None:
        texts = self._admit(entries)
        if texts:
            self._turn(batch_texts(texts))
        if self.pending_shutdown is not None and not self.stopping:
            self._approve_shutdown(self.pending_shutdown)

    def _admit(self, entries: list[InboxEntry]) -> list[str]:
        """Texts for the model; frames the runtime handles itself are taken out."""
        texts = []
        for entry in entries:
            frame = parse_frame(entry.text)
            if isinstance(frame, (PermissionResponse, PlanApprovalResponse)):
                log.warning("ignored response with no waiting request", extra={"type": frame.type})
                continue
            if isinstance(frame, ShutdownRequest):
                self.pending_shutdown = frame
                self.ctx.shutdown_requested = True
            texts.append(wrap(entry))
        return texts

    def _inbound(self) -> list[str]:
        """Messages that arrived during a turn, for the next model call."""
        texts = self._admit(self.delivery.collect())
        return [batch_texts(texts)] if texts else []

    # -- turns -----------------------------------------------------------------

    def _turn(self, text: str) -> None:
        self.conversation.add_user_text(text)
        self.ctx.cancel.clear()
        self.ctx.shutdown_decision = None
        try:
            run = run_agent(self.spec, self.conversation, self.ctx, inbound=self._inbound)
        except ModelError as exc:
            self._status("idle")
            self._notify_idle("failed", summary="model error", failure=str(exc))
            return
        self.usage = self.usage + run.usage
        self._status("idle")
        if self.ctx.shutdown_decision is False:
            self.pending_shutdown = None
            self.ctx.shutdown_requested = False
        elif self.ctx.shutdown_decision is True:
            self.pending_shutdown = None
            self.stopping = True
        if self.pending_shutdown is not None or self.stopping:
            return  # about to stop: the shutdown_approved frame is the lead's news, not an idle turn
        self._notify_idle("available" if run.ok else "interrupted", run=run)

    def _approve_shutdown(self, request: ShutdownRequest) -> None:
        frame = ShutdownApproved(request_id=request.request_id, sender=self.config.name,
                                 timestamp=now_iso(), pane_id=self.pane_id, backend_type=self.config.backend)
        self.mailbox.send(LEAD_NAME, frame_text(frame), sender=self.config.name, summary="shutdown approved")
        self.pending_shutdown = None
        self.stopping = True

    def _notify_idle(self, reason: Literal["available", "interrupted", "failed"], *, run: AgentRun | None = None, summary: str | None = None,
                     failure: str | None = None) -> None:
        result = run.text if run else None
        frame = IdleNotification(sender=self.config.name, timestamp=now_iso(), idle_reason=reason,
                                 summary=summary or one_line(result or ""), result=result, failure_reason=failure)
        self.mailbox.send(LEAD_NAME, frame_text(frame), sender=self.config.name, summary=frame.summary)

    def _status(self, status: str) -> None:
        """Publish status, activity time and tokens; a repeat of the last status is not rewritten."""
        if (status, self.usage.total) == self._published:
            return
        self.teams.update_member(self.config.team, self.config.name, status=status,
                                 last_activity=now_ms(), tokens=self.usage.total)
        self._published = (status, self.usage.total)


def batch_texts(texts: list[str]) -> str:
    return "\n\n".join(texts)


def _stop_children() -> None:
    """Whatever the teammate's tools started (a Bash command cut short, background jobs) ends with it."""
    for child in psutil.Process().children(recursive=False):
        kill_tree(child.pid, CHILD_GRACE)
