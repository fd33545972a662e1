"""Codecs between raw JSON and protocol models, for ``LockedJsonFile``.

Invalid entries are dropped one at a time and logged; only a document whose
overall shape is wrong raises ``ValueError`` (and is quarantined by the file).
"""

from __future__ import annotations

import copy
import logging
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from swarm.core.protocol import Activity, InboxEntry, Member, Task, TeamFile

log = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)


def _valid_items(model: type[M], items: list[Any], source: Path, what: str) -> list[M]:
    kept: list[M] = []
    for index, item in enumerate(items):
        try:
            kept.append(model.model_validate(item))
        except ValidationError as exc:
            log.warning(
                "dropped invalid %s", what,
                extra={"path": str(source), "index": index, "error": exc.errors()[0]["msg"]},
            )
    return kept


class InboxCodec:
    """An inbox file: a JSON array of ``InboxEntry``."""

    def empty(self) -> list[InboxEntry]:
        return []

    def decode(self, raw: Any, source: Path) -> list[InboxEntry]:
        if not isinstance(raw, list):
            raise ValueError(f"expected a JSON array, found {type(raw).__name__}")
        return _valid_items(InboxEntry, raw, source, "inbox entry")

    def encode(self, value: list[InboxEntry]) -> Any:
        return [entry.wire() for entry in value]


class InboxAppendCodec:
    """An inbox opened to append one entry: the entries already there stay exactly as they are.

    Only the new entry is built (and validated) by the sender; what others
    wrote is neither re-validated nor re-encoded — a reader's ``InboxCodec``
    judges it — so a send costs the same whatever the inbox holds, and
    Claude Code's own entries keep their bytes.
    """

    def empty(self) -> list[Any]:
        return []

    def decode(self, raw: Any, source: Path) -> list[Any]:
        if not isinstance(raw, list):
            raise ValueError(f"expected a JSON array, found {type(raw).__name__}")
        return list(raw)  # a new list: the append must differ from what was read

    def encode(self, value: list[Any]) -> Any:
        return value


class ActivityCodec:
    """A teammate's ``Activity`` file; ``None`` when there is none (or it is unusable: it is only a hint).

    Its writer rewrites it in place (``fileio.InPlaceRecord``), so a reader may
    catch a write half done: the record carries the same ``seq`` first and
    last (``slot``), and a read whose two differ raises ``ValueError``, which
    the reader takes as "read again" (``LockedJsonFile``'s re-read window).
    """

    def empty(self) -> Activity | None:
        return None

    def decode(self, raw: Any, source: Path) -> Activity | None:
        if isinstance(raw, dict) and (raw.get("seq"), raw.get("seqEnd")) != (None, None):
            first, last = raw.pop("seq", None), raw.pop("seqEnd", None)
            if first != last:
                raise ValueError(f"read while it was rewritten (seq {first!r}, seqEnd {last!r})")
        try:
            return Activity.model_validate(raw)
        except ValidationError:
            log.warning("ignored an unusable activity file", extra={"path": str(source)})
            return None

    def encode(self, value: Activity | None) -> Any:
        return None if value is None else value.wire()

    def slot(self, value: Activity, seq: int) -> dict[str, Any]:
        """``value`` as its file holds it: ``seq`` (new with every write) before and after the fields."""
        return {"seq": seq, **value.wire(), "seqEnd": seq}


class TeamCodec:
    """A team ``config.json``; ``None`` when the team does not exist."""

    def empty(self) -> TeamFile | None:
        return None

    def decode(self, raw: Any, source: Path) -> TeamFile | None:
        if not isinstance(raw, dict):
            raise ValueError(f"expected a JSON object, found {type(raw).__name__}")
        members = raw.get("members", [])
        if not isinstance(members, list):
            raise ValueError("'members' is not an array")
        head = {k: v for k, v in raw.items() if k != "members"}
        try:
            team = TeamFile.model_validate(head)
        except ValidationError as exc:
            raise ValueError(f"team file invalid: {exc.errors()[0]['loc']} {exc.errors()[0]['msg']}") from exc
        team.members = _valid_items(Member, members, source, "team member")
        return team

    def encode(self, value: TeamFile | None) -> Any:
        if value is None:
            return None
        doc = value.wire()
        doc["members"] = [m.wire() for m in value.members]
        return doc


class ObjectCodec:
    """Any JSON object kept as a plain dict (another program's file, e.g. Claude Code's ``.claude.json``)."""

    def empty(self) -> dict[str, Any]:
        return {}

    def decode(self, raw: Any, source: Path) -> dict[str, Any]:
        if not isinstance(raw, dict):
            raise ValueError(f"expected a JSON object, found {type(raw).__name__}")
        return copy.deepcopy(raw)  # a change made in place must differ from what was read, or it is not written

    def encode(self, value: dict[str, Any]) -> Any:
        return value


class TaskCodec:
    """One task file (``tasks/<team>/<id>.json``, ``core.tasks``); ``None`` when it does not exist."""

    def empty(self) -> Task | None:
        return None

    def decode(self, raw: Any, source: Path) -> Task | None:
        if not isinstance(raw, dict):
            raise ValueError(f"expected a JSON object, found {type(raw).__name__}")  # noqa: TRY004 (the Codec contract)
        try:
            task = Task.model_validate(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            raise ValueError(f"task invalid: {first['loc']} {first['msg']}") from exc
        if task.id != source.name.removesuffix(".json"):
            raise ValueError(f"task id {task.id!r} does not match the file name {source.name}")
        return task

    def encode(self, value: Task | None) -> Any:
        if value is None:
            return None
        doc = value.wire()
        for key in ("owner", "activeForm"):  # absent rather than null: Claude Code reads them as optional strings
            if doc.get(key, "") is None:
                del doc[key]
        return doc


class WatermarkCodec:
    """``.highwatermark``: the highest id ever handed out (a bare JSON integer)."""

    def empty(self) -> int:
        return 0

    def decode(self, raw: Any, source: Path) -> int:
        if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
            raise ValueError(f"expected a non-negative integer, found {raw!r}")
        return raw

    def encode(self, value: int) -> Any:
        return value
