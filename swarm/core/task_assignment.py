"""Giving a task to a member: checking the member exists first, and telling them with a ``task_assignment`` frame.

The task store (``core.tasks``) changes the owner and sends no mail; the caller that gave the task (the task
tools, ``swarm task``) tells the new owner through their inbox.
"""

from __future__ import annotations

from swarm.core.clock import now_iso
from swarm.core.frames import TaskAssignment
from swarm.core.mailbox import Mailbox
from swarm.core.protocol import Task
from swarm.core.teams import TeamStore
from swarm.errors import NotFoundError, UsageError


def send_assignment(mailbox: Mailbox, task: Task, by: str) -> None:
    """Tell ``task.owner`` that ``by`` gave them ``task`` (a ``task_assignment`` frame from ``by``)."""
    if task.owner is None:
        raise UsageError(f"task {task.id} has no owner to tell")
    frame = TaskAssignment(task_id=task.id, subject=task.subject, description=task.description,
                           assigned_by=by, timestamp=now_iso())
    mailbox.send_frame(task.owner, frame, sender=by, summary=f"task {task.id} assigned")


def check_assignee(mailbox: Mailbox, name: str) -> None:
    """NotFoundError unless ``name`` is a member of the mailbox's team (checked before assigning, not after)."""
    team = TeamStore(mailbox.home).get(mailbox.team)
    if team.member(name) is None:
        names = ", ".join(m.name for m in team.members)
        raise NotFoundError(f"no member {name!r} in team {mailbox.team!r} to give the task to; members: {names}")
