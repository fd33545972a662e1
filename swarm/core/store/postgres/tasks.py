"""A team's task list as rows of ``swarm_tasks`` (each row the document a task file holds, with its owner and
status as columns) and the id watermark in ``swarm_task_lists``.

- A claim is one conditional ``UPDATE … WHERE version = <read> AND status <>
  'completed' AND (owner IS NULL OR owner = <agent>) AND <no open blocker>
  RETURNING``: of two claimers racing for one task exactly one gets the row;
  the other reads again and is told who holds it (the same ConflictError the
  file store gives).
- Every other change (create, update, unassign) holds the list's row lock
  (``SELECT … FOR UPDATE`` on ``swarm_task_lists``: the file store's list
  lock), reads the whole list into a ``Board``, lets ``TaskStore`` run the
  same change on it, and writes the tasks whose document changed, each only
  if its ``version`` is still the one read (a claim does not take the list
  lock); if one moved on, the transaction is rolled back and the change
  computed again.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from swarm.core.document_codecs import TaskCodec
from swarm.core.protocol import Task
from swarm.core.task_graph import Board, symmetrize
from swarm.errors import ConflictError, SwarmError

if TYPE_CHECKING:
    import psycopg

    from swarm.core.store.postgres.database import Database

R = TypeVar("R")
_TASK = TaskCodec()
MAX_ATTEMPTS = 50


class _Moved(Exception):
    """A task changed between the read and the write: compute the change again."""


class TaskRows:
    """The task list of one team in one database."""

    def __init__(self, db: Database, team: str) -> None:
        self.db = db
        self.team = team

    def _board(self, cur: psycopg.Cursor[Any], missing: Callable[[str], SwarmError], top: int) -> tuple[Board, dict[str, int]]:
        cur.execute("SELECT id, doc, version FROM swarm_tasks WHERE team = %s ORDER BY id", (self.team,))
        tasks: dict[str, Task] = {}
        on_disk: dict[str, Any] = {}
        versions: dict[str, int] = {}
        for number, doc, version in cur.fetchall():
            task = _TASK.decode(doc, Path(f"{number}.json"))
            if task is None:
                continue
            tasks[task.id] = task
            on_disk[task.id] = _TASK.encode(task)
            versions[task.id] = int(version)
            top = max(top, int(number))
        symmetrize(tasks)
        return Board(tasks=tasks, on_disk=on_disk, top=top, missing=missing), versions

    def load(self, missing: Callable[[str], SwarmError]) -> Board:
        """Every task, read in one snapshot (no lock)."""
        def read(cur: psycopg.Cursor[Any]) -> Board:
            cur.execute("SELECT top FROM swarm_task_lists WHERE team = %s", (self.team,))
            row = cur.fetchone()
            return self._board(cur, missing, int(row[0]) if row else 0)[0]

        return self.db.run(read, idempotent=True, what=f"read the tasks of team {self.team!r} from")

    def change(self, step: Callable[[Board], R], missing: Callable[[str], SwarmError]) -> R:
        """Run ``step`` on the list under the list's row lock and write what it changed (module docstring)."""
        def run(cur: psycopg.Cursor[Any]) -> R:
            cur.execute("INSERT INTO swarm_task_lists (team) VALUES (%s) ON CONFLICT DO NOTHING", (self.team,))
            cur.execute("SELECT top FROM swarm_task_lists WHERE team = %s FOR UPDATE", (self.team,))
            row = cur.fetchone()
            board, versions = self._board(cur, missing, int(row[0]) if row else 0)
            result = step(board)
            self._save(cur, board, versions)
            cur.execute("UPDATE swarm_task_lists SET top = %s WHERE team = %s", (board.top, self.team))
            return result

        for _ in range(MAX_ATTEMPTS):
            try:
                return self.db.run(run, idempotent=False, what=f"change the tasks of team {self.team!r} in")
            except _Moved:
                continue
        raise ConflictError(f"the tasks of team {self.team!r} kept changing under this change "
                            f"({MAX_ATTEMPTS} tries); try again")

    def _save(self, cur: psycopg.Cursor[Any], board: Board, versions: dict[str, int]) -> None:
        from psycopg.types.json import Jsonb

        for task_id in sorted(board.removed, key=int):
            cur.execute("DELETE FROM swarm_tasks WHERE team = %s AND id = %s AND version = %s",
                        (self.team, int(task_id), versions.get(task_id, 0)))
            if cur.rowcount != 1:
                raise _Moved
        for task_id, task in sorted(board.tasks.items(), key=lambda item: int(item[0])):
            doc = _TASK.encode(task)
            if doc == board.on_disk.get(task_id):
                continue
            if task_id in versions:
                cur.execute("UPDATE swarm_tasks SET doc = %s, owner = %s, status = %s, version = version + 1 "
                            "WHERE team = %s AND id = %s AND version = %s",
                            (Jsonb(doc), task.owner, task.status, self.team, int(task_id), versions[task_id]))
            else:
                cur.execute("INSERT INTO swarm_tasks (team, id, doc, owner, status) VALUES (%s, %s, %s, %s, %s) "
                            "ON CONFLICT DO NOTHING", (self.team, int(task_id), Jsonb(doc), task.owner, task.status))
            if cur.rowcount != 1:
                raise _Moved

    def claim(self, task_id: str, agent: str, edit: Callable[[Board], Task],
              missing: Callable[[str], SwarmError]) -> Task:
        """Make ``agent`` the owner (``edit`` checks and changes the task on a fresh board) with one conditional
        UPDATE; a claimer that lost the race reads again and gets ``edit``'s ConflictError."""
        from psycopg.types.json import Jsonb

        def run(cur: psycopg.Cursor[Any]) -> Task:
            board, versions = self._board(cur, missing, 0)
            task = edit(board)
            cur.execute(
                "UPDATE swarm_tasks AS t SET doc = %s, owner = %s, status = 'in_progress', version = version + 1 "
                "WHERE t.team = %s AND t.id = %s AND t.version = %s AND t.status <> 'completed' "
                "AND (t.owner IS NULL OR t.owner = %s) "
                "AND NOT EXISTS (SELECT 1 FROM swarm_tasks AS b WHERE b.team = t.team AND b.status <> 'completed' "
                "AND b.id::text IN (SELECT jsonb_array_elements_text(t.doc -> 'blockedBy'))) "
                "RETURNING t.doc",
                (Jsonb(_TASK.encode(task)), agent, self.team, int(task_id), versions.get(task_id, 0), agent))
            row = cur.fetchone()
            if row is None:
                raise _Moved
            claimed = _TASK.decode(row[0], Path(f"{task_id}.json"))
            assert claimed is not None
            return claimed

        for _ in range(MAX_ATTEMPTS):
            try:
                # run again after a lost connection: a claim that did commit reads back as this agent's
                return self.db.run(run, idempotent=True, what=f"claim task {task_id} of team {self.team!r} in")
            except _Moved:
                continue
        raise ConflictError(f"task {task_id} of team {self.team!r} kept changing under this claim; try again")
