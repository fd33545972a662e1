"""A team's shared task list: ``<home>/tasks/<team>/<id>.json`` (docs/protocol.md, "Tasks").

- Ids are consecutive integers as strings, handed out from ``.highwatermark``
  and never reused: the next id is one past the highest of the watermark and
  every id with a file (live or quarantined), so a watermark lost in a crash
  cannot bring an id back.
- Every change holds the lock Claude Code takes on the whole list (of
  ``<list>/.lock``, docs/protocol.md), so invariants across tasks — edges kept
  symmetric, no cycles, a claim seeing its blockers completed — are checked
  and written in one cycle. It is computed in memory first and written only
  when every check passed: a refused change writes nothing. Claude Code
  changes one task under only that task's lock (``<id>.json.lock``), so the
  write holds the lock of each task it changes and re-reads it there; if one
  changed meanwhile, the change is computed again from a fresh read.
- ``blocks`` / ``blockedBy`` (kept by ``core.task_graph``) are read as the union of both sides, dropping ids
  with no task: a crash between the two files of one edge, or of a delete and
  the references to it, reads as the finished change, and the next change
  writes the repair.
- A task file that does not parse is left in place by readers and moved
  aside to ``<id>.json.corrupt-<ms>`` by the next change (``LockedJsonFile``);
  ``get`` of it is a one-line ``CorruptFileError`` either way and
  ``problems`` lists one line per such task (``LockedJsonFile``'s own
  warning for a task file it read as empty is dropped: that line says it).

- **(swarm)** Any member may change any task, as in Claude Code (clear,
  complete, delete or reassign another member's); every change to a task's
  status, owner, subject, description or form is appended to its ``history``
  (``TaskEdit``: by, at, field, from, to) in the same write. ``by`` is the
  member the change is made as: the agent for the task tools, ``team-lead``
  for ``swarm task`` (with ``author``: ``person`` at a shell, or ``model``
  when an agent's Bash ran it), ``swarm`` when the runtime releases a gone
  member's tasks. A deleted task's file is gone, history and all.

The store sends no mail: a caller that sets a task's owner to someone else
sends the ``task_assignment`` frame (``core.task_assignment.send_assignment``).
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Callable, Iterable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Final, Literal, TypeVar, cast, get_args

from swarm.core.clock import now_iso
from swarm.core.document_codecs import TaskCodec, WatermarkCodec
from swarm.core.fileio import storage_error
from swarm.core.home import Home, ensure_dir
from swarm.core.jsonfile import LockedJsonFile, lock_of
from swarm.core.names import RUNTIME_NAME, validate_name
from swarm.core.protocol import Author, Task, TaskEdit
from swarm.core.store import task_rows
from swarm.core.task_graph import Board, symmetrize
from swarm.errors import (
    ConflictError,
    CorruptFileError,
    NotFoundError,
    SwarmError,
    UsageError,
)

R = TypeVar("R")

TaskStatus = Literal["pending", "in_progress", "completed"]
UpdateStatus = Literal["pending", "in_progress", "completed", "deleted"]
STATUSES: tuple[str, ...] = get_args(UpdateStatus)
WATERMARK = ".highwatermark"
LIST_LOCK = ".lock"
"""The file Claude Code locks the whole task list through (its lock directory is ``.lock.lock``). swarm
takes turns with Claude Code on it from the start (``core.lock_turns``): a Claude Code create retries
for about 2.6 s, and swarm changes, each reading the whole list, may hold it back to back that long."""
MAX_ATTEMPTS = 50
"""Times a change is computed again because Claude Code changed one of its tasks meanwhile."""
_TASK_FILE = re.compile(r"(\d+)\.json")
_QUARANTINED = re.compile(r"(\d+)\.json\.corrupt-[\d-]+")


class Unset(Enum):
    """The type of ``UNSET``: "not given", as opposed to ``None`` ("clear it")."""

    UNSET = "UNSET"

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Final = Unset.UNSET


@dataclass
class TaskChange:
    """What ``TaskStore.update`` did."""

    task: Task | None
    """The task after the change; None when it was deleted."""
    assigned_to: str | None
    """The new owner, when the change gave the task to someone other than the one who made it."""


_CODEC = TaskCodec()
SESSION_LIST_PREFIX = "session-"
"""What a session's own task list is named by (``<home>/tasks/session-<id>``): a solo agent's, in no team."""


class TaskStore:
    """The task list of one team (or of one solo session: ``of_session``)."""

    def __init__(self, home: Home, team: str) -> None:
        self.home = home
        self.team = validate_name(team, "team name")
        self.dir = home.tasks_dir(team)
        self._watermark = LockedJsonFile(self.dir / WATERMARK, WatermarkCodec())
        self._rows = task_rows(home, team)
        """The list's rows when the team keeps it in a database (``swarm.core.store``); None: files."""

    @classmethod
    def of_session(cls, home: Home, session_id: str) -> TaskStore:
        """The task list of one main agent's session while it is in no team (``swarm run``): kept apart from
        every team's, it stays when the agent later creates a team, whose own list is used from then on."""
        return cls(home, validate_name(SESSION_LIST_PREFIX + session_id, "session task list"))

    # -- reading (no lock) ------------------------------------------------

    def get(self, task_id: str) -> Task:
        """Task ``task_id``; NotFoundError (CorruptFileError if its file was quarantined) when there is none."""
        wanted = parse_task_id(task_id)
        return self._load().require(wanted)

    def list(self) -> list[Task]:
        """Every task, by numeric id."""
        return self._load().ordered()

    def claimable(self) -> builtins.list[Task]:
        """Tasks that are pending, unowned, and whose blockers are all completed, by id."""
        board = self._load()
        return [t for t in board.ordered()
                if t.status == "pending" and t.owner is None and not board.open_blockers(t)]

    def problems(self) -> builtins.list[str]:
        """One line per task whose file did not parse and was moved aside (and not put back)."""
        if not self.dir.is_dir() or self._rows is not None:
            return []
        lines = []
        for path in sorted(self.dir.iterdir()):
            found = _QUARANTINED.fullmatch(path.name)
            if found and not (self.dir / f"{found[1]}.json").exists():
                lines.append(str(self._missing(found[1])))
        return lines + [str(self._missing(task_id)) for task_id in sorted(self._load().unreadable, key=int)]

    # -- changing (under the list lock) -----------------------------------

    def create(self, subject: str, description: str = "", *, active_form: str | None = None,
               metadata: dict[str, Any] | None = None, owner: str | None = None,
               blocked_by: Sequence[str] = ()) -> Task:
        """Add a pending task with the next id; ``blocked_by`` ids must exist."""
        subject = _subject(subject)
        owner = _owner(owner)
        blockers = _ids(blocked_by)

        def add(board: Board) -> Task:
            for blocker in blockers:
                board.require(blocker)
            board.top += 1
            task = Task(id=str(board.top), subject=subject, description=description, status="pending",
                        blocks=[], blocked_by=[], metadata=dict(metadata or {}))
            if active_form:
                task.active_form = active_form
            if owner is not None:
                task.owner = owner
            board.tasks[task.id] = task
            for blocker in blockers:
                board.link(blocker, task.id)
            return task

        return self._change(add)

    def update(self, task_id: str, *, by: str, subject: str | Unset = UNSET, description: str | Unset = UNSET,
               active_form: str | None | Unset = UNSET, status: str | Unset = UNSET,
               owner: str | None | Unset = UNSET, metadata: dict[str, Any] | None | Unset = UNSET,
               add_blocks: Sequence[str] = (), add_blocked_by: Sequence[str] = (),
               author: Author | None = None) -> TaskChange:
        """Change the fields given (``UNSET``: leave; ``owner=None``: clear) as member ``by``, all or nothing.

        ``status="deleted"`` deletes the task and every reference to it.
        ``metadata`` is merged key by key; a key set to None is removed.
        Dependencies only grow (``add_blocks``, ``add_blocked_by``); one that
        would close a cycle is a ConflictError naming it, and so is completing
        a task that is already completed. Setting ``owner`` to ``by`` itself
        takes the task and is checked like a claim (see ``claim``); so is
        ``in_progress`` for ``by`` on a task it already holds. Each change goes
        into the task's ``history`` as ``by``'s, marked with ``author`` (a command's).
        """
        wanted = parse_task_id(task_id)
        fields = _Fields(subject=subject if isinstance(subject, Unset) else _subject(subject),
                         description=description, active_form=active_form, status=_status(status),
                         owner=owner if isinstance(owner, Unset) else _owner(owner), metadata=metadata,
                         add_blocks=_ids(add_blocks), add_blocked_by=_ids(add_blocked_by), author=author)
        return self._change(lambda board: fields.apply(board, wanted, by))

    def claim(self, task_id: str, agent: str) -> Task:
        """Make ``agent`` the owner and the task ``in_progress``, in one locked cycle.

        Only a task that is not completed, held by nobody else (an owner of
        ``agent`` itself is fine: the lead assigned it) and whose blockers are
        all completed; otherwise a ConflictError that says who holds it or
        which blockers are open.
        """
        wanted = parse_task_id(task_id)
        fields = _Fields(owner=validate_name(agent, "agent name"), status="in_progress")
        if self._rows is not None:
            return self._rows.claim(wanted, agent, lambda board: fields.edit(board, board.require(wanted), agent),
                                    self._missing)
        return self._change(lambda board: fields.edit(board, board.require(wanted), agent))

    def unassign(self, agent: str) -> builtins.list[Task]:
        """Put ``agent``'s unfinished tasks back to pending with no owner; return them."""
        if not self.dir.is_dir() and self._rows is None:
            return []

        def release(board: Board) -> builtins.list[Task]:
            held = [t for t in board.ordered() if t.owner == agent and t.status != "completed"]
            for task in held:
                _record(task, RUNTIME_NAME, None, status="pending", owner=None)
                task.owner = None
                task.status = "pending"
            return held

        return self._change(release)

    def give_back(self, agent: str) -> builtins.list[Task]:
        """Undo ``unassign`` for ``agent`` started again: each task the runtime last released from it, that
        nobody took since, is its own again in the status it had; returns them."""
        def restore(board: Board) -> builtins.list[Task]:
            back = [t for t in board.ordered() if t.owner is None and t.status == "pending" and any(
                e.by == RUNTIME_NAME and e.field == "owner" and e.old == agent for e in t.history[-2:])]
            for task in back:
                status = next((e.old for e in task.history[-2:] if e.by == RUNTIME_NAME and e.field == "status"),
                              "pending")
                _record(task, RUNTIME_NAME, None, status=status, owner=agent)
                task.owner, task.status = agent, status
            return back

        return self._change(restore)

    # -- the machinery -----------------------------------------------------

    def _file(self, task_id: str) -> LockedJsonFile[Task | None]:
        return LockedJsonFile(self.dir / f"{task_id}.json", _CODEC, indent=2)

    def _load(self, *, quarantine: bool = False) -> Board:
        """Read every task file (a change quarantines bad ones) and read the edges as the union of both sides."""
        if self._rows is not None:
            return self._rows.load(self._missing)
        tasks: dict[str, Task] = {}
        on_disk: dict[str, Any] = {}
        unreadable: set[str] = set()
        top = 0
        names = sorted(p.name for p in self.dir.iterdir()) if self.dir.is_dir() else []
        for name in names:
            found = _TASK_FILE.fullmatch(name) or _QUARANTINED.fullmatch(name)
            if found is None:
                continue
            top = max(top, int(found[1]))
            if not name.endswith(".json"):
                continue
            # an unparsable task is reported by the store in one line that names the fix (``unreadable``)
            if (task := self._file(found[1]).read(quarantine=quarantine, quiet=True)) is not None:
                tasks[task.id] = task
                on_disk[task.id] = _CODEC.encode(task)
            elif (self.dir / name).exists():
                unreadable.add(found[1])
        symmetrize(tasks)
        return Board(tasks=tasks, on_disk=on_disk, top=top, missing=self._missing, unreadable=unreadable)

    def _change(self, step: Callable[[Board], R]) -> R:
        """Run ``step`` on the whole list under the list lock, then write what it changed (see the docstring)."""
        if self._rows is not None:
            return self._rows.change(step, self._missing)

        def run(mark: int) -> tuple[int, R]:
            for _ in range(MAX_ATTEMPTS):
                board = self._load(quarantine=True)
                board.top = max(board.top, mark)
                result = step(board)
                if self._save(board):
                    return board.top, result
            raise ConflictError(f"the tasks of team {self.team!r} kept changing under this change "
                                f"({MAX_ATTEMPTS} tries); try again")

        try:
            ensure_dir(self.dir)
        except OSError as exc:
            raise storage_error(exc, self.dir, "create the directory") from exc
        with lock_of(self.dir / LIST_LOCK, shared=True):  # a task list is Claude Code's format: take turns
            return self._watermark.transform(run)

    def _save(self, board: Board) -> bool:
        """Write what ``board`` changed, each task re-read under its own lock; False (nothing written) if one moved on."""
        changed = sorted({*board.removed, *(task_id for task_id, task in board.tasks.items()
                                             if _CODEC.encode(task) != board.on_disk.get(task_id))}, key=int)
        with ExitStack() as stack:
            held = {task_id: stack.enter_context(self._file(task_id).hold()) for task_id in changed}
            if any(_CODEC.encode(now.value) != board.on_disk.get(task_id) for task_id, now in held.items()):
                return False
            for task_id in sorted(board.removed, key=int):
                held[task_id].remove()
            for task_id in changed:
                if task_id not in board.removed:
                    held[task_id].put(board.tasks[task_id])
        return True

    def _missing(self, task_id: str) -> SwarmError:
        if self._rows is not None:
            return NotFoundError(f"no task {task_id} in team {self.team!r}; `swarm tasks --team {self.team}` lists them")
        moved = sorted(self.dir.glob(f"{task_id}.json.corrupt-*")) if self.dir.is_dir() else []
        if moved:
            return CorruptFileError(f"task {task_id} of team {self.team!r} did not parse and was moved to {moved[-1]}; "
                                    f"repair it and move it back to {task_id}.json, or delete it")
        if (self.dir / f"{task_id}.json").exists():
            return CorruptFileError(f"task {task_id} of team {self.team!r} did not parse and was left in place "
                                    f"(the next change to the list moves it aside); repair or delete "
                                    f"{self.dir / f'{task_id}.json'}")
        return NotFoundError(f"no task {task_id} in team {self.team!r}; `swarm tasks --team {self.team}` lists them")


@dataclass
class _Fields:
    """The checked inputs of one ``update``."""

    subject: str | Unset = UNSET
    description: str | Unset = UNSET
    active_form: str | None | Unset = UNSET
    status: UpdateStatus | Unset = UNSET
    owner: str | None | Unset = UNSET
    metadata: dict[str, Any] | None | Unset = UNSET
    add_blocks: list[str] = field(default_factory=list)
    add_blocked_by: list[str] = field(default_factory=list)
    author: Author | None = None

    def apply(self, board: Board, task_id: str, by: str) -> TaskChange:
        task = board.require(task_id)
        if self.status == "deleted":
            board.delete(task_id)
            return TaskChange(task=None, assigned_to=None)
        before = task.owner
        self.edit(board, task, by)
        changed_owner = not isinstance(self.owner, Unset) and task.owner != before
        assigned = task.owner if changed_owner and task.owner not in (None, by) else None
        return TaskChange(task=task, assigned_to=assigned)

    def edit(self, board: Board, task: Task, by: str) -> Task:
        """Check, then change ``task`` on the board (nothing is written when a check fails)."""
        if self._takes(task, by):
            _check_claim(board, task, by)
        for other in self.add_blocks:
            board.link(task.id, other)
        for other in self.add_blocked_by:
            board.link(other, task.id)
        if self.status == "completed" and task.status == "completed":
            raise ConflictError(f"task {task.id} is already completed")
        self._set_fields(task, by)
        return task

    def _takes(self, task: Task, by: str) -> bool:
        """``by`` makes itself the owner, or claims (``in_progress``) a task it holds: a claim's checks apply."""
        return self.owner == by and (task.owner != by or self.status == "in_progress")

    def _set_fields(self, task: Task, by: str) -> None:
        _record(task, by, self.author, **{name: getattr(self, name) for name in _TRACKED
                                           if not isinstance(getattr(self, name), Unset)})
        if not isinstance(self.subject, Unset):
            task.subject = self.subject
        if not isinstance(self.description, Unset):
            task.description = self.description
        if not isinstance(self.active_form, Unset):
            task.active_form = self.active_form or None
        if not isinstance(self.status, Unset) and self.status != "deleted":
            task.status = self.status
        if not isinstance(self.owner, Unset):
            task.owner = self.owner
        if not isinstance(self.metadata, Unset) and self.metadata:
            merged = {**task.metadata, **self.metadata}
            task.metadata = {k: v for k, v in merged.items() if v is not None}


_TRACKED = ("status", "owner", "subject", "description", "active_form")
"""The fields a task's ``history`` follows (not its dependencies, which only grow, nor its metadata)."""


def _record(task: Task, by: str, author: Author | None, **changes: Any) -> None:
    """Add to ``task.history`` one entry for each of ``changes`` (field -> new value) that changes its value."""
    at = now_iso()
    marked = {"author": author} if author is not None else {}
    edits = [TaskEdit(by=by, at=at, field=name, old=getattr(task, name), new=value, **marked)
             for name, value in changes.items() if getattr(task, name) != value]
    if edits:
        task.history = [*task.history, *edits]  # assigned, not appended: a field set is written


def _check_claim(board: Board, task: Task, agent: str) -> None:
    """A ConflictError unless ``agent`` may hold ``task``: not completed, nobody else's, no open blockers."""
    if task.status == "completed":
        raise ConflictError(f"task {task.id} is already completed")
    if task.owner not in (None, agent):
        raise ConflictError(f"task {task.id} is already claimed by {task.owner}")
    if blockers := board.open_blockers(task):
        raise ConflictError(f"task {task.id} is blocked by {', '.join(blockers)} (not completed)")


def task_document(task: Task) -> dict[str, Any]:
    """``task`` as its file holds it (camelCase; a cleared owner is absent, not null)."""
    doc: dict[str, Any] = _CODEC.encode(task)
    return doc


def parse_task_id(raw: str) -> str:
    """A task id as stored (``"3"``), from ``"3"`` or ``"#3"``; UsageError for anything else."""
    text = str(raw).strip().removeprefix("#")
    if not text.isascii() or not text.isdigit():
        raise UsageError(f"task id {raw!r} is not a task number; ids are 1, 2, 3, ...")
    return str(int(text))


def _ids(raw: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(parse_task_id(r) for r in raw))


def _subject(raw: str) -> str:
    text = raw.strip()
    if not text:
        raise UsageError("a task needs a subject (a short imperative, e.g. 'write the parser')")
    return text


def _owner(raw: str | None) -> str | None:
    return None if raw is None else validate_name(raw, "owner name")


def _status(raw: str | Unset) -> UpdateStatus | Unset:
    if isinstance(raw, Unset):
        return raw
    if raw in STATUSES:
        return cast(UpdateStatus, raw)
    raise UsageError(f"status {raw!r} is not one of {', '.join(STATUSES)}")
