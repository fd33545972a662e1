"""``swarm run -p PROMPT``: one headless agent, only the final answer on stdout; without ``-p``, the interactive session."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType

import click

from swarm.agent.coordinator import COORDINATOR_ENV
from swarm.agent.headless import MainSession, MainSetup
from swarm.agent.limits import Limits
from swarm.agent.permissions.policy import PERMISSION_MODES
from swarm.agent.tool_api.context import TurnState
from swarm.agent.sandbox import own_sandbox
from swarm.agent.tools.team_tools import team_tools
from swarm.agent.workspace import grant_or_refuse
from swarm.cli.entry import HEADLESS
from swarm.cli.options import (
    gate_options,
    home_of,
    json_option,
    say_model,
    stall_option,
    tmux_socket_option,
    trust_option,
    warn,
)
from swarm.cli.render import echo, emit_json
from swarm.core.clock import now_ms
from swarm.core.home import Home
from swarm.core.names import LEAD_NAME
from swarm.core.protocol import LeadPolicy
from swarm.core.sandbox_config import SandboxSettings
from swarm.core.tasks import TaskStore, task_document
from swarm.core.teams import TeamStore
from swarm.errors import SwarmError, UsageError
from swarm.models.base import EFFORTS, Effort
from swarm.models.team_gate import GateLimits, TeamGate
from swarm.runtime.lead import LeadOutcome, LeadTeam, run_lead
from swarm.runtime.lead_process import StopSignals


def _playbooks(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or not name or not path:
            raise click.BadParameter(f"{value!r}: expected NAME=PLAYBOOK")
        if not Path(path).is_file():
            raise click.BadParameter(f"{path}: no such playbook file")
        found[name] = Path(path).resolve()
    return found


@click.command("run")
@click.option("-p", "--prompt", default=None,
              help="Run headless on this task ('-' reads it from stdin); without it, an interactive session.")
@click.option("--resume", "resume", is_flag=False, flag_value="", default=None, metavar="[SESSION]",
              help="Continue an earlier interactive session (default: the newest).")
@click.option("--resume-team", "resume_team", is_flag=True,
              help="With --resume: take the session's team back without asking (teammates that are gone start "
                   "again from their transcripts).")
@click.option("--permission-mode", type=click.Choice(PERMISSION_MODES), default="default", show_default=True,
              help="The widest mode the lead may give the teammates it starts; in the interactive session also "
                   "how the lead's own tool calls are decided (the rest are asked).")
@click.option("--model", "-m", default=None, help="Model id, or 'scripted[:PLAYBOOK]' for the offline model.")
@click.option("--effort", type=click.Choice(EFFORTS), default=None,
              help="How hard the model thinks (adaptive thinking's effort, or an extended-thinking budget); "
                   "default: the --agent definition's effort, else the model's default.")
@click.option("--playbook", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
              help="Run the offline scripted model with this playbook (TOML or JSON).")
@click.option("--cwd", type=click.Path(file_okay=False, exists=True, path_type=Path), default=None,
              help="Working directory for the tools [default: current directory].")
@click.option("--max-turns", type=click.IntRange(min=0), default=0, help="Most model calls; 0 = unlimited.")
@click.option("--max-tokens", "token_budget", type=click.IntRange(min=0), default=0,
              help="Token budget for the run; 0 = unlimited.")
@click.option("--timeout", type=click.FloatRange(min=0), default=0, help="Wall-time limit in seconds; 0 = unlimited.")
@click.option("--transcript", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Append the conversation to this JSONL file.")
@click.option("--allow-writes-outside-cwd", is_flag=True, help="Let Write/Edit touch files outside --cwd.")
@click.option("--agent", "agent_name", default=None, metavar="NAME",
              help="Run the main agent as this agent definition (see `swarm agents`).")
@click.option("--agents", "agents_json", default=None, metavar="JSON",
              help='Extra agent definitions, e.g. \'{"reviewer": {"description": "...", "prompt": "..."}}\'.')
@click.option("--coordinator", is_flag=True,
              help="Coordinator mode: the agent only starts workers in the background (Agent), continues "
                   "(SendMessage) and stops them (TaskStop); as CLAUDE_CODE_COORDINATOR_MODE=1.")
@click.option("--allow", "allow", multiple=True, metavar="RULE",
              help="Lead policy: teammates' requests matching RULE are approved, e.g. 'Bash(pytest:*)' (repeatable).")
@click.option("--deny", "deny", multiple=True, metavar="RULE", help="Lead policy: requests matching RULE are denied.")
@click.option("--backend", type=click.Choice(["auto", "tmux", "subprocess"]), default="auto", show_default=True,
              help="Where teammates the agent starts run.")
@gate_options
@stall_option
@tmux_socket_option
@trust_option
@click.option("--sandbox", is_flag=True, help="Run Bash commands (the agent's and its teammates') in the OS sandbox "
              "(bubblewrap: writes only in the cwd or worktree, network only through swarm's proxy).")
@click.option("--rm", "remove", is_flag=True, help="Delete the team the agent created when the run ends.")
@click.option("--teammate-playbook", "teammate_playbooks", multiple=True, metavar="NAME=PLAYBOOK",
              callback=_playbooks, help="Run teammate NAME on the offline scripted model with PLAYBOOK (repeatable).")
@json_option
@click.pass_context
def run(ctx: click.Context, prompt: str | None, resume: str | None, resume_team: bool, permission_mode: str, model: str | None,
        effort: Effort | None, playbook: Path | None, cwd: Path | None,
        max_turns: int, token_budget: int, timeout: float, transcript: Path | None,
        allow_writes_outside_cwd: bool, agent_name: str | None, agents_json: str | None, coordinator: bool,
        allow: tuple[str, ...], deny: tuple[str, ...], backend: str, max_cost: float | None,
        max_concurrent_requests: int | None, stall_after: float | None, tmux_socket: str | None, trust: bool,
        remove: bool,
        teammate_playbooks: dict[str, Path], sandbox: bool,
        as_json: bool) -> None:
    """Talk to an agent that may lead a team: a session in the terminal, or with -p one headless run.

    Without -p: an interactive session in the terminal (/help inside lists its
    commands). Teammates' requests that --allow / --deny do not answer, and
    the lead's own tool calls that its permission mode, settings and --allow
    leave open, are asked in the chat. Sessions are kept under the home;
    --resume continues one.

    With -p PROMPT the agent runs headless and only its final answer goes to
    stdout. With TeamCreate the agent becomes a team lead: it writes a task list,
    starts teammates (Agent with team_name), and reads what they send as its
    next turns until no teammate is active; teammates' permission requests
    are answered by --allow / --deny (otherwise denied). Teammates are always
    shut down before the run ends; the team stays on disk unless --rm.

    Project configuration (agents, skills, settings files, CLAUDE.md) applies
    only in a trusted folder: the session asks; with -p an untrusted folder
    that has some is an error unless --trust (see `swarm trust`).

    Diagnostics go to stderr. Ctrl-C stops the agent (and its subagents) after
    the current step; a second Ctrl-C aborts at once. SIGTERM and SIGHUP stop
    it at once; its teammates are shut down in every case.
    """
    if prompt is None:
        from swarm.cli.chat import (
            run_chat,  # prompt_toolkit is loaded only for the interactive session
        )

        run_chat(home_of(ctx), resume=resume, permission_mode=permission_mode, model=model, playbook=playbook,
                 cwd=cwd, agent_name=agent_name, agents_json=agents_json, allow=allow, deny=deny, backend=backend,
                 tmux_socket=tmux_socket, teammate_playbooks=teammate_playbooks,
                 allow_writes_outside_cwd=allow_writes_outside_cwd, trust=trust, effort=effort,
                 coordinator=coordinator, sandbox=sandbox, limits=_limits(max_cost, max_concurrent_requests),
                 stall_after=stall_after, resume_team=resume_team)
        return
    if resume is not None:
        raise UsageError("--resume continues an interactive session; leave out -p")
    if prompt == "-":
        prompt = sys.stdin.read()
    workdir = (cwd or Path.cwd()).resolve()
    env = {**grant_or_refuse(workdir, os.environ, trust=trust), HEADLESS: "1"}  # its teammates' CLI server ends with it
    if coordinator:
        env = {**env, COORDINATOR_ENV: "1"}
    gate = TeamGate(None, LEAD_NAME)  # bound to the team once the agent creates one
    setup = MainSetup.load(env, workdir, agents_json=agents_json, agent_name=agent_name, model=model,
                           playbook=playbook, note=warn, gate=gate)
    say_model(setup.choice)
    provider = setup.provider
    run_id = f"{now_ms()}-{os.getpid()}"
    main = setup.main_agent(_agents_dir(home_of(ctx), transcript, run_id), note=warn, effort=effort)
    tasks = TaskStore.of_session(home_of(ctx), run_id)
    policy = LeadPolicy(allow=list(allow), deny=list(deny)) if allow or deny else None
    lead = LeadTeam(home_of(ctx), env, workdir, backend=backend, tmux_socket=tmux_socket, policy=policy,
                    playbooks=teammate_playbooks, ceiling=permission_mode,
                    limits=_limits(max_cost, max_concurrent_requests), gate=gate, stall_after=stall_after,
                    sandbox=SandboxSettings(enabled=True) if sandbox else None)
    session = MainSession(provider, cwd=workdir, main=main, transcript=transcript,
                          limits=Limits(max_turns=max_turns, max_tokens=token_budget, max_seconds=timeout),
                          confine_writes=not allow_writes_outside_cwd, extra_tools=team_tools(lead),
                          team_control=lead, tasks=tasks,
                          sandbox=own_sandbox(workdir, env, flag=sandbox, home=home_of(ctx), warn=warn))
    stops = StopSignals(_first_interrupt(session.ctx.turn))
    try:
        with stops:
            outcome = run_lead(session, lead, prompt, timeout=timeout)
    finally:
        session.close()
        provider.close()
    _finish(home_of(ctx), outcome, remove=remove, as_json=as_json, stopped_by=stops.received, tasks=tasks)


def _limits(max_cost: float | None, max_concurrent_requests: int | None) -> GateLimits:
    """The gate limits of the team the agent may create, from the options (defaults for those not given)."""
    if max_concurrent_requests is None:
        return GateLimits(max_cost=max_cost)
    return GateLimits(max_cost=max_cost, max_concurrent_requests=max_concurrent_requests)


def _finish(home: Home, outcome: LeadOutcome, *, remove: bool, as_json: bool, stopped_by: str | None = None,
            tasks: TaskStore | None = None) -> None:
    """Print the answer (or the JSON report, with the tasks of the run's own list) and fail when the run did not
    end well."""
    result = outcome.run
    if remove and outcome.team is not None and TeamStore(home).exists(outcome.team):
        TeamStore(home).delete(outcome.team, force=True)
    if as_json:
        emit_json({"text": result.text, "stop_reason": result.stop_reason, "reason": outcome.reason,
                   "report": outcome.report.model_dump(mode="json") if outcome.report else None,
                   "tasks": [task_document(t) for t in tasks.list()] if tasks is not None else []})
    if outcome.reason in ("timeout", "interrupted"):
        ended_by = stopped_by if outcome.reason == "interrupted" and stopped_by else outcome.reason
        raise SwarmError(f"run ended by {ended_by}; teammates were shut down"
                         + (f" (team {outcome.team!r} is kept: `swarm status --team {outcome.team}`)"
                            if outcome.team and not remove else ""))
    if not result.ok:
        raise SwarmError(f"agent stopped ({result.stop_reason}): {result.detail}")
    if outcome.report is not None and outcome.report.cost.get("budget_reached"):
        warn(f"the team's budget was reached (${outcome.report.cost['usd']:.4f} of "
             f"${outcome.report.cost['max_cost']:.2f}): model calls stopped")
    if not as_json:
        echo(result.text)


def _agents_dir(home: Home, transcript: Path | None, run_id: str) -> Path:
    """Subagent transcripts: beside the run's transcript, else under the home."""
    if transcript is not None:
        return transcript.with_name(f"{transcript.stem}.subagents")
    return home.root / "runs" / run_id / "subagents"


def _first_interrupt(turn: TurnState) -> Callable[[int, FrameType | None], None]:
    """The stop signals' handler: the first Ctrl-C asks the agent to stop after its step, the second aborts.

    SIGTERM and SIGHUP stop it the same way, and also cut short the step that
    runs (a command is killed): nobody waits for its result. The team is shut
    down either way (``run_lead``).
    """
    def handler(signum: int, frame: FrameType | None) -> None:
        if turn.cancel.is_set():
            raise KeyboardInterrupt
        turn.cancel.set()
        if signum != signal.SIGINT:
            turn.interrupt.set()
            say(f"swarm: {signal.Signals(signum).name}: stopping the agent and shutting its team down")
        else:
            say("swarm: stopping after the current step (Ctrl-C again to abort)")

    return handler


def say(line: str) -> None:
    """One line on stderr, if it can still be written (a closed pipe is no reason to fail the shutdown)."""
    with contextlib.suppress(OSError):
        echo(line, err=True)
