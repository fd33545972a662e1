"""``swarm run`` without ``-p``: build the interactive session from the command's options and run it."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import click

from swarm.agent.config_files import project_root
from swarm.agent.coordinator import COORDINATOR_ENV
from swarm.agent.headless import MainSession, MainSetup
from swarm.agent.limits import Limits
from swarm.agent.permissions.policy import RuleSet
from swarm.agent.permissions.rules import parse_rules
from swarm.agent.permissions.settings import settings_digests, settings_rules
from swarm.agent.sandbox import own_sandbox
from swarm.agent.tools.team_tools import team_tools
from swarm.agent.trust import is_trusted
from swarm.agent.trust import trust as record_trust
from swarm.agent.workspace import (
    configuration_names,
    grant_or_refuse,
    project_configuration,
    untrusted_warning,
)
from swarm.cli.options import say_model, warn
from swarm.cli.render import echo
from swarm.core.home import Home
from swarm.core.names import LEAD_NAME
from swarm.core.protocol import LeadPolicy
from swarm.core.sandbox_config import SandboxSettings
from swarm.core.tasks import TaskStore
from swarm.interactive.chat import Chat
from swarm.interactive.commands import Commands
from swarm.interactive.questions import Desk, PersonGate
from swarm.interactive.sessions import find_session, history_path, new_session
from swarm.interactive.terminal import PlainLines, Terminal
from swarm.interactive.view import View
from swarm.models.aliases import expand_alias
from swarm.models.base import Effort
from swarm.models.factory import make_provider
from swarm.models.team_gate import GateLimits, TeamGate
from swarm.runtime.lead import LeadTeam
from swarm.runtime.team_resume import team_of_session
from swarm.runtime.lead_process import StopSignals


def run_chat(home: Home, *, resume: str | None, permission_mode: str, model: str | None, playbook: Path | None,
             cwd: Path | None, agent_name: str | None, agents_json: str | None, allow: tuple[str, ...],
             deny: tuple[str, ...], backend: str, tmux_socket: str | None, teammate_playbooks: dict[str, Path],
             allow_writes_outside_cwd: bool, trust: bool, effort: Effort | None = None,
             coordinator: bool = False, sandbox: bool = False, limits: GateLimits | None = None,
             stall_after: float | None = None, resume_team: bool = False) -> None:
    workdir = (cwd or Path.cwd()).resolve()
    terminal = sys.stdin.isatty() and sys.stdout.isatty()
    env = _trusted_env(workdir, trust=trust, ask=terminal)
    if coordinator:
        env = {**env, COORDINATOR_ENV: "1"}
    stored = find_session(home, resume) if resume is not None else new_session(home)
    relay = _Relay()
    requests = TeamGate(None, LEAD_NAME)  # the team's gate on model requests, bound once the agent creates a team
    setup = MainSetup.load(env, workdir, agents_json=agents_json, agent_name=agent_name, model=model,
                           playbook=playbook, note=warn, on_text=relay, gate=requests)
    say_model(setup.choice)
    provider = setup.provider
    desk = Desk()
    view = View(workdir, plain=not terminal)
    main = setup.main_agent(stored.transcript.with_suffix(".subagents"), note=view.warn, effort=effort)
    policy = LeadPolicy(allow=list(allow), deny=list(deny)) if allow or deny else None
    lead = LeadTeam(home, env, workdir, backend=backend, tmux_socket=tmux_socket, policy=policy,
                    playbooks=teammate_playbooks, ceiling=permission_mode, person_answers_plans=True,
                    limits=limits or GateLimits(), gate=requests, stall_after=stall_after,
                    sandbox=SandboxSettings(enabled=True) if sandbox else None)
    own_rules = settings_rules(workdir, settings_digests(workdir), env=env).merged(
        RuleSet(allow=tuple(parse_rules(list(allow))), deny=tuple(parse_rules(list(deny)))))
    gate = PersonGate(desk, own_rules, permission_mode, cwd=workdir)
    session = MainSession(provider, cwd=workdir, main=main, transcript=stored.transcript, resume=resume is not None,
                          limits=Limits(), confine_writes=not allow_writes_outside_cwd, extra_tools=team_tools(lead),
                          team_control=lead, tasks=TaskStore.of_session(home, stored.id), gate=gate,
                          sandbox=own_sandbox(workdir, env, flag=sandbox, home=home, warn=view.warn,
                                              ask_domain=gate.ask_network))
    chat = Chat(session, lead, view, desk, stored.id)
    relay.target = chat.stream
    commands = Commands(chat, lambda chosen: make_provider(expand_alias(chosen, env), playbook=None, env=env,
                                                           on_text=relay, gate=requests))
    _welcome(view, chat, provider.model, workdir, resumed=resume is not None)
    transcript = session.conversation.transcript
    if transcript is not None:  # the team it leads, for a later --resume
        lead.on_team = lambda team: transcript.event("team", durable=True, team=team)
        if resume is not None:
            _take_team_back(home, lead, session, view, transcript.events("team"), ask=terminal, confirmed=resume_team)
    session.conversation.observer = view.message
    session.conversation.on_compacted = view.compacted
    front: Terminal | PlainLines
    if terminal:
        front = Terminal(chat, commands, history_path(home))
        view.on_change = desk.on_change = chat.on_change = front.wake
    else:
        front = PlainLines(chat, commands)
    stops = StopSignals(_stop_handler(chat, front))
    chat.start()
    with stops:
        try:
            front.run()
        except KeyboardInterrupt:
            view.note("interrupted")
        finally:
            stops.ignore()  # the shutdown below is not cut short by another Ctrl-C, SIGTERM or SIGHUP
            gate.closed.set()  # a network question from the sandbox's proxy stops waiting
            try:
                for line in chat.close():
                    view.note(f"kept: {line}")
            finally:
                provider.close()
    view.note(f"session {chat.session_id} saved; `swarm run --resume {chat.session_id}` continues it")
    if stops.by_signal:
        raise click.exceptions.Exit(stops.exit_code)  # the team is down, but the session did not end by choice


def _trusted_env(workdir: Path, *, trust: bool, ask: bool) -> dict[str, str]:
    """The session's environment, once the folder's trust is settled: asked once at a terminal, as Claude Code
    asks, and recorded where it records it; the answer no runs on without the project (one warning)."""
    env = dict(os.environ)
    if trust or not ask:
        return grant_or_refuse(workdir, env, trust=trust)
    found = project_configuration(workdir, env) if not is_trusted(workdir, env) else []
    if not found:
        return env
    folder = project_root(workdir)
    echo(f"swarm: the folder {folder} has project configuration ({configuration_names(folder, found)}), "
               "which can change what agents may do.", err=True)
    if click.confirm("Do you trust the files in this folder?", default=False, err=True):
        written = record_trust(folder, env)
        echo(f"swarm: trusted {folder} (recorded in {written})", err=True)
    else:
        warn(untrusted_warning(workdir, env) or f"{folder} is not trusted")
    return env


class _Relay:
    """The provider's ``on_text``, pointed at the chat once it exists (and after ``/model``)."""

    def __init__(self) -> None:
        self.target: Callable[[str], None] = lambda _: None

    def __call__(self, piece: str) -> None:
        self.target(piece)


def _take_team_back(home: Home, lead: LeadTeam, session: MainSession, view: View, events: list[dict[str, Any]], *,
                    ask: bool, confirmed: bool) -> None:
    """The resumed session led a team that still exists: lead it again if the person says so (or --resume-team)."""
    team = team_of_session(events, home)
    if team is None:
        return
    if not confirmed and ask:
        echo(f"this session led team {team!r}")
        confirmed = click.confirm("take it back (teammates that are gone start again from their transcripts)?",
                                  default=True)
    if not confirmed:
        view.note(f"team {team!r} was left as it is; `swarm run --resume ID --resume-team` takes it back")
        return
    view.note(lead.adopt(team, session.ctx).line())


def _welcome(view: View, chat: Chat, model: str, cwd: Path, *, resumed: bool) -> None:
    if resumed:
        view.note(f"resuming session {chat.session_id}")
        view.replay(chat.session.conversation.messages)
    view.note(f"swarm session {chat.session_id} · model {model} · {cwd}")
    view.note("talk to the lead; it can create a team and start teammates. /help lists the commands")


def _stop_handler(chat: Chat, front: Terminal | PlainLines) -> Callable[[int, FrameType | None], None]:
    """The stop signals: SIGTERM and SIGHUP end the session (as ``/exit``: the team is shut down); SIGINT is
    Ctrl-C, which the prompt handles itself while it runs; without a terminal prompt the first stops the lead's
    turn, and one with no turn running ends the session."""
    lock = threading.Lock()

    def handler(signum: int, frame: FrameType | None) -> None:
        if signum != signal.SIGINT and isinstance(front, Terminal) and front.leave():
            return
        if signum == signal.SIGINT and isinstance(front, PlainLines):
            with lock:
                if chat.focus.viewing is not None:  # a teammate is viewed: its turn, not the lead's
                    threading.Thread(target=lambda: chat.view.note(chat.focus.interrupt()), daemon=True).start()
                    return
                if chat.interrupt():
                    chat.view.note("interrupting the lead's turn")
                    return
        raise KeyboardInterrupt

    return handler
