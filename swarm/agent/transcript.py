"""Append-only JSONL record of an agent's conversation.

Each line is one record: ``{"kind": "message", "message": {...}}`` for every
message in the conversation — with ``"usage": {...}`` (input, output, cache
read and cache write tokens) on a model's reply, ``"delivered": [keys]`` when the message
carries inbox entries, written and fsynced in that one line, so an entry is
recorded as delivered exactly when its text is in the conversation —,
``{"kind": "compaction", "messages": [...], "summarised": n, "usage": {...}}``
when the conversation was compacted (``agent.compaction``): the messages it
goes on from, the earlier lines staying as they are;
``{"kind": "delivered", "msg_ids": [...]}`` for entries consumed without
becoming text (answers the runtime handled), and ``{"kind": "event", ...}``
for anything else worth keeping (joins, stops, shutdown requests and answers).
What is recorded as delivered is what makes redelivery idempotent. A line torn
by a crash is skipped on reading.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from swarm.core.clock import now_iso
from swarm.core.jsonl import Appender, read_records
from swarm.models.messages import Message, Usage

log = logging.getLogger(__name__)


class Transcript:
    """One JSONL file, appended to and never rewritten (held open: ``core.jsonl.Appender``)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._appender = Appender(path)

    def _append(self, record: dict[str, Any], *, durable: bool = False) -> None:
        self._appender.append({"ts": now_iso(), **record}, durable=durable)

    def message(self, message: Message, *, delivered: Sequence[str] = (), durable: bool = False,
                usage: Usage | None = None, sync_later: bool = False) -> None:
        """Record a conversation message; with ``delivered`` keys the line is fsynced before returning.

        ``usage`` is a model reply's tokens (cache reads and writes included), kept on its line.
        ``sync_later`` leaves out that fsync: the caller owes a ``sync`` before anything
        relies on the line being kept (a prune of the entries, a tool call).
        """
        record: dict[str, Any] = {"kind": "message", "message": message.model_dump(mode="json")}
        if usage is not None:
            record["usage"] = usage.model_dump(mode="json")
        if delivered:
            record["delivered"] = list(delivered)
        self._append(record, durable=durable or (bool(delivered) and not sync_later))

    def sync(self) -> None:
        """fsync the file: every line written so far is on disk (StorageError if the disk refuses)."""
        self._appender.sync()

    def descriptor(self) -> int | None:
        """A copy of the file's descriptor (the caller closes it): fsyncing it is ``sync``; None when none is open."""
        return self._appender.descriptor()

    def close(self) -> None:
        """Let go of the file (the next record opens it again)."""
        self._appender.close()

    def delivered(self, msg_ids: list[str]) -> None:
        """Record inbox entries as taken into the conversation (fsynced)."""
        if msg_ids:
            self._append({"kind": "delivered", "msg_ids": msg_ids}, durable=True)

    def event(self, name: str, *, durable: bool = False, **fields: Any) -> None:
        """Record event ``name`` (fsynced if ``durable``); ``fields`` may not use the record's own keys."""
        clash = {"kind", "event", "ts"} & set(fields)
        if clash:
            raise ValueError(f"transcript event fields may not be named {sorted(clash)}")
        self._append({"kind": "event", "event": name, **fields}, durable=durable)

    def records(self) -> list[dict[str, Any]]:
        return read_records(self.path)

    def compaction(self, messages: Sequence[Message], *, summarised: int, usage: Usage) -> None:
        """Record that the conversation goes on from ``messages`` (standing for ``summarised`` earlier ones); fsynced."""
        self._append({"kind": "compaction", "messages": [m.model_dump(mode="json") for m in messages],
                      "summarised": summarised, "usage": usage.model_dump(mode="json")}, durable=True)

    def messages(self) -> list[Message]:
        """The conversation to send: from the last compaction on (every message, if none)."""
        out: list[Message] = []
        for record in self.records():
            kind = record.get("kind")
            if kind == "compaction":
                out = self._valid([*record.get("messages", [])]) if isinstance(record.get("messages"), list) else out
            elif kind == "message":
                out.extend(self._valid([record.get("message")]))
        return out

    def context_tokens(self) -> int:
        """What the last model call recorded since the last compaction carried (0 if none): see ``Conversation``."""
        tokens = 0
        for record in self.records():
            if record.get("kind") == "compaction":
                tokens = 0
            elif record.get("kind") == "message" and isinstance(record.get("usage"), dict):
                try:
                    tokens = Usage.model_validate(record["usage"]).total
                except ValidationError:
                    continue
        return tokens

    def _valid(self, raw: list[Any]) -> list[Message]:
        out = []
        for item in raw:
            try:
                out.append(Message.model_validate(item))
            except ValidationError:
                log.warning("skipped invalid transcript message", extra={"path": str(self.path)})
        return out

    def delivered_ids(self) -> set[str]:
        ids: set[str] = set()
        for record in self.records():
            if record.get("kind") == "delivered":
                ids.update(str(i) for i in record.get("msg_ids", []))
            elif record.get("kind") == "message" and isinstance(record.get("delivered"), list):
                ids.update(str(i) for i in record["delivered"])
        return ids

    def turn_end(self, reason: str) -> None:
        """Record that the agent's turn is over (the conversation waits for new input)."""
        self.event("turn_end", reason=reason)

    def turn_open(self) -> bool:
        """True if the last message recorded is the user's and no ``turn_end`` follows it: a turn was cut short."""
        last_message: dict[str, Any] | None = None
        ended = False
        for record in self.records():
            if record.get("kind") == "message":
                last_message, ended = record, False
            elif record.get("kind") == "event" and record.get("event") == "turn_end":
                ended = True
        role = (last_message or {}).get("message", {}).get("role") if last_message else None
        return role == "user" and not ended

    def events(self, name: str) -> list[dict[str, Any]]:
        """Event records called ``name``, oldest first."""
        return [r for r in self.records() if r.get("kind") == "event" and r.get("event") == name]
