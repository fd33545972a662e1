"""What a team's store must provide: the seam ``TeamStore``, ``Mailbox``, ``TaskStore`` and ``PermissionLog`` use.

Those four classes are the one interface every caller uses, whatever the
team's store. For a file team they work on the files themselves, as they
always have (``LockedJsonFile``, the spool, inotify); for a team kept
elsewhere each delegates to one object per concern, of the shapes below
(today: ``swarm.core.store.postgres``). The semantics are the files'
(docs/protocol.md), checked the same way for both by ``@both_stores`` tests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from swarm.core.protocol import Activity, InboxEntry, Task, TeamFile
    from swarm.core.task_graph import Board
    from swarm.core.watch import ChangeWatcher
    from swarm.errors import SwarmError

R = TypeVar("R")


class TeamRecord(Protocol):
    """One team's file and its members' activity (``TeamStore``)."""

    def exists(self) -> bool: ...

    def read(self) -> TeamFile | None: ...

    def require(self) -> TeamFile:
        """The team file; NotFoundError when there is no such team."""
        ...

    def transform(self, step: Callable[[TeamFile | None], tuple[TeamFile | None, R]]) -> R:
        """Run ``step`` on the team file as it is under the team's lock; write what it returns (None: nothing)."""
        ...

    def update(self, change: Callable[[TeamFile | None], R]) -> R: ...

    def delete(self) -> None: ...

    def set_activity(self, name: str, activity: Activity) -> None: ...

    def activities(self) -> dict[str, Activity]: ...

    def watcher(self) -> ChangeWatcher:
        """Wakes on a change to the team or to a member's activity."""
        ...


class Inboxes(Protocol):
    """A team's inboxes (``Mailbox``): delivered exactly once, woken by events."""

    def append(self, agent: str, entries: Iterable[dict[str, Any]]) -> None:
        """Add ``entries`` (wire form, each with its ``msg_id``); one already there is not added again."""
        ...

    def pending(self, agent: str) -> list[InboxEntry]: ...

    def take(self, agent: str) -> list[InboxEntry]:
        """The undelivered entries, marked delivered at once (each returned to one caller only)."""
        ...

    def acknowledge(self, agent: str, keys: Iterable[str]) -> int: ...

    def watcher(self, agent: str) -> ChangeWatcher:
        """Wakes on a send to ``agent``, and after anything that may have missed one (read again then)."""
        ...


class TaskList(Protocol):
    """A team's task list (``TaskStore``), which runs its own checks on the ``Board`` this hands it."""

    def load(self, missing: Callable[[str], SwarmError]) -> Board: ...

    def change(self, step: Callable[[Board], R], missing: Callable[[str], SwarmError]) -> R:
        """Run ``step`` on the whole list under the list's lock and write the tasks it changed, all or nothing."""
        ...

    def claim(self, task_id: str, agent: str, edit: Callable[[Board], Task],
              missing: Callable[[str], SwarmError]) -> Task:
        """Make ``agent`` the owner: of racing claimers exactly one wins; ``edit`` says why the others lost."""
        ...


class PermissionRecord(Protocol):
    """A team's permission and plan record (``PermissionLog``)."""

    def append(self, record: dict[str, Any]) -> None: ...

    def records(self) -> list[dict[str, Any]]: ...

    def exclusive(self, body: Callable[[], R]) -> R:
        """Run ``body`` holding the team's decision lock (one decision per request)."""
        ...
