"""``swarm up FILE`` and ``swarm down TEAM``: a whole team from a team file."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import click

from swarm.agent.workspace import grant_or_refuse
from swarm.cli.entry import HEADLESS
from swarm.cli.options import (
    gate_options,
    stall_option,
    home_of,
    json_option,
    say_teammate_model,
    team_name_argument,
    tmux_socket_option,
    trust_option,
    warn,
)
from swarm.cli.render import echo, emit_json, one_line, table
from swarm.core.clock import now_ms
from swarm.core.home import Home
from swarm.core.sandbox_config import SandboxSettings, layered
from swarm.core.permlog import PermissionEvent, PermissionLog
from swarm.core.teams import TeamStore
from swarm.runtime.costs import team_cost, usd
from swarm.runtime.lead_process import StopSignals
from swarm.runtime.lead_pump import Answer, LeadPump
from swarm.runtime.permission_desk import requester_cwd, what_is_asked
from swarm.runtime.lead_inbox import LeadMessage
from swarm.runtime.shutdown import Outcome
from swarm.runtime.status import team_status
from swarm.runtime.up import Report, Started, run_headless, start_team, stop_team
from swarm.runtime.upfile import UpFile, load_upfile


@click.command()
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--detach", "-d", is_flag=True,
              help="Return once every member is spawned. Nobody coordinates a detached team: restart policies "
                   "and the watchdog (--stall-after) need an attached `swarm up` or `swarm run`; a teammate that "
                   "dies stays down (`swarm status` shows it).")
@click.option("--headless", is_flag=True, help="No prompts: the policy decides, anything else is denied; "
              "stop when all are idle or at --timeout.")
@click.option("--timeout", type=click.FloatRange(min=1), default=600.0, show_default=True,
              help="Headless: seconds before giving up.")
@click.option("--cwd", type=click.Path(file_okay=False, exists=True, path_type=Path), default=None,
              help="Directory members work in (their `cwd` is relative to it) [default: current directory].")
@click.option("--offline", is_flag=True, help="Run members on their playbooks even when ANTHROPIC_API_KEY is set.")
@click.option("--sandbox", is_flag=True, help="Turn the team's Bash sandbox on (as [sandbox] enabled = true).")
@gate_options
@stall_option
@tmux_socket_option
@trust_option
@json_option
@click.pass_context
def up(ctx: click.Context, file: Path, detach: bool, headless: bool, timeout: float, cwd: Path | None,
       offline: bool, sandbox: bool, max_cost: float | None, max_concurrent_requests: int | None,
       stall_after: float | None, tmux_socket: str | None, trust: bool, as_json: bool) -> None:
    """Start the team described in FILE (TOML) and coordinate it until Ctrl-C (or SIGTERM, SIGHUP).

    FILE has a [team] table (name, description, max_cost,
    max_concurrent_requests, stall_after), optional [lead] / [lead.policy] /
    [permissions] tables, and one [[members]] table per teammate (name,
    prompt, playbook, model, backend, worktree, permission_mode,
    plan_mode_required, cwd, color, allowed_tools, disallowed_tools, restart,
    max_restarts). See teams.example/.

    Project configuration (agents, skills, settings, CLAUDE.md) applies only
    in a trusted folder: an untrusted one that has some is an error unless
    --trust (see `swarm trust`).
    """
    home = home_of(ctx)
    spec = load_upfile(file)
    if sandbox:
        spec.sandbox = layered(spec.sandbox or SandboxSettings(), SandboxSettings(enabled=True))
    if max_cost is not None:
        spec.team.max_cost = max_cost
    if max_concurrent_requests is not None:
        spec.team.max_concurrent_requests = max_concurrent_requests
    if stall_after is not None:
        spec.team.stall_after = stall_after
    where = (cwd or Path.cwd()).resolve()
    env = grant_or_refuse(where, os.environ, trust=trust)
    for member in spec.members:  # nothing starts unless every member's folder may apply its configuration
        if member.cwd is not None and (where / member.cwd).is_dir():
            grant_or_refuse(where / member.cwd, env, trust=False)  # --trust covers `where` and below

    def say_models(started: Started) -> None:
        for request in started.requests:
            say_teammate_model(request, env)

    with StopSignals() as stops:  # SIGTERM and SIGHUP stop the team as Ctrl-C does
        if headless:
            report = run_headless(home, spec, cwd=where, env={**env, HEADLESS: "1"}, timeout=timeout,
                                  tmux_socket=tmux_socket,
                                  offline=offline, on_started=say_models)
            _print_report(report, as_json)
            ctx.exit(0 if report.ok else 1)
        started = start_team(home, spec, cwd=where, env=env, tmux_socket=tmux_socket, offline=offline,
                             lead=not detach)
        for warning in started.warnings:
            warn(warning)
        say_models(started)
        echo(f"team {started.team} is up: {', '.join(started.members)}")
        if detach:
            if (uncoordinated := _uncoordinated(spec)):
                warn(f"nobody coordinates a detached team: {uncoordinated} need an attached `swarm up` (or "
                     "`swarm run`); a teammate that dies stays down and a stalled one is not nudged")
            echo(f"watch: swarm status --team {started.team} --watch · answer: swarm permissions --team "
                       f"{started.team} --watch · stop: swarm down {started.team}")
            return
        _foreground(home, started.team, env, spec.lead.shutdown_timeout, stops, spec.team.stall_after)
    if stops.by_signal:
        raise click.exceptions.Exit(stops.exit_code)  # stopped, but not by the person: the caller learns it


def _uncoordinated(spec: UpFile) -> str:
    """What in ``spec`` only a coordinating ``swarm up`` does (restart policies, the watchdog), for people; ""."""
    restarted = [f"{m.name}: {m.restart}" for m in spec.members if m.restart != "no"]
    parts = [f"restart policies ({', '.join(restarted)})"] if restarted else []
    if spec.team.stall_after:
        parts.append(f"the watchdog (stall_after {spec.team.stall_after:g} s)")
    return " and ".join(parts)


@click.command()
@team_name_argument
@click.option("--timeout", type=click.FloatRange(min=0), default=30.0, show_default=True,
              help="Seconds teammates get to shut down before they are forced.")
@json_option
@click.pass_context
def down(ctx: click.Context, name: str, timeout: float, as_json: bool) -> None:
    """Stop every teammate of team NAME (handshake first, force after --timeout)."""
    outcomes = stop_team(home_of(ctx), name, dict(os.environ), timeout=timeout)
    if as_json:
        emit_json([_outcome_json(o) for o in outcomes])
    else:
        _print_outcomes(outcomes)


# -- foreground ---------------------------------------------------------------------------


@dataclass(frozen=True)
class TerminalAsker:
    """Asks the person at the terminal; used only when stdin is a TTY."""

    home: Home
    team: str

    def permission(self, request: PermissionEvent) -> Answer:
        what = what_is_asked(request, requester_cwd(TeamStore(self.home).get(self.team), request.agent))
        echo(f"\n? {request.agent} wants to {what} [{request.request_id}]")
        choice = click.prompt("  approve? (y)es / (n)o / (a)lways", type=click.Choice(["y", "n", "a"]), default="n")
        return {"y": "approve", "a": "always", "n": "deny"}[choice]  # type: ignore[return-value]

    def plan(self, request: PermissionEvent) -> tuple[bool, str | None]:
        echo(f"\n? {request.agent} submitted a plan [{request.request_id}]:\n{request.plan}\n")
        if click.confirm("  approve the plan?", default=False):
            return True, None
        return False, click.prompt("  feedback for the teammate", default="please revise")


def _foreground(home: Home, team: str, env: dict[str, str], shutdown_timeout: float, stops: StopSignals,
                stall_after: float | None) -> None:
    asker = TerminalAsker(home, team) if sys.stdin.isatty() else None
    if asker is None:
        click.echo("stdin is not a terminal: requests the policy does not answer are denied", err=True)
    coordinator = LeadPump(home, team, asker=asker, on_message=_print_message, on_decision=_print_decision,
                           env=env, stall_after=stall_after)
    click.echo("Ctrl-C stops the team")
    shown: tuple[tuple[str, str], ...] = ()
    since = now_ms()
    try:
        while True:
            coordinator.pump(0.5)
            rows = team_status(home, team)[1:]
            states = tuple((r.name, r.state) for r in rows)
            if states != shown:  # the table is printed again whenever someone's state changes
                shown = states
                table(["member", "state", "last activity", "tokens", "worktree"], [
                    [r.name, r.state, f"{r.idle_for_s:.0f}s ago" if r.idle_for_s is not None else "", r.tokens,
                     r.worktree_state or ""] for r in rows])
    except KeyboardInterrupt:
        by = f" ({stops.received})" if stops.by_signal else ""
        echo(f"\nstopping the team{by} (Ctrl-C again to force)…")
    finally:
        coordinator.close()
    _print_outcomes(stop_team(home, team, env, timeout=shutdown_timeout, inbox=coordinator.inbox))
    _print_totals(home, team, since)


def _print_totals(home: Home, team: str, since_ms: int) -> None:
    """The summary line after a foreground run: decisions by who made them, and tokens."""
    decisions = [e for e in PermissionLog(home, team).events() if e.event == "decision" and e.ts >= since_ms]
    by_policy = sum(1 for d in decisions if (d.by or "").startswith("policy"))
    by_person = sum(1 for d in decisions if d.by == "lead")
    tokens = sum(m.tokens or 0 for m in TeamStore(home).get(team).members)
    echo(f"{len(decisions)} permission decisions ({by_policy} by the lead policy, {by_person} by you, "
         f"{len(decisions) - by_policy - by_person} by timeout or rule) · {tokens} tokens · "
         f"{team_cost(home, team).line()}")


def _print_message(message: LeadMessage) -> None:
    if message.kind == "message":
        echo(f"[{message.sender} → lead] {message.text}")
    elif message.kind == "idle":
        echo(f"[{message.sender}] idle: {message.summary or ''}")
    elif message.kind == "terminated":
        echo(f"[!] {message.text}")
    elif message.kind in ("permission_request", "plan_request"):
        # not the sender's own summary: the prompt (or the decision) that follows says what is asked
        echo(f"[{message.sender}] sent a {message.kind.replace('_', ' ')}")


def _print_decision(decision: PermissionEvent) -> None:
    verb = "approved" if decision.decision == "allow" else "denied"
    echo(f"[lead] {verb} {decision.agent}'s {decision.tool} ({decision.request_id}) — by {decision.by}")


def _print_outcomes(outcomes: list[Outcome]) -> None:
    for outcome in outcomes:
        line = f"{outcome.name}: {outcome.result}" + (f" ({outcome.detail})" if outcome.detail else "")
        if outcome.worktree is not None and outcome.worktree.state == "changed":
            line += f"; kept worktree {outcome.worktree.path} on {outcome.worktree.branch}"
        echo(line)


def _outcome_json(outcome: Outcome) -> dict[str, object]:
    return {"name": outcome.name, "result": outcome.result, "detail": outcome.detail,
            "worktree": outcome.worktree.path if outcome.worktree else None}


def _print_report(report: Report, as_json: bool) -> None:
    for warning in report.warnings:  # stderr: the JSON on stdout stays whole
        warn(warning)
    if as_json:
        emit_json(report.model_dump(mode="json"))
        return
    echo(f"team {report.team}: {'ok' if report.ok else 'NOT ok'} ({report.reason}, {report.elapsed_s:.1f}s, "
         f"{report.usage['tokens']} tokens, {usd(report.cost.get('usd', 0.0))})")
    table(["member", "stopped", "result"], [[m["name"], m["stopped"], one_line(m["result"] or m["failure"] or "", 70)]
                                           for m in report.members])
    for decision in report.decisions:
        echo(f"decision: {decision['decision']} {decision.get('agent')} {decision.get('tool')} by {decision['by']}")
    for tree in report.worktrees:
        echo(f"worktree: {tree['path']} ({tree['state']}, {tree['ahead']} commits ahead on {tree['branch']})")
