"""``swarm demo``: see a team work, offline, in about two seconds."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import click

from swarm.cli.render import echo, emit_json, one_line
from swarm.core.permlog import PermissionEvent
from swarm.runtime.costs import usd
from swarm.runtime.demo import DemoRun, abort, cleanup, run_demo
from swarm.runtime.lead_process import StopSignals
from swarm.runtime.lead_inbox import LeadMessage


@click.command()
@click.option("--keep", is_flag=True, help="Keep the demo repository, home and worktrees to look at.")
@click.option("--backend", type=click.Choice(["auto", "tmux", "subprocess"]), default="auto", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the run's JSON report instead of the account.")
@click.option("--sandbox", is_flag=True, help="Run the teammates' Bash in the OS sandbox (bubblewrap): their "
              "commands need no prompt, and the account says how many permission requests were left.")
def demo(keep: bool, backend: str, as_json: bool, sandbox: bool) -> None:
    """Watch a lead model run a team, offline, in a throwaway git repo, and tell what happened.

    The lead (a scripted model, no API key needed) creates a team, writes a
    task list with a dependency and starts an implementer and a tester, each
    in its own git worktree. They claim their tasks; the implementer writes
    and commits slugify() and tells the tester, who merges it, runs its test
    through a skill, commits it and reports; the lead then shuts them down.
    Their git commands are approved by the lead policy.
    """
    began = time.monotonic()

    def stamp() -> str:
        return f"{time.monotonic() - began:5.2f}s"

    def message(m: LeadMessage) -> None:
        if not as_json and m.kind in ("message", "idle", "terminated"):
            what = {"message": "→ lead:", "idle": "is idle:", "terminated": "!"}[m.kind]
            text = (m.summary if m.kind == "idle" else m.text) or ""
            echo(f"  {stamp()}  {m.sender} {what} {one_line(text, 100)}")

    def decision(d: PermissionEvent) -> None:
        if not as_json:
            verb = "approved" if d.decision == "allow" else "denied"
            echo(f"  {stamp()}  {d.agent} asked to run a {d.tool} command: {verb} by {d.by}")

    env = dict(os.environ)
    root = Path(tempfile.mkdtemp(prefix="swarm-demo-"))
    stops = StopSignals()  # SIGTERM and SIGHUP as Ctrl-C: the team is stopped, nothing is left
    try:
        if not as_json:
            echo("swarm demo: a lead model runs a two-person team, offline (scripted models, no API key)\n")
        with stops:
            run = run_demo(env, backend=backend, root=root, on_message=message, on_decision=decision, sandbox=sandbox)
    except KeyboardInterrupt:
        abort(root, env)
        echo(f"\ninterrupted: stopped the demo team and removed {root}", err=True)
        raise click.exceptions.Exit(stops.exit_code) from None
    except BaseException:
        abort(root, env)  # a failed demo leaves nothing behind either
        raise
    try:
        if as_json:
            emit_json({**run.report.model_dump(mode="json"), "sandbox": run.sandbox,
                       "permission_requests": run.permission_requests})
        else:
            _account(run)
    finally:
        if keep:
            echo(f"\nkept: {run.root} (repo, home, worktrees)" + (
                f"; tmux socket {run.tmux_socket}" if run.tmux_socket else ""))
        else:
            cleanup(run, env)
            if not as_json:
                echo(f"\ncleaned up {run.root} (use --keep to look around)")
    if not run.report.ok:
        raise click.exceptions.Exit(1)


def _account(run: DemoRun) -> None:
    report = run.report
    echo(f"\nbackend: {run.backend}" + (f" (private tmux server '{run.tmux_socket}')" if run.tmux_socket else ""))
    echo(f"repo:    {run.repo}")
    echo("\nthe lead wrote a task list:")
    for task in report.tasks:
        blocked = f" (after {', '.join(task.get('blockedBy', []))})" if task.get("blockedBy") else ""
        echo(f"  #{task['id']} {task['subject']}{blocked} — {task['status']} by {task.get('owner') or 'nobody'}")
    echo("\nteammates talked to each other:")
    for sender, to, text in run.chatter:
        echo(f"  {sender} → {to}: {text}")
    echo(f"\nthe lead's last word: {run.answer}")
    echo("\nshutdown:")
    for member in report.members:
        echo(f"  {member['name']}: {member['stopped']} — last said: {member['result']}")
    echo("\nworktrees kept because they hold work:")
    for tree in report.worktrees:
        stat = tree["diffstat"].strip().splitlines()[-1].strip() if tree["diffstat"].strip() else ""
        echo(f"  {tree['branch']}: {tree['ahead']} commit(s) ahead ({stat})")
    if run.merged is not None:
        echo(f"\nmerged into {run.merged.into} through the merge queue (tested after each):")
        for step in run.merged.steps:
            echo(f"  {step.branch}: {step.result.replace('_', ' ')}" + (f" — {step.detail}" if step.detail else ""))
    echo("\ngit log --graph --all:")
    for line in run.history.strip().splitlines():
        echo(f"  {line}")
    decided = report.decisions
    by_policy = sum(1 for d in decided if str(d.get("by", "")).startswith("policy"))
    echo(f"\n{'ok' if report.ok else 'NOT ok'}: {report.reason} in {report.elapsed_s:.1f}s · "
         f"{len(decided)} permission decisions ({by_policy} by the lead policy) · "
         f"{report.usage['tokens']} tokens (scripted estimate) · {usd(report.cost.get('usd', 0.0))}")
    echo(f"permission requests: {run.permission_requests} (Bash sandbox {'on' if run.sandbox else 'off'})")
    echo("next: swarm up teams.example/review/team.toml --headless  ·  swarm --help")
