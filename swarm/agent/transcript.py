"""Append-only JSONL record of an agent's conversation.

Each line is one record: ``{"kind": "message", "message": {...}}`` for every
message in the conversation, ``{"kind": "delivered", "msg_id": ...}`` for an
inbox entry taken into it (what makes redelivery idempotent), and
``{"kind": "event", ...}`` for anything else worth keeping (stops, usage).
A line torn by a crash is skipped on reading.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from swarm.core.clock import now_iso
from swarm.core.jsonl import append_record, read_records
from swarm.models.messages import Message

log = logging.getLogger(__name__)


class Transcript:
    """One JSONL file, appended to and never rewritten."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _append(self, record: dict[str, Any], *, durable: bool = False) -> None:
        append_record(self.path, {"ts": now_iso(), **record}, durable=durable)

    def message(self, message: Message) -> None:
        self._append({"kind": "message", "message": message.model_dump(mode="json")})

    def delivered(self, msg_ids: list[str]) -> None:
        """Record inbox entries as taken into the conversation (fsynced)."""
        if msg_ids:
            self._append({"kind": "delivered", "msg_ids": msg_ids}, durable=True)

    def event(self, name: str, **fields: Any) -> None:
        self._append({"kind": "event", "event": name, **fields})

    def records(self) -> list[dict[str, Any]]:
        return read_records(self.path)

    def messages(self) -> list[Message]:
        out = []
        for record in self.records():
            if record.get("kind") == "message":
                try:
                    out.append(Message.model_validate(record.get("message")))
                except ValidationError:
                    log.warning("skipped invalid transcript message", extra={"path": str(self.path)})
        return out

    def delivered_ids(self) -> set[str]:
        ids: set[str] = set()
        for record in self.records():
            if record.get("kind") == "delivered":
                ids.update(str(i) for i in record.get("msg_ids", []))
        return ids
