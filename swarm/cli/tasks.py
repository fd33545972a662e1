"""``swarm tasks`` and ``swarm task add|update``: the team's shared task list from the terminal.

The person at the terminal acts as the team lead: a task given to a teammate
(``--owner``) sends them a ``task_assignment`` frame from ``team-lead``.
"""

from __future__ import annotations

import os
import re
from typing import Any

import click

from swarm.cli.options import (
    agent_name_callback,
    home_of,
    json_option,
    team_option,
    warn,
)
from swarm.cli.render import echo, emit_json, one_line, table
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.names import LEAD_NAME
from swarm.core.protocol import Task, command_author
from swarm.core.task_assignment import check_assignee, send_assignment
from swarm.core.tasks import (
    STATUSES,
    UNSET,
    TaskChange,
    TaskStore,
    parse_task_id,
    task_document,
)
from swarm.core.teams import TeamStore
from swarm.errors import UsageError


def _task_ids(ctx: click.Context, param: click.Parameter, value: str | None) -> list[str]:
    """``"1,2 3"`` -> ``["1", "2", "3"]``; a bad id is a usage error naming the option."""
    if not value:
        return []
    try:
        return [parse_task_id(part) for part in re.split(r"[,\s]+", value.strip()) if part]
    except UsageError as exc:
        raise click.BadParameter(str(exc)) from exc


def _task_id(ctx: click.Context, param: click.Parameter, value: str) -> str:
    try:
        return parse_task_id(value)
    except UsageError as exc:
        raise click.BadParameter(str(exc)) from exc


def _store(ctx: click.Context, team: str) -> TaskStore:
    """The team's task list; NotFoundError (one line, with the fix) when the team does not exist."""
    home = home_of(ctx)
    TeamStore(home).get(team)
    return TaskStore(home, team)


@click.command()
@team_option
@json_option
@click.pass_context
def tasks(ctx: click.Context, team: str, as_json: bool) -> None:
    """List the team's tasks: id, subject, status, owner, and the open tasks each waits for."""
    store = _store(ctx, team)
    found = store.list()
    for problem in store.problems():
        warn(problem)
    if as_json:
        emit_json([task_document(t) for t in found])
        return
    if not found:
        echo(f"no tasks in team {team}; add one with `swarm task add SUBJECT --team {team}`")
        return
    done = {t.id for t in found if t.status == "completed"}
    table(["id", "subject", "status", "owner", "blocked by"], [
        [t.id, one_line(t.subject), t.status, t.owner or "", ", ".join(i for i in t.blocked_by if i not in done)]
        for t in found
    ])


@click.group()
def task() -> None:
    """Add and change tasks of the team's task list (`swarm tasks` lists them)."""


@task.command("add")
@click.argument("subject")
@team_option
@click.option("--description", "-d", default="", help="What needs doing.")
@click.option("--blocked-by", default=None, callback=_task_ids, metavar="IDS",
              help="Tasks that must be completed first, e.g. '1,2'.")
@click.option("--owner", default=None, callback=agent_name_callback, help="Give the task to this member.")
@json_option
@click.pass_context
def add(ctx: click.Context, subject: str, team: str, description: str, blocked_by: list[str],
        owner: str | None, as_json: bool) -> None:
    """Add a task with SUBJECT (a short imperative)."""
    store = _store(ctx, team)
    if owner is not None and owner != LEAD_NAME:
        check_assignee(Mailbox(store.home, team), owner)
    created = store.create(subject, description, owner=owner, blocked_by=blocked_by)
    told = _tell_owner(store.home, team, TaskChange(task=created, assigned_to=owner if owner != LEAD_NAME else None))
    _report(f"created task {created.id}: {one_line(created.subject)}", created, told, as_json)


@task.command("update")
@click.argument("task_id", metavar="ID", callback=_task_id)
@team_option
@click.option("--status", type=click.Choice(STATUSES), default=None, help="New status; 'deleted' deletes the task.")
@click.option("--owner", default=None, callback=agent_name_callback, help="Give the task to this member.")
@click.option("--no-owner", is_flag=True, help="Clear the owner.")
@click.option("--subject", default=None, help="New subject.")
@click.option("--description", "-d", default=None, help="New description.")
@click.option("--add-blocked-by", default=None, callback=_task_ids, metavar="IDS",
              help="Tasks that must be completed before this one, e.g. '1,2'.")
@json_option
@click.pass_context
def update(ctx: click.Context, task_id: str, team: str, status: str | None, owner: str | None, no_owner: bool,
           subject: str | None, description: str | None, add_blocked_by: list[str], as_json: bool) -> None:
    """Change task ID: status, owner, subject, description, dependencies."""
    if owner is not None and no_owner:
        raise click.UsageError("pass --owner NAME or --no-owner, not both")
    if status is None and owner is None and not no_owner and subject is None and description is None \
            and not add_blocked_by:
        raise click.UsageError("nothing to change; pass --status, --owner, --no-owner, --subject, --description "
                               "or --add-blocked-by")
    store = _store(ctx, team)
    if owner is not None and owner != LEAD_NAME:
        check_assignee(Mailbox(store.home, team), owner)
    change = store.update(
        task_id, by=LEAD_NAME, status=UNSET if status is None else status,
        owner=None if no_owner else (UNSET if owner is None else owner),
        subject=UNSET if subject is None else subject, description=UNSET if description is None else description,
        add_blocked_by=add_blocked_by, author=command_author(os.environ))
    if change.task is None:
        if as_json:
            emit_json({"id": task_id, "deleted": True})
        else:
            echo(f"deleted task {task_id}")
        return
    told = _tell_owner(store.home, team, change)
    _report(f"updated task {task_id}: {one_line(change.task.subject)} [{change.task.status}]"
            + (f" owner: {change.task.owner}" if change.task.owner else ""), change.task, told, as_json)


def _tell_owner(home: Home, team: str, change: TaskChange) -> str | None:
    """Send the new owner the assignment when the change gave the task to someone; who was told."""
    if change.task is None or change.assigned_to is None:
        return None
    send_assignment(Mailbox(home, team), change.task, LEAD_NAME)
    return change.assigned_to


def _report(line: str, task: Task, told: str | None, as_json: bool) -> None:
    if as_json:
        doc: dict[str, Any] = task_document(task)
        emit_json({**doc, "assignmentSentTo": told} if told else doc)
    else:
        echo(line + (f" ({told} was sent the assignment)" if told else ""))
