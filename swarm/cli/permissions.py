"""``swarm permissions | approve | deny | plan approve|reject``: the lead's desk.

Each command first records what Claude Code teammates asked in the lead's
inbox (``lead_inbox.catch_up``: this process's one look at it, leaving it as it is).
"""

from __future__ import annotations

import click

from swarm.agent.permissions.policy import PERMISSION_MODES
from swarm.cli.options import home_of, json_option, team_option
from swarm.cli.render import echo, emit_json, json_line, table, write_out
from swarm.core.clock import now_ms
from swarm.core.home import Home
from swarm.core.permlog import PermissionEvent
from swarm.core.teams import TeamStore
from swarm.runtime.permission_desk import (
    answer_plan,
    apply_policy,
    pending,
    requester_cwd,
    what_is_asked,
)
from swarm.runtime.permission_desk import approve as approve_request
from swarm.runtime.permission_desk import deny as deny_request
from swarm.runtime.lead_inbox import LeadInbox, catch_up


@click.command()
@team_option
@json_option
@click.option("--watch", "-w", is_flag=True, help="Keep answering by policy and show requests as they arrive.")
@click.pass_context
def permissions(ctx: click.Context, team: str, as_json: bool, watch: bool) -> None:
    """List pending permission and plan requests (the team's lead policy answers what it covers first)."""
    home = home_of(ctx)
    if not watch:
        catch_up(home, team)
        _report(apply_policy(home, team), as_json)
        _list(home, team, pending(home, team), as_json)
        return
    shown: set[str] = set()
    inbox = LeadInbox(home, team, prune=False)  # this process's one consumer of the lead's inbox, as it watches
    try:
        inbox.collect()
        while True:
            _report(apply_policy(home, team), as_json)
            fresh = [r for r in pending(home, team) if r.request_id not in shown]
            shown.update(r.request_id for r in fresh)
            if fresh:
                _list(home, team, fresh, as_json)
            inbox.pump(5.0)
    except KeyboardInterrupt:
        return
    finally:
        inbox.close()


def _report(decisions: list[PermissionEvent], as_json: bool) -> None:
    for d in decisions:
        if as_json:
            write_out(json_line(d.model_dump(mode="json", exclude_none=True)))
        else:
            echo(f"{d.request_id}: {d.decision} ({d.agent} {d.tool}) by {d.by}")


def _list(home: Home, team: str, requests: list[PermissionEvent], as_json: bool) -> None:
    """The requests, each with ``what_is_asked`` whole and last on its row: nothing cuts a command's tail."""
    if as_json:
        emit_json([r.model_dump(mode="json", exclude_none=True) for r in requests])
        return
    if not requests:
        echo("no pending requests")
        return
    team_file = TeamStore(home).get(team)
    table(["id", "teammate", "kind", "age", "what"], [
        [r.request_id, r.agent, r.tool if r.kind == "permission" else "plan", f"{(now_ms() - r.ts) // 1000}s",
         what_is_asked(r, requester_cwd(team_file, r.agent))]
        for r in requests
    ])


@click.command()
@click.argument("request_id")
@team_option
@click.option("--always", is_flag=True, help="Also allow the suggested rule for that teammate from now on.")
@click.pass_context
def approve(ctx: click.Context, request_id: str, team: str, always: bool) -> None:
    """Approve permission request REQUEST_ID."""
    catch_up(home_of(ctx), team)
    event = approve_request(home_of(ctx), team, request_id, always=always)
    extra = f"; rule {event.rule_added} added for {event.agent}" if event.rule_added else ""
    echo(f"approved {request_id} ({event.agent} {event.tool}){extra}")


@click.command()
@click.argument("request_id")
@team_option
@click.option("--reason", "-r", default=None, help="Told to the teammate's model.")
@click.pass_context
def deny(ctx: click.Context, request_id: str, team: str, reason: str | None) -> None:
    """Deny permission request REQUEST_ID."""
    catch_up(home_of(ctx), team)
    event = deny_request(home_of(ctx), team, request_id, reason=reason)
    echo(f"denied {request_id} ({event.agent} {event.tool}): {event.reason}")


@click.group()
def plan() -> None:
    """Approve or reject a teammate's plan (plan mode)."""


@plan.command("approve")
@click.argument("request_id")
@team_option
@click.option("--mode", type=click.Choice(PERMISSION_MODES), default=None,
              help="Permission mode the teammate switches to [default: the one it was spawned with].")
@click.option("--feedback", "-f", default=None, help="Notes for the teammate.")
@click.pass_context
def plan_approve(ctx: click.Context, request_id: str, team: str, mode: str | None, feedback: str | None) -> None:
    """Approve plan REQUEST_ID: the teammate may start editing."""
    catch_up(home_of(ctx), team)
    event = answer_plan(home_of(ctx), team, request_id, approved=True, feedback=feedback, mode=mode)
    echo(f"approved plan {request_id} of {event.agent}")


@plan.command("reject")
@click.argument("request_id")
@team_option
@click.option("--feedback", "-f", required=True, help="What to change; goes to the teammate's model.")
@click.pass_context
def plan_reject(ctx: click.Context, request_id: str, team: str, feedback: str) -> None:
    """Reject plan REQUEST_ID with feedback: the teammate stays in plan mode."""
    catch_up(home_of(ctx), team)
    event = answer_plan(home_of(ctx), team, request_id, approved=False, feedback=feedback)
    echo(f"rejected plan {request_id} of {event.agent}")
