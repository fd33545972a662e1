"""A running agent's live events, and the append-only file a teammate keeps them in (``<team>/events/<name>.jsonl``).

One ``LiveEvent`` per thing a person watching the agent would want to see:
the model's text as it streams (``text_delta``) and when its message is
complete (``text``, ``final`` for the turn's answer), its thinking, a tool
call starting (``tool_start``, with a one-line target) and its outcome
(``tool_end``), a message arriving (``message``, from whom), a permission or
plan request it waits on (``request``, and who will answer) and the answer
(``answered``), busy/idle with tokens and cost (``state``), the task it works
on (``task``), the end of a turn (``turn_end``), a compaction, a line the
person typed to it (``you``), notes and warnings. The shape is pinned in
docs/protocol.md ("Live events").

``EventLog`` appends each event as one line (one ``O_APPEND`` write on a
descriptor it keeps open, ``core.jsonl.Appender``: writers never interleave
inside a line; not fsynced: this is a view, not a record the teammate
recovers from). When the file passes ``max_bytes`` it is renamed to
``<name>.1.jsonl`` (replacing the one before) and a fresh file starts, so a
long-lived teammate keeps at most about twice ``max_bytes``. ``EventReader``
reads what was appended since it last looked, across such a rotation.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from swarm.core.clock import now_iso
from swarm.core.jsonl import Appender
from swarm.core.fileio import check_regular
from swarm.errors import StorageError

log = logging.getLogger(__name__)

EventType = Literal["text_delta", "text", "thinking", "tool_start", "tool_end", "message", "request", "answered",
                    "state", "task", "turn_end", "compaction", "you", "note", "warning"]

MAX_BYTES = 2 * 1024 * 1024
"""Size at which an events file is rotated (the previous one kept as ``.1``)."""


class LiveEvent(BaseModel):
    """One event; only the fields its ``type`` uses are set (see the module's docstring)."""

    model_config = ConfigDict(extra="ignore")

    ts: str = ""
    type: EventType
    text: str | None = None
    final: bool | None = None
    number: int | None = None
    """A tool call's number in this agent's life (``[n]``)."""
    tool: str | None = None
    target: str | None = None
    timeout_s: float | None = None
    """A ``tool_start``'s own time limit, when the tool has one (Bash: its ``timeout``)."""
    outcome: str | None = None
    is_error: bool | None = None
    sender: str | None = None
    request_id: str | None = None
    kind: str | None = None
    """A request's kind (``permission``, ``plan``); an answer's outcome (``approved``, ``denied``, ``timeout``)."""
    answerer: str | None = None
    state: str | None = None
    task_id: str | None = None
    tokens: int | None = None
    cost_usd: float | None = None
    summarised: int | None = None
    stop_reason: str | None = None

    def wire(self) -> dict[str, Any]:
        """The event as its line holds it: the fields set (every one is a JSON scalar: no serializer needed)."""
        return {key: value for key, value in self.__dict__.items() if value is not None}

    def stamped(self) -> LiveEvent:
        """This event with ``ts`` set to now if it had none (the same object: events are made to be emitted once)."""
        if not self.ts:
            self.ts = now_iso()
        return self


class EventLog:
    """The events file of one agent (its only writer is that agent's process)."""

    def __init__(self, path: Path, max_bytes: int = MAX_BYTES) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self._appender = Appender(path, max_bytes=max_bytes, rotated=rotated(path))

    def emit(self, event: LiveEvent) -> LiveEvent:
        """Append ``event`` (stamped now); a file past ``max_bytes`` is rotated first. A write the disk refuses is
        logged, not raised: watching must never stop the agent."""
        event = event.stamped()
        try:
            self._appender.append(event.wire(), durable=False)
        except StorageError as exc:
            log.warning("live event not written", extra={"path": str(self.path), "reason": str(exc)})
        return event

    def close(self) -> None:
        self._appender.close()


def rotated(path: Path) -> Path:
    """Where the previous events file is kept after a rotation."""
    return path.with_name(path.name.removesuffix(".jsonl") + ".1.jsonl")


class EventReader:
    """Reads the events appended to one file since the last ``read``, following it across rotations."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self._inode: int | None = None
        self._rest = b""

    def history(self) -> list[LiveEvent]:
        """Everything still kept (the rotated file, then the current one), and start following from its end."""
        older = _parse_all(rotated(self.path))
        return older + self.read()

    def read(self) -> list[LiveEvent]:
        """The whole lines appended since the last call (a half-written last line waits for its end)."""
        events: list[LiveEvent] = []
        current = _inode(self.path)
        if self._fd is not None and current != self._inode:  # rotated (or removed): finish the old file first
            events += self._drain()
            os.close(self._fd)
            self._fd, self._rest = None, b""
        if self._fd is None and current is not None:
            try:
                fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
                check_regular(os.fstat(fd).st_mode, self.path)
            except OSError as exc:
                raise StorageError(f"cannot read events file {self.path}: {exc}") from exc
            self._fd, self._inode = fd, current
        if self._fd is not None:
            events += self._drain()
        return events

    def _drain(self) -> list[LiveEvent]:
        assert self._fd is not None
        chunks = [self._rest]
        while chunk := os.read(self._fd, 1 << 16):
            chunks.append(chunk)
        data = b"".join(chunks)
        complete, _, self._rest = data.rpartition(b"\n")
        return _parse(complete)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _inode(path: Path) -> int | None:
    try:
        return os.stat(path, follow_symlinks=False).st_ino
    except FileNotFoundError:
        return None


def _parse_all(path: Path) -> list[LiveEvent]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise StorageError(f"cannot read events file {path}: {exc}") from exc
    try:
        check_regular(os.fstat(fd).st_mode, path)
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
    finally:
        os.close(fd)
    complete, _, _ = b"".join(chunks).rpartition(b"\n")
    return _parse(complete)


def _parse(data: bytes) -> list[LiveEvent]:
    events = []
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        try:
            events.append(LiveEvent.model_validate(json.loads(line)))
        except (ValueError, ValidationError, RecursionError):
            continue  # torn by a crash or not an event: the view skips it
    return events
