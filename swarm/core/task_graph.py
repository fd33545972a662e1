"""The task list in memory, for one change: ``Board`` and its edge invariants.

``blocks`` / ``blockedBy`` are one relation stored on both of its tasks.
``symmetrize`` makes a freshly read list agree with itself (the union of both
sides, edges to missing tasks dropped); ``Board.link`` refuses an edge that
closes a cycle, naming it; ``Board.delete`` takes a task and every reference
to it. The store (``core.tasks``) reads a board under its lock, lets a change
work on it, and writes back only the tasks whose document changed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from swarm.core.protocol import Task
from swarm.errors import ConflictError, SwarmError


@dataclass
class Board:
    """Every task of the list, read for one change (or one lock-free look)."""

    tasks: dict[str, Task]
    on_disk: dict[str, Any]
    """Each task's document as read, to write only what the change touched."""
    top: int
    """The highest id with a file, live or quarantined."""
    missing: Callable[[str], SwarmError]
    removed: set[str] = field(default_factory=set)
    unreadable: set[str] = field(default_factory=set)
    """Ids whose file is there but did not parse (left in place by a lock-free look)."""

    def require(self, task_id: str) -> Task:
        task = self.tasks.get(task_id)
        if task is None:
            raise self.missing(task_id)
        return task

    def ordered(self) -> list[Task]:
        return [self.tasks[i] for i in sorted(self.tasks, key=int)]

    def open_blockers(self, task: Task) -> list[str]:
        return [b for b in task.blocked_by if self.tasks[b].status != "completed"]

    def link(self, blocker: str, blocked: str) -> None:
        """Record that ``blocker`` blocks ``blocked`` on both tasks; ConflictError if that closes a cycle."""
        first, second = self.require(blocker), self.require(blocked)
        path = self._path(blocked, blocker)
        if path is not None:
            cycle = " -> ".join([blocker, *path])
            raise ConflictError(f"task {blocked} cannot be blocked by {blocker}: that makes the cycle {cycle} "
                                f"(each blocks the next); drop one of those dependencies")
        add_edge(first, "blocks", blocked)
        add_edge(second, "blocked_by", blocker)

    def delete(self, task_id: str) -> None:
        """Remove the task and every reference to it."""
        self.tasks.pop(task_id)
        self.removed.add(task_id)
        for other in self.tasks.values():
            discard_edge(other, "blocks", task_id)
            discard_edge(other, "blocked_by", task_id)

    def _path(self, start: str, goal: str) -> list[str] | None:
        """Ids from ``start`` to ``goal`` following ``blocks`` edges (depth first), or None."""
        trail: dict[str, str | None] = {start: None}
        stack = [start]
        while stack:
            here = stack.pop()
            if here == goal:
                path = [here]
                while (back := trail[path[-1]]) is not None:
                    path.append(back)
                return path[::-1]
            for nxt in self.tasks[here].blocks:
                if nxt not in trail:
                    trail[nxt] = here
                    stack.append(nxt)
        return None


def symmetrize(tasks: dict[str, Task]) -> None:
    """Drop edges to missing tasks (and to self); then make every edge appear on both of its tasks."""
    for task in tasks.values():
        for side in ("blocks", "blocked_by"):
            kept = [i for i in getattr(task, side) if i in tasks and i != task.id]
            if kept != getattr(task, side):
                setattr(task, side, kept)
    for task in tasks.values():
        for other in list(task.blocks):
            add_edge(tasks[other], "blocked_by", task.id)
        for other in list(task.blocked_by):
            add_edge(tasks[other], "blocks", task.id)


def add_edge(task: Task, side: str, task_id: str) -> None:
    """Put ``task_id`` on one side of ``task`` (assigned, so it is written even if the file lacked the field)."""
    ids: list[str] = getattr(task, side)
    if task_id not in ids:
        setattr(task, side, sorted([*ids, task_id], key=int))


def discard_edge(task: Task, side: str, task_id: str) -> None:
    ids: list[str] = getattr(task, side)
    if task_id in ids:
        setattr(task, side, [i for i in ids if i != task_id])
