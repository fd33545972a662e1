"""TaskCreate, TaskGet, TaskList, TaskUpdate: the team's shared task list (``core.tasks``).

Every agent of a team has them, lead and teammates alike; the list is the
team's (``TaskStore(home, ctx.identity.team)``). A main agent in no team (a
solo ``swarm run``) uses its session's own list (``ctx.services.session_tasks``,
``TaskStore.of_session``) instead; once it creates a team the team's list is
used, and the solo list is kept as it was, apart (TeamDelete makes it current
again). A teammate never has one: it sees only its team's. Inputs keep Claude Code's field
names (``taskId``, ``activeForm``, ``addBlocks``, ``addBlockedBy``).

- A claim is one TaskUpdate setting ``status: in_progress`` with ``owner``
  set to oneself (or left out on a task nobody holds). Setting ``owner`` to
  oneself is checked like a claim, whatever the status: refused with the
  current owner's name or the open blockers.
- An update is all or nothing: one ``TaskStore.update``, checked and written
  in one cycle under the list lock, so a refused part (a claim, a cycle)
  leaves the task as it was.
- Setting the owner to someone else checks that they are a member first,
  then sends them a ``task_assignment`` frame.
- ``owner: ""`` (or null) clears the owner.
- A task an update completes, held by the agent that made it, is recorded in
  ``ctx.turn.completed_tasks`` (taken out again if a later update reopens it,
  gives it away or deletes it): a teammate reports the task its turn
  completed from there, without reading the task list.

They change only the task list, never the workspace, so they run without a
permission prompt (``read_only``), like SendMessage. Any member writes the
list, so what TaskList and TaskGet show is cut at ``PEER_TEXT_CHARS``
(``agent.output_cap``): one teammate cannot flood another's context.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from swarm.agent.hooks.tool_calls import transcript_of
from swarm.agent.output_cap import PEER_TEXT_CHARS
from swarm.agent.tool_api.base import Tool
from swarm.agent.tool_api.context import ToolContext, ToolError
from swarm.core.mailbox import Mailbox
from swarm.core.protocol import Task
from swarm.core.task_assignment import check_assignee, send_assignment
from swarm.core.tasks import (
    UNSET,
    TaskStore,
    Unset,
    parse_task_id,
)
from swarm.errors import SwarmError

def _id_text(raw: object) -> object:
    """A task id a model sent as a number (``3``), as the string the schema names."""
    return str(raw) if isinstance(raw, int) and not isinstance(raw, bool) else raw


TaskId = Annotated[str, BeforeValidator(_id_text)]
"""A task id: a string in the schema, as in Claude Code; a number is accepted too."""
R = TypeVar("R")


class _Input(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class TaskCreateInput(_Input):
    subject: str = Field(description="A short imperative title, e.g. 'Write the parser'.")
    description: str = Field(description="What needs doing, in enough detail for whoever takes it.")
    active_form: str | None = Field(default=None, alias="activeForm",
                                    description="Present-continuous form shown while it runs, e.g. 'Writing the parser'.")
    metadata: dict[str, Any] | None = Field(default=None, description="Free-form data to keep with the task.")


class TaskGetInput(_Input):
    task_id: TaskId = Field(alias="taskId", description="The task's id, e.g. '3'.")


class TaskListInput(_Input):
    pass


class TaskUpdateInput(_Input):
    task_id: TaskId = Field(alias="taskId", description="The task's id, e.g. '3'.")
    subject: str | None = None
    description: str | None = None
    active_form: str | None = Field(default=None, alias="activeForm")
    status: Literal["pending", "in_progress", "completed", "deleted"] | None = Field(
        default=None, description="'in_progress' with owner set to yourself claims the task; 'deleted' deletes it.")
    add_blocks: list[TaskId] | None = Field(default=None, alias="addBlocks",
                                            description="Ids of tasks that cannot start until this one is completed.")
    add_blocked_by: list[TaskId] | None = Field(default=None, alias="addBlockedBy",
                                                description="Ids of tasks that must be completed before this one.")
    owner: str | None = Field(default=None, description="Agent name to give the task to; '' clears the owner.")
    metadata: dict[str, Any] | None = Field(default=None, description="Keys to merge in; a null value removes a key.")


class TaskCreate(Tool[TaskCreateInput]):
    name = "TaskCreate"
    description = ("Add a task to your team's shared task list. It starts pending with no owner; use TaskUpdate to "
                   "set dependencies (addBlockedBy) or give it to a teammate (owner).")
    input_model = TaskCreateInput
    read_only = True

    def run(self, args: TaskCreateInput, ctx: ToolContext) -> str:
        store = _store(ctx)
        task = _call(lambda: store.create(args.subject, args.description, active_form=args.active_form,
                                          metadata=args.metadata))
        refusal = _task_hooks(ctx, "TaskCreated", task)
        if refusal is not None:  # the hook refused it: the task goes again
            _call(lambda: store.update(task.id, by=ctx.identity.name, status="deleted"))
            raise ToolError(f"task not created: {refusal}")
        return f"Task #{task.id} created successfully: {task.subject}"


class TaskGet(Tool[TaskGetInput]):
    name = "TaskGet"
    description = "Show one task of your team's task list in full: description, status, owner, dependencies."
    input_model = TaskGetInput
    read_only = True
    max_result_chars = PEER_TEXT_CHARS  # any member writes the list: one cannot flood another's context
    truncation_hint = "the task is longer than a teammate reads; ask its author to put the details in a file"

    def run(self, args: TaskGetInput, ctx: ToolContext) -> str:
        store = _store(ctx)
        task = _call(lambda: store.get(str(args.task_id)))
        return task_details(task, _call(store.list))


class TaskList(Tool[TaskListInput]):
    name = "TaskList"
    description = ("List your team's tasks, one line each: id, status, subject, owner, and the open tasks it waits "
                   "for. A pending task with no owner and nothing open to wait for can be claimed.")
    input_model = TaskListInput
    read_only = True
    max_result_chars = PEER_TEXT_CHARS
    truncation_hint = "the list is longer than a teammate reads; TaskGet shows one task"

    def run(self, args: TaskListInput, ctx: ToolContext) -> str:
        store = _store(ctx)
        tasks = _call(store.list)
        lines = [task_line(t, tasks) for t in tasks] or ["No tasks yet."]
        return "\n".join([*lines, *(f"warning: {p}" for p in store.problems())])


class TaskUpdate(Tool[TaskUpdateInput]):
    name = "TaskUpdate"
    description = (
        "Change a task of your team's task list. Claim one with status 'in_progress' and owner set to your own "
        "name (refused if someone else holds it or a task it waits for is not completed); mark it 'completed' "
        "when done. Setting owner to a teammate gives it to them (they are told). addBlocks / addBlockedBy add "
        "dependencies; status 'deleted' removes the task."
    )
    input_model = TaskUpdateInput
    read_only = True

    def run(self, args: TaskUpdateInput, ctx: ToolContext) -> str:
        store = _store(ctx)
        task_id = _call(lambda: parse_task_id(str(args.task_id)))
        owner = _owner_given(args)
        if args.status == "in_progress" and owner is UNSET and _call(lambda: store.get(task_id)).owner is None:
            owner = ctx.identity.name  # in_progress on a free task is a claim (the store checks it under the lock)
        elif isinstance(owner, str) and owner != ctx.identity.name:
            _call(lambda: check_assignee(_mailbox(ctx), owner))
        if args.status == "completed" and ctx.services.hooks is not None and ctx.services.hooks.active("TaskCompleted"):
            current = _call(lambda: store.get(task_id))
            refusal = _task_hooks(ctx, "TaskCompleted", current) if current.status != "completed" else None
            if refusal is not None:
                raise ToolError(f"task #{task_id} not marked completed: {refusal}")
        given = args.model_fields_set
        change = _call(lambda: store.update(
            task_id, by=ctx.identity.name, owner=owner,
            subject=args.subject if "subject" in given and args.subject is not None else UNSET,
            description=args.description if "description" in given and args.description is not None else UNSET,
            active_form=args.active_form if "active_form" in given else UNSET,
            status=args.status if args.status is not None else UNSET,
            metadata=args.metadata if args.metadata is not None else UNSET,
            add_blocks=[str(i) for i in args.add_blocks or ()],
            add_blocked_by=[str(i) for i in args.add_blocked_by or ()]))
        task = change.task
        _note_completion(ctx, task_id, task, args.status)
        if task is None:
            return f"Task #{task_id} deleted."
        if change.assigned_to is not None:
            _call(lambda: send_assignment(_mailbox(ctx), task, ctx.identity.name))
        return _update_result(task, change.assigned_to, store)


def _task_hooks(ctx: ToolContext, event: str, task: Task) -> str | None:
    """``TaskCreated`` / ``TaskCompleted`` hooks on ``task``: None lets it be; else why a hook refused it (exit 2's
    stderr, ``decision: "block"``'s reason), for the model to act on."""
    hooks = ctx.services.hooks
    if hooks is None or not hooks.active(event):
        return None
    outcome = hooks.fire(event, transcript=transcript_of(ctx),
                         cwd=ctx.cwd, task_id=task.id, task_subject=task.subject, task_description=task.description,
                         teammate_name=ctx.identity.name, team_name=ctx.identity.team or "")
    return f"{event} hook feedback: {outcome.reason}" if outcome.blocked else None


def task_tools() -> list[Tool[Any]]:
    """New instances of the four task tools, in the order the model sees them."""
    return [TaskCreate(), TaskGet(), TaskList(), TaskUpdate()]


TASK_TOOL_NAMES: tuple[str, ...] = (TaskCreate.name, TaskGet.name, TaskList.name, TaskUpdate.name)
"""The task tools' names: every agent of a team holds them, whatever its definition lists."""


# -- rendering ---------------------------------------------------------------


def task_line(task: Task, tasks: list[Task]) -> str:
    """``#3 [pending] Write the parser (owner: bob) blocked by #1, #2`` — open blockers only."""
    line = f"#{task.id} [{task.status}] {task.subject}"
    if task.owner:
        line += f" (owner: {task.owner})"
    waiting = _open(task.blocked_by, tasks)
    return line + (f" blocked by {', '.join('#' + i for i in waiting)}" if waiting else "")


def task_details(task: Task, tasks: list[Task]) -> str:
    """Every field of ``task``, one per line."""
    lines = [f"Task #{task.id}: {task.subject}", f"Status: {task.status}", f"Owner: {task.owner or '(none)'}"]
    if task.active_form:
        lines.append(f"Active form: {task.active_form}")
    lines.append(f"Description: {task.description or '(none)'}")
    if task.blocked_by:
        waiting = set(_open(task.blocked_by, tasks))
        lines.append("Blocked by: " + ", ".join(f"#{i}" + (" (open)" if i in waiting else " (completed)")
                                               for i in task.blocked_by))
    if task.blocks:
        lines.append("Blocks: " + ", ".join(f"#{i}" for i in task.blocks))
    if task.metadata:
        lines.append(f"Metadata: {json.dumps(task.metadata, ensure_ascii=False)}")
    return "\n".join(lines)


def _update_result(task: Task, assigned_to: str | None, store: TaskStore) -> str:
    text = f"Updated task #{task.id}: {task.subject} [{task.status}]" + (f" owner: {task.owner}" if task.owner else "")
    if assigned_to is not None:
        text += f"; {assigned_to} was sent the assignment"
    if task.status == "completed":
        free = _call(store.claimable)
        text += ("; tasks you could claim next: " + ", ".join(f"#{t.id} {t.subject}" for t in free)
                 if free else "; no task is free to claim right now")
    return text + "."


def _open(ids: list[str], tasks: list[Task]) -> list[str]:
    done = {t.id for t in tasks if t.status == "completed"}
    return [i for i in ids if i not in done]


# -- plumbing ----------------------------------------------------------------


def _store(ctx: ToolContext) -> TaskStore:
    """The team's list while the agent is in one; else its session's own (``session_tasks``)."""
    if ctx.identity.team is not None and ctx.services.mailbox is not None:
        return TaskStore(ctx.services.mailbox.home, ctx.identity.team)
    if ctx.services.session_tasks is not None:
        return ctx.services.session_tasks
    raise ToolError("no team: the task list belongs to a team or a main agent's session, and this agent has "
                    "neither (a lead creates a team with TeamCreate)")


def _mailbox(ctx: ToolContext) -> Mailbox:
    if ctx.services.mailbox is None:
        raise ToolError("no team: this agent has no mailbox to tell a teammate with")
    return ctx.services.mailbox


def _note_completion(ctx: ToolContext, task_id: str, task: Task | None, status: str | None) -> None:
    """Keep ``ctx.turn.completed_tasks``: a task this update completed, held by this agent, goes in; one it reopened,
    gave away or deleted comes out."""
    held = task is not None and task.status == "completed" and task.owner == ctx.identity.name
    if task_id in ctx.turn.completed_tasks and not held:
        ctx.turn.completed_tasks.remove(task_id)
    if held and status == "completed" and task_id not in ctx.turn.completed_tasks:
        ctx.turn.completed_tasks.append(task_id)


def _owner_given(args: TaskUpdateInput) -> str | None | Unset:
    """The owner as the store takes it: UNSET when not given, None to clear ('' or null)."""
    if "owner" not in args.model_fields_set:
        return UNSET
    return args.owner.strip() or None if args.owner is not None else None


def _call(work: Callable[[], R]) -> R:
    """Run ``work()``; a swarm error becomes the ToolError the model reads."""
    try:
        return work()
    except SwarmError as exc:
        raise ToolError(str(exc)) from exc
