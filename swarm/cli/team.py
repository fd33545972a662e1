"""``swarm team create|list|show|delete``."""

from __future__ import annotations

import os
from pathlib import Path

import click

from swarm.cli.options import home_of, json_option, team_name_argument
from swarm.cli.render import echo, emit_json, table
from swarm.core.clock import now_ms
from swarm.core.protocol import TeamFile
from swarm.core.signing import rotate_lead_key
from swarm.core.store import check_store, redacted
from swarm.core.store.redact import redact_remote
from swarm.core.teams import TeamStore
from swarm.runtime.adopt import adopt as adopt_team
from swarm.runtime.hosts.code import check_remote
from swarm.runtime.member_kinds import Machine, member_kind
from swarm.runtime.shutdown import delete_team
from swarm.runtime.status import running


@click.group()
def team() -> None:
    """Create, list, show and delete teams."""


@team.command("create")
@team_name_argument
@click.option("--description", "-d", default=None, help="What the team is for.")
@click.option("--store", envvar="SWARM_STORE", default=None, metavar="URL",
              help="Keep the team's state in PostgreSQL (postgresql://…) instead of files [env: SWARM_STORE].")
@click.option("--repo", default=None, metavar="URL",
              help="The git remote the team's code travels through to teammates on hosts (default: the lead "
                   "repository's origin).")
@json_option
@click.pass_context
def create(ctx: click.Context, name: str, description: str | None, store: str | None, repo: str | None,
           as_json: bool) -> None:
    """Create team NAME with its team-lead member."""
    url = check_store(store)
    remote = check_remote(repo) if repo is not None else None
    created = TeamStore(home_of(ctx)).create(name, description, store=url, repo=remote)
    rotate_lead_key(home_of(ctx), name)
    if as_json:
        emit_json(_team_json(created))
    else:
        where = home_of(ctx).config_path(name) if url is None else redacted(url)
        echo(f"created team {created.name} ({where})")


@team.command("adopt")
@team_name_argument
@click.option("--store", envvar="SWARM_STORE", required=True, metavar="URL",
              help="The PostgreSQL database the team is in [env: SWARM_STORE].")
@click.option("--lead-key", "key_file", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
              help="A copy of the old lead's lead.key: teammates and hosts keep trusting the lead.")
@json_option
@click.pass_context
def adopt(ctx: click.Context, name: str, store: str, key_file: Path | None, as_json: bool) -> None:
    """Lead team NAME, kept in PostgreSQL, from this home (the old lead's machine is gone)."""
    adopted = adopt_team(home_of(ctx), name, store, key_file)
    if as_json:
        emit_json(adopted.model_dump())
        return
    echo(f"adopted team {name}: teammates {', '.join(adopted.members) or '(none)'}")
    if not adopted.same_key:
        echo("a new lead key: running teammates take this lead's messages as unverified text, and hosts need "
             f"`swarm host key --team {name}` in their --trust-key file to take new spawn requests")


@team.command("list")
@json_option
@click.pass_context
def list_(ctx: click.Context, as_json: bool) -> None:
    """List the teams in the home; a team whose file cannot be read is named on stderr (exit 1)."""
    teams, unreadable = TeamStore(home_of(ctx)).survey()
    if as_json:
        emit_json([_team_json(t) for t in teams])
    elif teams:
        machine = Machine(os.environ, home_of(ctx))
        table(["team", "members", "running", "age", "description"], [
            [t.name, len(t.members), sum(1 for m in t.members if running(member_kind(m, machine).state())),
             _age(t.created_at), t.description or ""]
            for t in teams
        ])
    elif not unreadable:
        echo("no teams; create one with `swarm team create NAME`")
    for name, why in unreadable.items():
        echo(f"swarm: error: team {name} is unreadable: {why.removeprefix(f'team {name!r}: ')}", err=True)
    if unreadable:
        ctx.exit(1)


@team.command("show")
@team_name_argument
@json_option
@click.pass_context
def show(ctx: click.Context, name: str, as_json: bool) -> None:
    """Show team NAME and its members."""
    found = TeamStore(home_of(ctx)).get(name)
    if as_json:
        emit_json(_team_json(found))
        return
    echo(f"team {found.name}" + (f": {found.description}" if found.description else ""))
    machine = Machine(os.environ, home_of(ctx))
    table(["name", "type", "backend", "pane/pid", "state", "color", "cwd"], [
        [m.name, m.agent_type or "", m.backend_type or "", m.tmux_pane_id or (m.pid or ""),
         member_kind(m, machine).state(), m.color or "", m.cwd]
        for m in found.members
    ])


@team.command("delete")
@team_name_argument
@click.option("--force", is_flag=True,
              help="Kill teammates that reject the shutdown (SIGTERM, then SIGKILL) and delete anyway.")
@click.option("--timeout", type=click.FloatRange(min=0), default=10.0, show_default=True,
              help="Seconds live teammates get to shut down before they are forced.")
@click.pass_context
def delete(ctx: click.Context, name: str, force: bool, timeout: float) -> None:
    """Delete team NAME: stop its teammates (and what they started), then remove inboxes, logs, transcripts, tasks.

    Without --force a teammate that rejects the shutdown keeps the team.
    """
    stopped = delete_team(home_of(ctx), name, dict(os.environ), force=force, timeout=timeout)
    for outcome in stopped:
        if outcome.result != "not_running":
            echo(f"stopped {outcome.name}: {outcome.result}")
    echo(f"deleted team {name}")


def _team_json(t: TeamFile) -> dict[str, object]:
    doc = t.wire()
    doc["members"] = [m.wire() for m in t.members]
    if t.repo:
        doc["repo"] = redact_remote(t.repo)  # a remote's credentials are never shown
    return doc


def _age(created_ms: int) -> str:
    seconds = max(0, (now_ms() - created_ms) // 1000)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
