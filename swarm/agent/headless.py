"""One main agent, one prompt, no team: what ``swarm run -p`` does.

With ``MainOptions`` options the agent also gets the Agent tool (subagents,
forks, background agents with TaskOutput / TaskStop) and may itself run as a
definition (``swarm run --agent NAME``). A background agent's notification
is injected before the next model call; when the agent ends its turn while
background agents still run, it waits for them and takes each notification
as a new turn, so no result is lost.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swarm.agent.assembly import Catalogs, Parent, Seat, assemble
from swarm.agent.background import BackgroundAgents, QueueSink
from swarm.agent.conversation import Conversation
from swarm.agent.agent_listing import AgentListing, Listing, SkillListing, listing_updates
from swarm.agent.definitions import AgentCatalog, AgentDefinition, load_agents
from swarm.agent.executor import ToolGate
from swarm.agent.hooks.session import load_agent_hooks
from swarm.agent.hooks.session_events import SessionHooks
from swarm.agent.instructions import context_block
from swarm.agent.limits import Limits
from swarm.agent.mcp.lifecycle import process_servers, require
from swarm.agent.mcp.tools import McpToolset
from swarm.agent.loop import AgentRun, AgentSpec, Arrivals, RunningAgent, run_agent
from swarm.agent.sandbox import Sandbox
from swarm.agent.skills import SkillCatalog, load_skills
from swarm.agent.subagents import AgentHost, forks_enabled
from swarm.agent.tool_api.processes import stop_background
from swarm.agent.tools import core_tools
from swarm.agent.tool_api.base import Tool
from swarm.agent.tool_api.context import (
    AgentIdentity,
    AgentServices,
    TeamControl,
    ToolContext,
    TurnState,
)
from swarm.agent.tools.skill_tool import SkillTool, expand_slash
from swarm.agent.tool_catalog import agent_tools
from swarm.agent.transcript import Transcript
from swarm.agent.turn_model import TurnModel
from swarm.core.tasks import TaskStore
from swarm.errors import UsageError
from swarm.models.aliases import agent_model
from swarm.models.base import Effort, ModelProvider
from swarm.models.factory import Choice, choose_model, make_provider
from swarm.models.messages import Message, TextBlock, Usage
from swarm.models.scripted import SCRIPTED
from swarm.models.team_gate import TeamGate

BACKGROUND_POLL = 0.2
"""Seconds between cancellation checks while waiting for background agents."""


@dataclass
class MainOptions:
    """What the main agent of ``swarm run`` may use beyond the core tools."""

    catalog: AgentCatalog
    env: Mapping[str, str]
    make_provider: Callable[[str], ModelProvider]
    agents_dir: Path
    """Where subagent transcripts go (beside the run's own transcript)."""
    skills: SkillCatalog = field(default_factory=lambda: SkillCatalog(skills={}, warnings=[]))
    definition: AgentDefinition | None = None
    """Run the main agent as this definition (``--agent``)."""
    note: Callable[[str], None] = lambda _: None
    """Where remarks for the person go (an unknown ``/name`` in the prompt)."""
    effort: Effort | None = None
    """How hard the main agent's model thinks (``--effort``; else its definition's ``effort``)."""
    reload_agents: Callable[[], AgentCatalog] | None = None
    """Reads the definitions afresh before each model call (a file added mid-session); None: ``catalog`` stays."""
    reload_skills: Callable[[], SkillCatalog] | None = None
    """Reads the skills afresh before each model call (a skill added mid-session); None: ``skills`` stays."""


@dataclass
class MainSetup:
    """What a process's main agent (``swarm run``, the interactive session) is built from.

    The definitions and skills of its cwd, the definition it runs as
    (``--agent``), and its provider, for the model the one rule chooses
    (``swarm.models.aliases.agent_model``: ``--model`` > the definition's
    ``model`` > the provider's default). ``choice`` says which model that is,
    for the person.
    """

    env: dict[str, str]
    catalogs: Catalogs
    definition: AgentDefinition | None
    model: str | None
    playbook: Path | None
    provider: ModelProvider
    choice: Choice
    workdir: Path | None = None
    agents_json: str | None = None
    gate: TeamGate | None = None

    @classmethod
    def load(cls, env: dict[str, str], workdir: Path, *, agents_json: str | None, agent_name: str | None,
             model: str | None, playbook: Path | None, note: Callable[[str], None],
             on_text: Callable[[str], None] | None = None, gate: TeamGate | None = None) -> MainSetup:
        """Load definitions and skills (each warning to ``note``) and make the provider; UsageError for an
        unknown ``agent_name``. ``gate``: the team's gate the main agent's and its subagents' calls pass."""
        catalogs = Catalogs.load(workdir, env, cli_json=agents_json, note=note)
        definition = _definition(catalogs.agents, agent_name)
        model = agent_model(env=env, asked=model, definition_model=definition.model if definition else None,
                            parent_model=None, subagent=False)
        provider = make_provider(model, playbook=playbook, env=env, variables={"agent_name": "agent", "team": ""},
                                 on_text=on_text, gate=gate)
        return cls(env, catalogs, definition, model, playbook, provider, choose_model(model, playbook=playbook, env=env),
                   workdir, agents_json, gate)

    def main_agent(self, agents_dir: Path, note: Callable[[str], None], effort: Effort | None = None) -> MainOptions:
        return MainOptions(catalog=self.catalogs.agents, env=self.env, agents_dir=agents_dir,
                         definition=self.definition, make_provider=self._child_providers(), skills=self.catalogs.skills,
                         note=note, effort=effort, reload_agents=self._reload(), reload_skills=self._reload_skills())

    def _reload(self) -> Callable[[], AgentCatalog] | None:
        """The definitions of the workdir as they are now (their warnings were said once, at start)."""
        workdir, agents_json, env = self.workdir, self.agents_json, self.env
        if workdir is None:
            return None
        return lambda: load_agents(workdir, env=env, cli_json=agents_json)

    def _reload_skills(self) -> Callable[[], SkillCatalog] | None:
        """The skills of the workdir as they are now (their warnings were said once, at start)."""
        workdir, env = self.workdir, self.env
        if workdir is None:
            return None
        return lambda: load_skills(workdir, env=env)

    def _child_providers(self) -> Callable[[str], ModelProvider]:
        """How a subagent gets its provider: offline children play the parent's playbook, others their model."""
        if self.provider.name == SCRIPTED:
            return lambda _model: make_provider(self.model, playbook=self.playbook, env=self.env,
                                                variables={"agent_name": "agent", "team": ""})
        return lambda chosen: make_provider(chosen, playbook=None, env=self.env, gate=self.gate)


def _definition(catalog: AgentCatalog, name: str | None) -> AgentDefinition | None:
    if name is None:
        return None
    found = catalog.get(name)
    if found is None:
        raise UsageError(f"no agent definition {name!r}; `swarm agents` lists them ({', '.join(catalog.names())})")
    return found


def run_headless(prompt: str, provider: ModelProvider, *, cwd: Path, limits: Limits,
                 transcript: Path | None = None, confine_writes: bool = True,
                 cancel: threading.Event | None = None, main: MainOptions | None = None) -> AgentRun:
    """Run ``prompt`` to the end in ``cwd``; with ``main``, subagents too."""
    if main is None:
        ctx = ToolContext(AgentIdentity(cwd=cwd, write_roots=[cwd] if confine_writes else None),
                          turn=TurnState(cancel=cancel or threading.Event()))
        agent = assemble(None, Seat(role="main", cwd=cwd, env={}, skills=Catalogs.empty().skills),
                         Parent(model=None, write_roots=ctx.identity.write_roots), tools=core_tools())
        conversation = Conversation(transcript=Transcript(transcript) if transcript else None)
        conversation.add_user_text(prompt)
        try:
            return run_agent(AgentSpec(provider=provider, tools=agent.tools, system=agent.system, limits=limits),
                             conversation, ctx)
        finally:
            stop_background(ctx)
    session = MainSession(provider, cwd=cwd, limits=limits, transcript=transcript, confine_writes=confine_writes,
                          cancel=cancel, main=main)
    try:
        return session.start(prompt)
    finally:
        session.close()


class MainSession:
    """The main agent of a process, one turn at a time: ``start`` with the prompt, then ``turn`` per new input.

    ``extra_tools`` are added after the standard set (a lead's TeamCreate /
    TeamDelete); ``team_control`` lets the agent lead a team. ``close``
    stops its background agents and commands and closes its MCP servers. ``resume`` continues the
    conversation recorded in ``transcript``; ``gate`` decides the agent's
    (and its subagents') tool calls — none: every call runs. ``tasks`` is the
    session's own task list, for the task tools while the agent is in no team.
    ``sandbox``: where its (and its subagents') Bash commands run; ``close`` closes it.
    """

    def __init__(self, provider: ModelProvider, *, cwd: Path, limits: Limits, main: MainOptions,
                 transcript: Path | None = None, confine_writes: bool = True,
                 cancel: threading.Event | None = None, extra_tools: Sequence[Tool[Any]] = (),
                 team_control: TeamControl | None = None, resume: bool = False,
                 gate: ToolGate | None = None, tasks: TaskStore | None = None, sandbox: Sandbox | None = None) -> None:
        self.main = main
        self.sandbox = sandbox
        self.cwd = cwd
        models = TurnModel(provider, main.make_provider, main.env)
        self.mcp = process_servers(cwd, main.env, main.definition, recorded=None, note=main.note)
        agent = assemble(main.definition, Seat(role="main", cwd=cwd, env=main.env, skills=main.skills, note=main.note),
                         Parent(model=None, write_roots=[cwd] if confine_writes else None, gate=gate),
                         tools=[*agent_tools(main.skills, main.env), *extra_tools], kept=extra_tools,
                         asked_model=provider.model, asked_effort=main.effort, mcp=McpToolset(self.mcp))
        self.omit_instructions = agent.omit_instructions
        self.conversation = (Conversation.resume(Transcript(transcript)) if resume and transcript is not None
                             else Conversation(transcript=Transcript(transcript) if transcript else None))
        self.sink = QueueSink()
        self.host = AgentHost(catalog=main.catalog, env=main.env, model=provider.model,
                              make_provider=main.make_provider,
                              make_tools=lambda: agent_tools(self.host.skills, main.env),
                              transcript_dir=main.agents_dir, background=BackgroundAgents(self.sink),
                              fork_enabled=forks_enabled(main.env), skills=main.skills, gate=gate,
                              note=main.note, effort=agent.effort, mcp=self.mcp)
        self.hooks = load_agent_hooks(cwd, main.env, recorded=None, extra=agent.hooks, note=main.note,
                                      sandbox=sandbox, roots=agent.write_roots)
        self.ctx = ToolContext(AgentIdentity(cwd=cwd, write_roots=agent.write_roots, spawnable=agent.spawnable),
                               services=AgentServices(team_control=team_control, agents=self.host, models=models,
                                                      session_tasks=tasks, hooks=self.hooks, sandbox=sandbox),
                               turn=TurnState(cancel=cancel or threading.Event()))
        self.listing = (AgentListing(main.catalog, spawnable=agent.spawnable, reload=main.reload_agents)
                        if any(t.name == "Agent" for t in agent.tools) else None)
        """The agent types it was told of (an attachment, so that new definitions leave the tools alone)."""
        self.skill_listing = (SkillListing(main.skills, reload=main.reload_skills)
                              if any(t.name == "Skill" for t in agent.tools) else None)
        """The skills it was told of (an attachment, so that new skills leave the tools alone)."""
        self.spec = AgentSpec(provider=models, tools=agent.tools, system=agent.system, gate=agent.gate,
                              effort=agent.effort, reminder=agent.reminder,
                              limits=Limits(max_turns=limits.max_turns or agent.max_turns, max_tokens=limits.max_tokens,
                                            max_seconds=limits.max_seconds,
                                            max_consecutive_tool_errors=limits.max_consecutive_tool_errors))
        self.usage = Usage()
        self._settled = False
        self.hook_events = SessionHooks(self.hooks, self.conversation, lambda: self.spec.gate)

    def start(self, prompt: str) -> AgentRun:
        """The first turn: ``/skill`` commands expanded, after the context block (and what ``SessionStart`` and
        ``UserPromptSubmit`` hooks add), once its MCP servers settled (connected or failed; McpUnavailable when its
        definition requires one that is not up)."""
        self._settle()
        started = self.hook_events.session_start("startup")
        text = self._expand(prompt)
        submitted = self.hook_events.prompt(text)
        if submitted.refused is not None:
            return submitted.refused
        context = context_block(self.cwd, env=self.main.env, omit_instructions=self.omit_instructions)
        attachments = [t for t in (listing.first() for listing in self._listings()) if t]
        self.conversation.add(_first_message("\n\n".join(t for t in (context, started) if t), submitted.text,
                                             attachments))
        return self._serve()

    def prompt(self, text: str) -> AgentRun:
        """What the person typed: the first turn (``start``) or, with ``/skill`` commands expanded, the next."""
        if not self.conversation.messages:
            return self.start(text)
        return self.turn(self._expand(text))

    def _expand(self, text: str) -> str:
        """``text`` with its leading ``/skill`` commands expanded, as this agent (a fork is linked from its
        transcript, as when the model calls Skill)."""
        self.ctx.turn.running = RunningAgent(self.spec, self.conversation)
        return expand_slash(text, self.host.skills, self.ctx, self.main.note, by_person=True)  # the person's prompt

    def turn(self, text: str, *, by_person: bool = True) -> AgentRun:
        """Another turn, on ``text`` as the next user message (what the person typed, or with ``by_person`` False
        what teammates sent: no ``UserPromptSubmit`` then)."""
        if by_person:
            submitted = self.hook_events.prompt(text)
            if submitted.refused is not None:
                return submitted.refused
            text = submitted.text
        self.conversation.add(Message(role="user", content=[*(TextBlock(text=t) for t in self._attachments()),
                                                            TextBlock(text=text)]))
        return self._serve()

    @property
    def skills(self) -> SkillCatalog:
        """The skills as the model was last told of them (re-read before each model call)."""
        return self.host.skills

    def _listings(self) -> list[Listing]:
        return [listing for listing in (self.listing, self.skill_listing) if listing is not None]

    def _attachments(self) -> list[str]:
        """What the model must be told before its next call: the agent types and the skills, when they changed."""
        updates = listing_updates(self._listings(), self.conversation.messages)
        if self.listing is not None:
            self.host.catalog = self.listing.catalog  # a new definition can be started at once
        if self.skill_listing is not None and self.skill_listing.catalog is not self.host.skills:
            self.host.skills = self.skill_listing.catalog  # a new skill can be used at once, here and by children
            for tool in self.spec.tools:
                if isinstance(tool, SkillTool):
                    tool.catalog = self.host.skills
        return updates

    def close(self) -> None:
        try:
            self.hook_events.session_end("other")
        finally:
            self.host.background.stop_all()
            stop_background(self.ctx)
            self.mcp.close()
            if self.sandbox is not None:
                self.sandbox.close()

    def _settle(self) -> None:
        """Before the first model call only: wait while its MCP servers start, check the required ones."""
        if not self._settled:
            self.mcp.wait()
            require(self.main.definition, self.mcp)
            self._settled = True

    def _serve(self) -> AgentRun:
        self._settle()
        run = _serve(self.spec, self.conversation, self.ctx, self.host, self.sink, self._attachments)
        self.ctx.turn.granted_rules.clear()
        if self.ctx.services.models is not None:
            self.ctx.services.models.reset()
        self.usage = self.usage + run.usage
        return run


def _first_message(context: str, prompt: str, attachments: Sequence[str] = ()) -> Message:
    return Message(role="user", content=[TextBlock(text=context), *(TextBlock(text=t) for t in attachments),
                                         TextBlock(text=prompt)])


def _serve(spec: AgentSpec, conversation: Conversation, ctx: ToolContext, host: AgentHost,
           sink: QueueSink, attachments: Callable[[], list[str]]) -> AgentRun:
    """Run turns until the agent is done and every background agent has reported; ``attachments`` ride along
    with each step's results."""
    def inbound() -> Arrivals:
        return Arrivals(texts=[*attachments(), *sink.take()])

    run = run_agent(spec, conversation, ctx, inbound=inbound)
    while run.ok and (host.background.unfinished() or _waiting(sink)):
        texts = _next_notifications(sink, host, ctx.turn.cancel)
        if not texts:
            break
        conversation.add(Message(role="user", content=[*(TextBlock(text=t) for t in attachments()),
                                                       TextBlock(text="\n\n".join(texts))]))
        run = _add(run, run_agent(spec, conversation, ctx, inbound=inbound))
    return run


def _waiting(sink: QueueSink) -> bool:
    return sink.wait(0)


def _next_notifications(sink: QueueSink, host: AgentHost, cancel: threading.Event) -> list[str]:
    while not cancel.is_set():
        if sink.wait(BACKGROUND_POLL):
            return sink.take()
        if not host.background.unfinished():
            return sink.take()
    return []


def _add(before: AgentRun, after: AgentRun) -> AgentRun:
    return AgentRun(after.text, after.stop_reason, before.turns + after.turns, before.usage + after.usage,
                    after.detail)
