"""``swarm status|logs|attach|shutdown|kill``: the team's teammate processes (``swarm spawn``: ``cli/spawn.py``)."""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path

import click

from swarm.cli.options import (
    agent_name_callback,
    home_of,
    json_option,
    team_option,
)
from swarm.agent.live_events import LiveEvent
from swarm.agent.live_render import lines, plain
from swarm.cli.render import echo, emit_json, json_line, table, write_out
from swarm.cli.top import run_top
from swarm.core.fileio import open_regular
from swarm.core.home import Home
from swarm.core.permlog import PermissionLog
from swarm.errors import BackendError, NotFoundError, UsageError
from swarm.runtime.shutdown import force_stop, live_members
from swarm.runtime.shutdown import shutdown as shutdown_teammates
from swarm.runtime.hosts.attach import elsewhere
from swarm.runtime.costs import team_cost, usd
from swarm.runtime.status import MemberStatus, team_status
from swarm.runtime.overview import TeamOverview
from swarm.runtime.watching import Window, since_epoch
from swarm.runtime.watching import follow as follow_events
from swarm.runtime.worktrees import Worktree
from swarm.core.watch import watch_dirs


@click.command()
@team_option
@json_option
@click.option("--watch", "-w", is_flag=True,
              help="Live: on a terminal the full-screen `swarm top`; with --json a snapshot per change.")
@click.pass_context
def status(ctx: click.Context, team: str, as_json: bool, watch: bool) -> None:
    """Show each member: backend, process, state, queued messages, activity, tokens, worktree."""
    home = home_of(ctx)
    if not watch:
        _print_status(team_status(home, team), as_json)
        _print_cost(home, team, as_json)
        _print_waiting(home, team, as_json)
        return
    if not as_json:
        run_top(home, team)
        return
    overview = TeamOverview(home, team)  # a snapshot now and after each change of the team's files
    try:
        while True:
            _print_status(team_status(home, team), as_json)
            while not overview.wait(3600.0):
                pass
    except KeyboardInterrupt:
        return
    finally:
        overview.close()


def _print_cost(home: Home, team: str, as_json: bool) -> None:
    """The team's spend against its budget (each row has its member's own ``cost_usd``)."""
    if not as_json:
        echo(f"team cost: {team_cost(home, team).line()}")


def _print_waiting(home: Home, team: str, as_json: bool) -> None:
    """Point the lead at requests that teammates are blocked on."""
    waiting = PermissionLog(home, team).pending()
    if waiting and not as_json:
        who = ", ".join(sorted({r.agent for r in waiting}))
        echo(f"{len(waiting)} request(s) waiting for the lead ({who}): swarm permissions --team {team}")


def _print_status(rows: list[MemberStatus], as_json: bool) -> None:
    if as_json:
        emit_json([r.model_dump() for r in rows])
        return
    trees = any(r.worktree for r in rows)  # the column only for teams that use worktrees
    hosted = any(r.host is not None for r in rows)  # the column only for teams with teammates on hosts
    headers = ["name", "state", *(["host"] if hosted else []), "backend", "pid/pane", "queued", "last activity",
               "tokens", "cost"]
    table([*headers, *(["worktree"] if trees else [])], [
        [r.name, r.state, *([r.host or ("(placing)" if r.host == "" else "local")] if hosted else []), r.backend,
         r.pane if r.backend == "tmux" else (r.pid or ""), r.undelivered,
         f"{r.idle_for_s:.0f}s ago" if r.idle_for_s is not None else "", r.tokens, usd(r.cost_usd),
         *([_worktree_cell(r)] if trees else [])]
        for r in rows
    ])
    kept = [r for r in rows if r.worktree_state in ("changed", "orphaned")]
    for r in kept:
        echo(f"{r.name}: {r.worktree_state} worktree {r.worktree} on {r.worktree_branch} ({r.worktree_changes})")


def _worktree_cell(row: MemberStatus) -> str:
    if not row.worktree_state:
        return ""
    return row.worktree_state + (f" +{row.worktree_ahead}" if row.worktree_ahead else "")


@click.command()
@click.argument("name", callback=agent_name_callback)
@team_option
@click.option("--follow", "-f", is_flag=True, help="Keep showing new events as they happen, until Ctrl-C.")
@click.option("--since", default=None, metavar="WHEN", help="Only events since WHEN: 30s, 5m, 2h, 1d or an ISO time.")
@click.option("--tail", "tail", type=click.IntRange(min=0), default=None, metavar="N",
              help="Only the last N events kept.")
@click.option("--json", "as_json", is_flag=True, help="One event a line, as JSON.")
@click.option("--log", "raw_log", is_flag=True, help="The teammate's log file (its log lines) instead.")
@click.pass_context
def logs(ctx: click.Context, name: str, team: str, follow: bool, since: str | None, tail: int | None,
         as_json: bool, raw_log: bool) -> None:
    """Show teammate NAME's live transcript: its text, tool calls, messages, requests, state.

    With --follow it goes on as the teammate works (also for subprocess
    teammates), and ends when the teammate is gone.
    """
    home = home_of(ctx)
    live_members(home, team, [name])
    if raw_log or (not home.events_path(team, name).exists() and home.log_path(team, name).exists()):
        _print_log(home.log_path(team, name), follow)  # asked for, or a teammate from before live events
        return
    window = Window(since=since_epoch(since) if since else None, tail=tail)

    def show(event: LiveEvent) -> None:
        if as_json:
            write_out(json_line(event.wire()))
        elif event.type != "text_delta":
            write_out("".join(plain(line) + "\n" for line in lines(event)))

    try:
        follow_events(home, team, name, show, window=window, follow_on=follow)
    except KeyboardInterrupt:
        return


def _print_log(path: Path, follow: bool) -> None:
    if not path.exists():
        raise NotFoundError(f"no log yet at {path}")
    with os.fdopen(open_regular(path), "r", errors="replace") as handle:  # a FIFO there must not hang
        echo(handle.read(), nl=False)
        watcher = watch_dirs(path.parent) if follow else None
        try:
            while watcher is not None:
                line = handle.readline()
                if line:
                    echo(line, nl=False)
                else:
                    watcher.wait(1.0)
        except KeyboardInterrupt:
            return
        finally:
            if watcher is not None:
                watcher.close()


@click.command()
@click.argument("name", callback=agent_name_callback)
@team_option
@click.pass_context
def attach(ctx: click.Context, name: str, team: str) -> None:
    """Attach the terminal to teammate NAME's tmux pane."""
    [member] = live_members(home_of(ctx), team, [name])
    remote = elsewhere(home_of(ctx), team, member)
    if remote is not None:
        raise UsageError(remote)
    if member.backend_type != "tmux":
        raise UsageError(f"{name} runs as a subprocess, not in tmux; use `swarm logs {name} -f --team {team}`")
    tmux = shutil.which("tmux")
    if tmux is None:
        raise BackendError("tmux is not installed or not on PATH")
    server = ["-S", member.tmux_socket] if member.tmux_socket and "/" in member.tmux_socket else (
        ["-L", member.tmux_socket] if member.tmux_socket else [])
    pane = member.tmux_pane_id
    verb = "switch-client" if os.environ.get("TMUX") else "attach-session"
    os.execv(tmux, [tmux, *server, "select-pane", "-t", pane, ";", verb, "-t", pane])


@click.command()
@click.argument("names", nargs=-1, callback=lambda c, p, v: [agent_name_callback(c, p, n) for n in v])
@team_option
@click.option("--all", "everyone", is_flag=True, help="Every teammate of the team.")
@click.option("--reason", default=None, help="Told to the teammates.")
@click.option("--timeout", type=click.FloatRange(min=0), default=30.0, show_default=True,
              help="Seconds to wait before forcing a teammate down.")
@json_option
@click.pass_context
def shutdown(ctx: click.Context, names: list[str], team: str, everyone: bool, reason: str | None,
             timeout: float, as_json: bool) -> None:
    """Ask teammates NAMES (or --all) to stop; force those that do not within --timeout."""
    if bool(names) == everyone:
        raise UsageError("name the teammates to stop, or pass --all (not both)")
    outcomes = shutdown_teammates(home_of(ctx), team, None if everyone else names, dict(os.environ),
                                  reason=reason, timeout=timeout)
    if as_json:
        emit_json([dataclasses.asdict(o) for o in outcomes])
    else:
        for o in outcomes:
            echo(f"{o.name}: {o.result}" + (f" ({o.detail})" if o.detail else ""))
            _print_worktree(o.worktree)


def _print_worktree(tree: Worktree | None) -> None:
    if tree is not None and tree.state == "removed":
        echo(f"  worktree removed (no changes), branch {tree.branch} deleted")
    elif tree is not None:
        echo(f"  worktree kept: {tree.path} on {tree.branch} ({tree.summary})")


@click.command()
@click.argument("name", callback=agent_name_callback)
@team_option
@click.pass_context
def kill(ctx: click.Context, name: str, team: str) -> None:
    """Stop teammate NAME at once (process tree and pane); the lead is told."""
    home = home_of(ctx)
    [member] = live_members(home, team, [name])
    outcome = force_stop(home, team, member, dict(os.environ), why="killed by `swarm kill`")
    echo(f"{outcome.name}: {outcome.result}")
    _print_worktree(outcome.worktree)
