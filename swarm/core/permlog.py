"""The team's permission and plan-approval record (``teams/<team>/permissions.jsonl``).

Every request a teammate sends to the lead is recorded here, and so is every
decision, with who or what decided (``lead``, ``policy:<rule>``, ``timeout``).
Pending = requested, not yet decided. ``decide`` holds a lock so a request is
answered exactly once; a second answer gets ConflictError naming the first.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from swarm.core.clock import now_ms
from swarm.core.fileio import storage_error
from swarm.core.flock import LockTimeout, locked
from swarm.core.home import Home, ensure_dir
from swarm.core.jsonl import append_record, read_records
from swarm.core.store import permission_rows
from swarm.errors import ConflictError, LockTimeoutError, NotFoundError

log = logging.getLogger(__name__)

LOCK_TIMEOUT = 10.0


class PermissionEvent(BaseModel):
    event: Literal["request", "decision"]
    request_id: str
    ts: int
    kind: Literal["permission", "plan"] = "permission"
    agent: str = ""
    tool: str | None = None
    input: dict[str, Any] | None = None
    cwd: str | None = None
    """The absolute directory the call runs in, as the requesting teammate recorded it (its input's file path is
    absolute too); None for a Claude Code teammate's request, which says only its input."""
    description: str | None = None
    suggestions: list[str] = []
    permission_suggestions: list[Any] = []
    """A Claude Code teammate's own suggestion objects (e.g. ``addDirectories``), kept as it sent them."""
    plan: str | None = None
    decision: Literal["allow", "deny"] | None = None
    by: str | None = None
    reason: str | None = None
    rule_added: str | None = None


class PermissionLog:
    def __init__(self, home: Home, team: str) -> None:
        self.path = home.team_dir(team) / "permissions.jsonl"
        self._lock_path = self.path.with_name(f"{self.path.name}.lock")
        self._rows = permission_rows(home, team)
        """The record's rows when the team keeps it in a database (``swarm.core.store``); None: the file."""

    def record_request(self, event: PermissionEvent) -> None:
        self._append(event)

    def events(self) -> list[PermissionEvent]:
        out = []
        for record in read_records(self.path) if self._rows is None else self._rows.records():
            try:
                out.append(PermissionEvent.model_validate(record))
            except ValidationError:
                log.warning("skipped bad permission record", extra={"path": str(self.path)})
        return out

    def request(self, request_id: str) -> PermissionEvent:
        found = next((e for e in self.events() if e.event == "request" and e.request_id == request_id), None)
        if found is None:
            raise NotFoundError(f"no permission or plan request {request_id!r}; `swarm permissions` lists pending ones")
        return found

    def decision(self, request_id: str) -> PermissionEvent | None:
        return next((e for e in self.events() if e.event == "decision" and e.request_id == request_id), None)

    def pending(self) -> list[PermissionEvent]:
        events = self.events()
        decided = {e.request_id for e in events if e.event == "decision"}
        return [e for e in events if e.event == "request" and e.request_id not in decided]

    def decide(self, request: PermissionEvent, decision: Literal["allow", "deny"], by: str, *,
               reason: str | None = None, rule_added: str | None = None,
               deliver: Callable[[], None] | None = None) -> PermissionEvent:
        """Record the one decision for ``request``; ``deliver`` (send the response) runs under the lock first."""
        def decide_now() -> PermissionEvent:
            earlier = self.decision(request.request_id)
            if earlier is not None:
                raise ConflictError(f"request {request.request_id} was already answered "
                                    f"({earlier.decision} by {earlier.by})")
            if deliver is not None:
                deliver()
            event = PermissionEvent(event="decision", request_id=request.request_id, ts=now_ms(),
                                    kind=request.kind, agent=request.agent, tool=request.tool,
                                    decision=decision, by=by, reason=reason, rule_added=rule_added)
            self._append(event)
            return event

        if self._rows is not None:
            return self._rows.exclusive(decide_now)
        try:
            ensure_dir(self.path.parent)
            with locked(self._lock_path, LOCK_TIMEOUT):
                return decide_now()
        except LockTimeout as exc:
            raise LockTimeoutError(f"could not lock {self.path} within {LOCK_TIMEOUT:g}s") from exc
        except OSError as exc:  # the lock file or the directory cannot be used
            raise storage_error(exc, self._lock_path, "lock") from exc

    def _append(self, event: PermissionEvent) -> None:
        if self._rows is not None:
            self._rows.append(event.model_dump(mode="json", exclude_none=True))
            return
        append_record(self.path, event.model_dump(mode="json", exclude_none=True), durable=True)
