"""One teammate's life: join the team, deliver messages, run turns, leave.

Frames count only when ``entry_frame`` admits them (structured path, right
sender; a lead-only frame also verified by ``self.lead``, the lead's key from
``--lead-verify-key`` with every msg_id taken in once). A lead entry that
cannot be verified reaches the model marked ``verified="false"``. A ``shutdown_request`` is shown to the model (so it can reject with a
reason) and owed an answer in the ``Lifecycle``, which approves it if the
model's turn ends without one — a teammate never ignores a shutdown.
Everything else becomes a turn of the agent loop, followed by an
``idle_notification`` to the lead. A process that starts where an earlier one
was killed mid-turn continues that turn from the transcript.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Mapping
from typing import TextIO

from swarm.agent.agent_listing import agent_types_attachment, skills_attachment
from swarm.agent.assembly import Catalogs
from swarm.agent.compaction import CompactionPolicy
from swarm.agent.conversation import Conversation
from swarm.agent.limits import Interrupted
from swarm.agent.live_events import LiveEvent
from swarm.agent.peer_messages import wrap
from swarm.agent.instructions import context_block
from swarm.agent.hooks.session import load_agent_hooks
from swarm.agent.loop import AgentRun, AgentSpec, Arrivals, RunningAgent, run_agent
from swarm.agent.mcp.lifecycle import McpUnavailable, process_servers, require
from swarm.agent.mcp.tools import McpToolset
from swarm.agent.permissions.settings import settings_rules, settings_sandbox
from swarm.agent.sandbox import Sandbox, effective_sandbox, open_sandbox, rule_paths
from swarm.agent.skills import parse_slash
from swarm.agent.tool_api.context import AgentIdentity, AgentServices, ToolContext
from swarm.agent.tool_api.processes import stop_children
from swarm.agent.tools.skill_tool import expand_slash
from swarm.agent.transcript import Transcript
from swarm.agent.turn_model import TurnModel
from swarm.agent.workspace import untrusted_warning
from swarm.backends.procs import process_create_time
from swarm.core.frames import (
    PermissionResponse,
    PlanApprovalResponse,
    ShutdownRequest,
    BackgroundAgentEnded,
    entry_frame,
)
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox, delivery_key
from swarm.core.names import LEAD_NAME
from swarm.core.protocol import InboxEntry, TeamFile
from swarm.core.signing import LeadVerifier, VerifyKey
from swarm.core.teams import TeamStore
from swarm.core.watch import ChangeWatcher
from swarm.errors import ModelError
from swarm.models.base import ModelProvider
from swarm.models.factory import make_provider
from swarm.models.messages import Message, TextBlock, Usage
from swarm.models.team_gate import BudgetReached, TeamGate
from swarm.teammate.agents import assemble_teammate, teammate_host
from swarm.teammate.config import PLAYBOOK_VARIABLES, TeammateConfig
from swarm.teammate.delivery import Batch, Delivery
from swarm.teammate.delivery_worker import DeliveryWorker
from swarm.teammate.gate import TeammateGate
from swarm.teammate.hook_events import TeammateHooks
from swarm.teammate.lead_watch import LEAD_CHECK, LeadWatch
from swarm.teammate.lifecycle import Lifecycle
from swarm.teammate.live import TeammateLive
from swarm.teammate.pane import PaneWriter
from swarm.teammate.pane_input import PaneInput
from swarm.teammate.plan_tool import ExitPlanMode
from swarm.teammate.served import Launcher

log = logging.getLogger(__name__)


class Terminated(BaseException):
    """Raised in the main thread by SIGTERM/SIGINT/SIGHUP so ``finally`` blocks run."""


PLAN_NOTE = ("You start in plan mode: explore with read-only tools, then submit a plan with ExitPlanMode. "
             "You may edit files only after the lead approves it.")

FORK_CUT_SHORT = ("[interrupted: this command's forked skill was started once already and was cut short when "
                  "this teammate stopped; it was not run again. Check what it did before running it again.]")

CHILD_GRACE = 1.0
"""Seconds the teammate's leftover child processes get after SIGTERM when it exits."""

IDLE_WAIT = 3600.0
"""Seconds an idle teammate blocks on its inbox before re-checking (events wake it sooner)."""


class TeammateSession:
    def __init__(self, config: TeammateConfig, home: Home, env: Mapping[str, str],
                 launcher: Launcher | None = None, pane: PaneWriter | None = None,
                 pane_input: TextIO | None = None, delivery_worker: DeliveryWorker | None = None) -> None:
        self.config = config
        self.launcher = launcher
        self.live = TeammateLive(home, config.team, config.name, config.cwd, pane)
        """Its live events: the events file, and its pane (or log) when it has one."""
        self.teams = TeamStore(home)
        team = self.teams.current(config.team)  # read once for the whole set-up (shared: not changed here)
        recorded = team.settings_digests or {}
        self.mailbox = Mailbox(home, config.team)
        self.transcript = Transcript(home.transcript_path(config.team, config.name))
        self.conversation = Conversation.resume(self.transcript)
        self.conversation.observer = self.live.narrator.message
        self.conversation.on_compacted = lambda summarised: self.live.emit(
            LiveEvent(type="compaction", summarised=summarised))
        self.delivery = Delivery(self.mailbox, config.name, self.transcript, worker=delivery_worker)
        self.lead = LeadVerifier(VerifyKey.parse(config.lead_verify_key) if config.lead_verify_key else None,
                                 self.transcript.delivered_ids())
        self.pane_id = env.get("TMUX_PANE", "") if config.backend == "tmux" else "subprocess"
        self.lifecycle = Lifecycle(config, home, self.mailbox, self.transcript, self.pane_id)
        self.lifecycle.on_state = self.live.state
        self.gate = TeammateGate(config, home, self.mailbox, self.transcript, settings_rules(
            config.cwd, recorded,
            lambda path: self.transcript.event("settings_allow_ignored", path=str(path)), env=env),
            self.lifecycle, self.lead)
        self.gate.on_event = self.live.emit
        self.env = env
        self.sandbox = _open_sandbox(config, home, team, env, self.gate)
        untrusted = untrusted_warning(config.cwd, env)
        if untrusted is not None:  # the teammate runs on without the project's configuration: say so, once
            log.warning(untrusted)
        self.catalogs = Catalogs.load(config.cwd, env)
        self.definition = self.catalogs.agents.get(config.agent_type)
        self.mcp = process_servers(config.cwd, env, self.definition,
                                   recorded=recorded, note=self._mcp_note)
        self._mcp_settled = False
        agent = assemble_teammate(config, self.catalogs, env, shutdown=self.lifecycle,
                                  plan_tool=ExitPlanMode(self.gate) if config.plan_mode_required else None,
                                  extra=PLAN_NOTE if config.plan_mode_required else "", gate=self.gate,
                                  mcp=McpToolset(self.mcp))
        variables = self._playbook_variables(team)
        gate = TeamGate(home.gate_dir(config.team), config.name)  # the team's budget, slots and backoff

        def make(model: str | None) -> ModelProvider:
            return make_provider(model, playbook=config.playbook, env=env, variables=variables, on_text=self._stream,
                                 gate=gate)

        provider = TurnModel(make(agent.model), lambda chosen: make(chosen), env)
        self.hooks = load_agent_hooks(
            config.cwd, env, recorded=recorded, extra=agent.hooks,
            changed=lambda path: self.transcript.event("settings_hooks_ignored", path=str(path)),
            sandbox=self.sandbox, roots=agent.write_roots)
        self.ctx = ToolContext(
            AgentIdentity(cwd=config.cwd, name=config.name, team=config.team, write_roots=agent.write_roots,
                          pane_id=self.pane_id, backend_type=config.backend, color=config.color,
                          spawnable=agent.spawnable),
            services=AgentServices(mailbox=self.mailbox, models=provider, sandbox=self.sandbox, agents=teammate_host(
                config, home, self.catalogs, env, mailbox=self.mailbox, provider=provider,
                make_provider=lambda chosen: make(chosen), gate=self.gate, mcp=self.mcp), hooks=self.hooks))
        self.omit_instructions = agent.omit_instructions
        self.introduction = agent.introduction
        self.agent_types = (agent_types_attachment(self.catalogs.agents, agent.spawnable)
                            if any(t.name == "Agent" for t in agent.tools) else "")
        """The agent types its Agent tool may start, told in its first message (not in the tool's text)."""
        self.skills_listed = (skills_attachment(self.catalogs.skills)
                              if any(t.name == "Skill" for t in agent.tools) else "")
        """The skills its Skill tool may use, told in its first message (not in the tool's text)."""
        self.spec = AgentSpec(provider=provider, tools=agent.tools, gate=agent.gate, system=agent.system,
                              compaction=CompactionPolicy.from_env(env), effort=agent.effort,
                              reminder=agent.reminder)
        self.usage = Usage()
        self.pane_input = PaneInput(self.mailbox, config.name, self.live, pane_input) if pane_input else None
        """The person typing in this teammate's pane (a tmux pane's terminal), if anyone can."""
        self.hook_events = TeammateHooks(self.hooks, self.conversation, self.gate, config.name, config.team)
        self.lead_watch = LeadWatch(self.teams, config.team, on_gone=self.ctx.turn.cancel.set)
        """The process leading the team, if swarm started one: its end ends this teammate's run."""

    def _mcp_note(self, text: str) -> None:
        """An MCP server's trouble (failed to start, died): the log and the transcript, once per server."""
        log.warning("%s", text)
        self.transcript.event("mcp", text=text)

    def _stream(self, piece: str) -> None:
        """The provider's ``on_text``: shown live; the stream stops once the turn is interrupted (Ctrl-C)."""
        if self.ctx.turn.cancel.is_set():
            raise Interrupted("interrupted while the model was writing")
        self.live.narrator.stream(piece)

    def _playbook_variables(self, team: TeamFile) -> dict[str, str]:
        """What a scripted playbook may refer to: ``{agent_name}``, ``{team}``, ``{cwd}``, ``{branch}``."""
        member = team.member(self.config.name)
        branch = member.worktree_branch if member and member.worktree_branch else ""
        return dict(zip(PLAYBOOK_VARIABLES, (self.config.name, self.config.team, str(self.config.cwd), branch),
                        strict=True))

    # -- lifecycle -------------------------------------------------------------

    def run(self) -> int:
        """Serve the inbox until a shutdown is approved; the member is marked gone on any exit."""
        watcher = self.mailbox.watcher(self.config.name)
        killed_by: str | None = None
        try:
            self._serve(watcher)
        except Terminated as signal_name:
            # cleaned up below, once gone: cut in at a lock's release (a ``with`` exit), it keeps that frame and
            # its lock alive, and the clean-up's writes would wait on that lock (``core.flock.Held``)
            killed_by = str(signal_name)
        except BaseException:
            self._leave(watcher, None)
            raise
        self._leave(watcher, killed_by)
        if killed_by is not None:
            raise Terminated(killed_by)
        return 0

    def _serve(self, watcher: ChangeWatcher) -> None:
        """Join, pick up an interrupted turn, then deliver and answer until stopping."""
        pid = os.getpid()
        if self.launcher is None:
            self.lifecycle.joined(pid, process_create_time(pid), self.usage)
        else:  # the member's pid stays the launcher's: the process its backend started
            self.lifecycle.joined(self.launcher.pid, self.launcher.start, self.usage,
                                  worker=(pid, process_create_time(pid)))
        log.info("joined team", extra={"team": self.config.team, "agent_id": self.config.agent_id})
        self.hook_events.started()
        if not self.gate.fencing.placed:  # on a host, a lead's pid is another machine's: never judged here
            self.lead_watch.start()
        if self.pane_input is not None:
            self.pane_input.start()
        self._resume()
        while not self.lifecycle.stopping:
            self.gate.fence()  # declared dead meanwhile (a host that stopped heartbeating): stop here
            if self.lead_watch.gone.is_set():
                self.lifecycle.lead_gone()
                break
            batch = self.delivery.collect()  # one read of the inbox decides and delivers
            if not batch.seen:
                self._wait(watcher)  # then the collect above reads the inbox: no read of its own here
                continue
            self.lifecycle.busy(self.usage)  # before the inbox is pruned: "idle + empty inbox" means done
            self._deliver(batch)
            self.lifecycle.idle(self.usage)

    def _leave(self, watcher: ChangeWatcher, killed_by: str | None) -> None:
        """The end, however it came: what it started is stopped, the member marked gone."""
        watcher.close()
        self.hook_events.ended("killed" if killed_by else "other")
        if self.ctx.services.agents is not None:
            self.ctx.services.agents.background.stop_all()
        self.spec.provider.close()
        self.mcp.close()
        self.delivery.close()  # its worker first: every other child of the process is stopped next
        stop_children(self.ctx, CHILD_GRACE)
        if self.sandbox is not None:
            self.sandbox.close()
        self.lifecycle.gone(self.usage, killed_by)
        self.transcript.event("left", usage=self.usage.model_dump(), killed_by=killed_by)

    def interrupt(self) -> None:
        """The person's Ctrl-C in the pane (called from the signal handler): the running turn stops, a running
        command is killed, the teammate waits for its next message; when idle, nothing happens."""
        if self.lifecycle.state != "busy":
            return
        self.ctx.turn.cancel.set()
        self.ctx.turn.interrupt.set()
        # not drawn from the handler: the main thread may be inside the pane's lock right now
        threading.Thread(target=self.live.say, args=("warning", "interrupted by the person (Ctrl-C)"),
                         daemon=True).start()

    def _wait(self, watcher: ChangeWatcher) -> None:
        """Until the inbox may have changed; while a lead process is watched, no longer than its end."""
        if not self.lead_watch.watching:
            watcher.wait(IDLE_WAIT)
            return
        while not watcher.wait(LEAD_CHECK) and not self.lead_watch.gone.is_set():
            pass

    def _resume(self) -> None:
        """Pick up where an earlier process of this teammate was cut off (``kill -9`` mid-turn)."""
        self.lifecycle.restore()
        if self.transcript.turn_open():
            self.transcript.event("resumed")
            self.lifecycle.busy(self.usage)
            self._turn()
        self.lifecycle.approve_owed()

    # -- delivery --------------------------------------------------------------

    def _deliver(self, batch: Batch) -> None:
        """Take what is new in the inbox into the conversation (durably, then prune) and answer it."""
        texts = self._admit(batch.entries)
        if not texts:
            self.transcript.delivered(batch.keys)
            self.lead.took(batch.keys)
            self.delivery.acknowledge(batch)
        else:  # the record's fsync and the prune run beside the turn; its first tool waits for the fsync...
            owed = self.conversation.add(self._user_message(batch_texts(texts)), delivered=batch.keys,
                                         sync_later=True)
            self.lead.took(batch.keys)
            pruning = self.delivery.acknowledge_beside(batch, owed)
            try:
                self._turn(before_idle=pruning.wait)  # ...and nobody may see this teammate idle before the prune
            finally:
                pruning.join()
        self.lifecycle.approve_owed()  # a turn that ended without answering a shutdown request approves it

    def _user_message(self, text: str) -> Message:
        """The next user turn; the conversation's first one starts with the context block (instructions, git)."""
        if self.conversation.messages:
            return Message.user_text(text)
        context = context_block(self.config.cwd, env=self.env, omit_instructions=self.omit_instructions,
                                introduction=self.introduction)
        blocks = [TextBlock(text=t) for t in (context, self.agent_types, self.skills_listed, text) if t]
        return Message(role="user", content=blocks)

    def _admit(self, entries: list[InboxEntry]) -> list[str]:
        """Texts for the model; answers the runtime handles itself are taken out."""
        texts = []
        for entry in entries:
            frame = entry_frame(entry, self.lead)
            if isinstance(frame, (PermissionResponse, PlanApprovalResponse)):
                log.warning("ignored response with no waiting request", extra={"type": frame.type})
                continue
            if isinstance(frame, ShutdownRequest):
                self.lifecycle.shutdown_requested(frame)
            if isinstance(frame, BackgroundAgentEnded):  # one of this teammate's background subagents ended
                texts.append(frame.text)
                continue
            verified = entry.sender != LEAD_NAME or self.lead.verified(entry)
            self.live.arrived(entry.sender, frame if isinstance(frame, str) else (entry.summary or entry.text))
            by_person = self.lead.by_person(entry, self.config.name)  # signed as a person's words, for this teammate
            if (isinstance(frame, str) and frame.lstrip().startswith("/")
                    and (by_person or (entry.sender == LEAD_NAME and verified))):
                entry = entry.model_copy(update={"text": self._slash(entry, frame, by_person=by_person)})
            texts.append(wrap(entry, verified=verified))
        return texts

    def _slash(self, entry: InboxEntry, text: str, *, by_person: bool) -> str:
        """``text`` with its ``/skill`` commands expanded; a forked skill's run is started at most once per entry.

        The lead's entries expand skills a model may use; a person-only skill
        (``disable-model-invocation``) only in an entry signed as a person's
        own words for this teammate (``by_person``: ``LeadVerifier.by_person``).
        What the lead model wrote — its spawn prompt, its SendMessage — is not.

        A fork acts (its subagent runs tools) before the entry is recorded as
        delivered, so a teammate stopped mid-fork finds the entry again. The
        durable ``slash_fork`` event, written before the fork starts, makes
        that second delivery say the fork was cut short instead of running it
        again (as a tool call cut short is answered with an "interrupted" error).
        """
        def note(message: str) -> None:
            log.warning("%s", message)

        expansion = parse_slash(text, self.catalogs.skills, by_person=by_person)
        if expansion is None:
            return text
        if expansion.forks:
            key = delivery_key(entry)
            if any(event.get("key") == key for event in self.transcript.events("slash_fork")):
                return f"{text}\n\n{FORK_CUT_SHORT}"
            self.transcript.event("slash_fork", durable=True, key=key, skills=[s.name for s in expansion.skills])
        self.ctx.turn.running = RunningAgent(self.spec, self.conversation)  # a fork is linked from this transcript
        return expand_slash(text, self.catalogs.skills, self.ctx, note, by_person=by_person, parsed=expansion)

    def _inbound(self) -> Arrivals:
        """Messages that arrived during a turn, for the next model call (pruned once recorded)."""
        batch = self.delivery.collect()
        texts = self._admit(batch.entries)
        def taken() -> None:
            self.lead.took(batch.keys)
            self.delivery.acknowledge(batch)

        return Arrivals(texts=[batch_texts(texts)] if texts else [], delivered=batch.keys, taken=taken)

    # -- turns -----------------------------------------------------------------

    def _turn(self, before_idle: Callable[[], None] | None = None) -> None:
        """Run the model on the conversation as it stands (ending with the user's side); then ``before_idle``."""
        self.ctx.turn.cancel.clear()
        self.ctx.turn.interrupt.clear()
        if self.lead_watch.gone.is_set():
            self.ctx.turn.cancel.set()  # the lead is gone: this turn ends after its first step
        self.ctx.turn.completed_tasks.clear()  # TaskUpdate records what this turn completes: the list is never read
        try:
            if not self._mcp_settled:  # before the first model call: its MCP servers connected or failed
                self.mcp.wait()
                self._mcp_settled = True
            require(self.definition, self.mcp)
            run = run_agent(self.spec, self.conversation, self.ctx, inbound=self._inbound)
            while run.ok and not self.ctx.turn.cancel.is_set() and (keep := self.hook_events.idle()) is not None:
                self.conversation.add_user_text(keep)  # a TeammateIdle hook keeps it working, with its feedback
                run = _added(run, run_agent(self.spec, self.conversation, self.ctx, inbound=self._inbound))
        except (ModelError, McpUnavailable) as exc:
            unavailable = isinstance(exc, McpUnavailable)
            summary = "MCP server unavailable" if unavailable else "budget reached" if isinstance(exc, BudgetReached) \
                else "model error"
            failure = str(exc)
            self._end_turn("mcp_unavailable" if unavailable else "model_error", self.usage, failure, before_idle,
                           lambda: self.lifecycle.notify_idle("failed", summary=summary, failure=failure))
            return
        finally:  # an active skill's grants and model last until the turn ends
            self.ctx.turn.granted_rules.clear()
            if self.ctx.services.models is not None:
                self.ctx.services.models.reset()
        self.usage = self.usage + run.usage
        self._end_turn(run.stop_reason, run.usage, run.detail if not run.ok else "", before_idle,
                       lambda: self.lifecycle.notify_idle("available" if run.ok else "interrupted", result=run.text,
                                                          completed=self._completed()))

    def _end_turn(self, reason: str, usage: Usage, detail: str, before_idle: Callable[[], None] | None,
                  notify: Callable[[], None]) -> None:
        """Recorded, then told: the lead first (``idle_notification``), then the view (``TeammateLive.held``)."""
        if before_idle is not None:
            before_idle()
        self.transcript.turn_end(reason)
        with self.live.held():
            self.live.turn_end(reason, usage, detail)
            self.lifecycle.idle(self.usage)
            notify()

    def _completed(self) -> str | None:
        """The task this turn completed with TaskUpdate and still holds (the highest id if several): the idle notice."""
        done = self.ctx.turn.completed_tasks
        return max(done, key=int) if done else None


def _added(before: AgentRun, after: AgentRun) -> AgentRun:
    return AgentRun(after.text, after.stop_reason, before.turns + after.turns, before.usage + after.usage, after.detail)


def batch_texts(texts: list[str]) -> str:
    return "\n\n".join(texts)


def _open_sandbox(config: TeammateConfig, home: Home, team: TeamFile, env: Mapping[str, str],
                  gate: TeammateGate) -> Sandbox | None:
    """The teammate's Bash sandbox: its cwd's settings files (as the team recorded them), the team's and its own
    ``sandbox`` (``--sandbox``, ``[sandbox]``); None when off or unavailable (then a warning in its log). A host
    not allowed is ruled and asked about by the gate, as a ``WebFetch(domain:HOST)`` call. Its ``Edit``/``Read``
    path rules count as ``allowWrite``/``denyWrite``/``denyRead``, as in Claude Code."""
    member = team.member(config.name)
    files = settings_sandbox(config.cwd, team.settings_digests or {}, env=env, recorded_sandbox=team.settings_sandbox)
    policy = effective_sandbox(files, rule_paths(gate.rules()), team.sandbox,
                               member.sandbox if member is not None else None)
    return open_sandbox(policy, env=env, home=home, team=config.team, warn=log.warning, ask_domain=gate.ask_network)
