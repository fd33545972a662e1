"""``swarm worktrees [prune]``: teammate git worktrees, listed and cleaned up."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from swarm.cli.options import home_of, json_option
from swarm.cli.render import echo, emit_json, table
from swarm.core.names import validate_name
from swarm.errors import InvalidNameError
from swarm.runtime.hosts.branches import remote_worktrees
from swarm.runtime.worktrees import Worktree, list_worktrees
from swarm.runtime.worktrees import prune as prune_worktrees

F = TypeVar("F", bound=Callable[..., Any])


def _team_name(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    try:
        return None if value is None else validate_name(value, "team name")
    except InvalidNameError as exc:
        raise click.BadParameter(str(exc)) from exc


def _team_filter(func: F) -> F:
    return click.option("--team", "-t", envvar="SWARM_TEAM", show_envvar=True, default=None, callback=_team_name,
                        help="Only this team's worktrees [default: every team].")(func)


@click.group(invoke_without_command=True)
@_team_filter
@json_option
@click.pass_context
def worktrees(ctx: click.Context, team: str | None, as_json: bool) -> None:
    """List teammate worktrees: teammate, branch, state, commits ahead.

    Worktrees are found in the repositories the team's members worked in and
    in the repository of the current directory. States: live (teammate
    running), changed (kept after shutdown), unchanged, orphaned (teammate
    died or forgotten). Teammates on other hosts are listed with their branch
    as the team's git remote has it (fetched into refs/swarm-remote/...):
    commits ahead of the base, files changed, the sha last pushed.
    """
    if ctx.invoked_subcommand is not None:
        return
    home = home_of(ctx)
    found = list_worktrees(home, team, Path.cwd()) + remote_worktrees(home, team, Path.cwd())
    if as_json:
        emit_json([_as_dict(t) for t in found])
        return
    if not found:
        echo("no swarm worktrees" + (f" for team {team}" if team else ""))
        return
    table(["team", "teammate", "state", "branch", "ahead", "uncommitted", "path"], [
        [t.team, t.teammate, t.state, t.branch or "(detached)", _ahead(t), "-" if t.host else t.uncommitted,
         _where(t) if t.host else t.path] for t in found
    ])


@worktrees.command()
@_team_filter
@click.option("--force", is_flag=True, help="Also remove worktrees with changes; uncommitted edits are lost "
                                            "(branches with commits are still kept).")
@json_option
@click.pass_context
def prune(ctx: click.Context, team: str | None, force: bool, as_json: bool) -> None:
    """Remove worktrees whose teammate is not running and that hold no changes; report the kept ones."""
    if team is None and ctx.parent is not None:  # `swarm worktrees --team T prune`
        team = ctx.parent.params.get("team")
    results = prune_worktrees(home_of(ctx), team, Path.cwd(), force=force)
    if as_json:
        emit_json([{"worktree": _as_dict(r.worktree), "removed": r.removed, "reason": r.reason} for r in results])
        return
    if not results:
        echo("no swarm worktrees" + (f" for team {team}" if team else ""))
    for r in results:
        tree = r.worktree
        where = f"{tree.branch or 'detached HEAD'}" + ("" if r.removed else f", {tree.path}")
        echo(f"{'removed' if r.removed else 'kept'} {tree.team}/{tree.teammate} ({where}): {r.reason}")


def _where(tree: Worktree) -> str:
    """Where a teammate on a host has its work: its host, and what the remote holds of it."""
    if tree.error:
        return f"on {tree.host}; remote unreadable: {tree.error}"
    if not tree.pushed:
        return f"on {tree.host}; nothing pushed yet"
    return f"on {tree.host}; pushed {tree.pushed[:10]}, {tree.files_changed} file(s) changed"


def _ahead(tree: Worktree) -> str:
    return f"{tree.ahead} (merged)" if tree.ahead and not tree.unmerged else str(tree.ahead)


def _as_dict(tree: Worktree) -> dict[str, Any]:
    return {**dataclasses.asdict(tree), "changed": tree.changed}
