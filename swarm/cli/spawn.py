"""``swarm spawn``: start a teammate here, or on a host of the team.

Its own module: the agent stack it loads (the workspace's trust check, the
spawn) is not what ``swarm status`` and the other teammate commands need.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from swarm.agent.permissions.policy import PERMISSION_MODES
from swarm.agent.workspace import grant_or_refuse
from swarm.cli.options import (
    agent_name_callback,
    home_of,
    json_option,
    say_teammate_model,
    team_option,
    tmux_socket_option,
    trust_option,
    warn,
)
from swarm.cli.render import echo, emit_json
from swarm.core.protocol import COLORS, command_author
from swarm.core.sandbox_config import SandboxSettings
from swarm.errors import UsageError
from swarm.runtime.hosts.place import place
from swarm.runtime.lead_process import forget_dead_lead
from swarm.runtime.restart_policy import DEFAULT_MAX_RESTARTS, RESTART_POLICIES, RestartPolicy
from swarm.runtime.spawn import SpawnRequest, spawn_reporting, wait_joined


@click.command()
@click.argument("name", callback=agent_name_callback)
@team_option
@click.option("--prompt", "-p", required=True, help="The teammate's first task ('-' reads stdin).")
@click.option("--backend", type=click.Choice(["auto", "tmux", "subprocess"]), default="auto", show_default=True)
@click.option("--agent-type", default="general-purpose", show_default=True)
@click.option("--model", "-m", default=None, help="Model id, or 'scripted[:PLAYBOOK]'.")
@click.option("--playbook", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
              help="Run the teammate on the offline scripted model with this playbook.")
@click.option("--permission-mode", type=click.Choice(PERMISSION_MODES), default="default", show_default=True)
@click.option("--plan-mode-required", is_flag=True, help="Read-only until the lead approves a plan.")
@click.option("--cwd", type=click.Path(file_okay=False, exists=True, path_type=Path), default=None,
              help="Working directory [default: current directory].")
@click.option("--color", type=click.Choice(COLORS), default=None, help="Pane border / message colour.")
@click.option("--allowed-tools", "allowed", multiple=True, metavar="RULE",
              help="Allow rule, e.g. 'Bash(git status:*)' (repeatable).")
@click.option("--disallowed-tools", "disallowed", multiple=True, metavar="RULE",
              help="Deny rule, e.g. 'Bash(rm:*)' (repeatable).")
@click.option("--permission-timeout", type=click.FloatRange(min=0.1), default=300.0, show_default=True,
              help="Seconds a permission request waits for the lead before it counts as denied.")
@click.option("--skill", "skills", multiple=True, metavar="NAME",
              help="Preload this skill's instructions into the teammate's system prompt (repeatable).")
@click.option("--worktree", is_flag=True,
              help="Work in a new git worktree on branch swarm/TEAM/NAME (under .swarm/worktrees in the repo).")
@click.option("--base", metavar="REF", default=None, help="Commit the worktree starts from [default: HEAD].")
@click.option("--runtime", type=click.Choice(["swarm", "claude"]), default="swarm", show_default=True,
              help="swarm's own teammate, or a Claude Code CLI session in a tmux pane.")
@click.option("--claude-bin", metavar="PATH", default=None,
              help="The claude binary for --runtime claude [default: $SWARM_CLAUDE_BIN, else claude on PATH].")
@click.option("--sandbox", is_flag=True,
              help="Run the teammate's Bash commands in the OS sandbox (bubblewrap; `swarm doctor` checks it runs here).")
@click.option("--restart", type=click.Choice(RESTART_POLICIES), default="no", show_default=True,
              help="Start it again when it dies (on-failure), or whenever it ends (always); the team's "
                   "coordinator (swarm up, swarm run) does it, with backoff.")
@click.option("--max-restarts", type=click.IntRange(min=0), default=DEFAULT_MAX_RESTARTS, show_default=True,
              help="Restarts at most; then the lead is told and it stays down.")
@click.option("--host", "on_host", default=None, metavar="NAME",
              help="Run it on that host (`swarm host serve` there; a PostgreSQL team), through a signed request.")
@click.option("--labels", default=None, metavar="A,B", help="Run it on any host that has these labels.")
@click.option("--repo", default=None, metavar="URL",
              help="With --host/--labels: a git remote (default: the team's, `swarm team create --repo`, else the "
                   "origin of the repository here); --base (default HEAD) is pushed to swarm/TEAM/base, the host "
                   "clones it and pushes the teammate's branch swarm/TEAM/NAME.")
@tmux_socket_option
@trust_option
@json_option
@click.pass_context
def spawn(ctx: click.Context, name: str, team: str, prompt: str, backend: str, agent_type: str, model: str | None,
          playbook: Path | None, permission_mode: str, plan_mode_required: bool, cwd: Path | None,
          color: str | None, allowed: tuple[str, ...], disallowed: tuple[str, ...], permission_timeout: float,
          skills: tuple[str, ...], worktree: bool, base: str | None, runtime: str, claude_bin: str | None,
          sandbox: bool, restart: RestartPolicy, max_restarts: int, on_host: str | None, labels: str | None,
          repo: str | None, tmux_socket: str | None, trust: bool, as_json: bool) -> None:
    """Start teammate NAME in the team and give it its first task.

    The folder's project configuration (agents, skills, settings, CLAUDE.md)
    applies only if it is trusted: an untrusted folder that has some is an
    error unless --trust (see `swarm trust`).
    """
    if prompt == "-":
        prompt = sys.stdin.read()
    if repo is not None and on_host is None and labels is None:
        raise UsageError("--repo applies to a teammate on a host (--host or --labels); use --worktree here")
    if on_host is not None or labels is not None:
        _spawn_on_host(ctx, name, team, prompt, on_host, labels, backend=backend, agent_type=agent_type, model=model,
                       playbook=playbook, permission_mode=permission_mode, as_json=as_json, repo=repo, base=base,
                       cwd=cwd, restart=restart, max_restarts=max_restarts)
        return
    workdir = (cwd or Path.cwd()).resolve()
    env = grant_or_refuse(workdir, os.environ, trust=trust)
    request = SpawnRequest(team=team, name=name, prompt=prompt, prompt_author=command_author(os.environ),
                           backend=backend, agent_type=agent_type,
                           model=model, permission_mode=permission_mode, plan_mode_required=plan_mode_required,
                           cwd=workdir, color=color, playbook=playbook, tmux_socket=tmux_socket,
                           allowed_tools=list(allowed), disallowed_tools=list(disallowed), skills=list(skills),
                           permission_timeout=permission_timeout, worktree=worktree, base=base,
                           runtime=runtime, claude_bin=claude_bin, restart=restart, max_restarts=max_restarts,
                           sandbox=SandboxSettings(enabled=True) if sandbox else None)
    home = home_of(ctx)
    forget_dead_lead(home, team)  # a person leads from here: a lead process that died is not waited on
    spawned = spawn_reporting(home, request, env)
    for warning in spawned.warnings:
        warn(warning)
    wait_joined(home, team, [name])
    say_teammate_model(request, os.environ)
    member = spawned.member
    if as_json:
        emit_json(member.wire())
        return
    where = f"pane {member.tmux_pane_id}" if member.backend_type == "tmux" else f"pid {member.pid}"
    echo(f"spawned {name} in team {team} ({member.backend_type}, {where})")
    if member.worktree_path:
        echo(f"  worktree {member.worktree_path} on branch {member.worktree_branch}")


def _spawn_on_host(ctx: click.Context, name: str, team: str, prompt: str, on_host: str | None, labels: str | None,
                   *, backend: str, agent_type: str, model: str | None, playbook: Path | None, permission_mode: str,
                   as_json: bool, repo: str | None, base: str | None, cwd: Path | None, restart: RestartPolicy,
                   max_restarts: int) -> None:
    """``swarm spawn --host/--labels``: a signed request a host takes (``runtime.hosts.place``)."""
    home = home_of(ctx)
    wanted = sorted({x.strip() for x in (labels or "").split(",") if x.strip()})
    member = place(home, team, name, prompt, host=on_host, labels=wanted, prompt_author=command_author(os.environ),
                   agent_type=agent_type, model=model, permission_mode=permission_mode, backend=backend,
                   playbook=playbook, repo=repo, base=base, cwd=cwd, restart=restart, max_restarts=max_restarts)
    wait_joined(home, team, [name])
    if as_json:
        emit_json(member.wire())
        return
    echo(f"spawned {name} in team {team} on host {member.host} ({member.backend_type}, pid {member.pid} there)")
