"""What a running agent's conversation means to a person watching: messages in, ``LiveEvent``s out.

The one owner of how an agent's work is told, for every live view (the
interactive session's ``View``, a teammate's pane and events file, ``swarm
logs -f``): a model message becomes its thinking (one collapsed line each),
its text (intermediate, or the turn's ``final`` answer) and one
``tool_start`` per call, numbered in the agent's life, with a one-line target
(the real command or path, ``permissions.describe``); a tool result becomes
that call's ``tool_end`` with a one-line outcome. The whole input and result
of each call are kept (``records``) for a view that shows details on demand.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from swarm.agent.live_events import LiveEvent
from swarm.agent.permissions.describe import MODEL_NOTE, describe
from swarm.agent.tools.shell import declared_timeout_s
from swarm.core.text import flat
from swarm.models.messages import (
    Message,
    RedactedThinkingBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)

TARGET_WIDTH = 70
OUTCOME_WIDTH = 50
THINKING_WIDTH = 86
"""Characters of a thinking block shown on its one collapsed line."""
DELTA_CHARS = 80
"""Streamed text is passed on at a newline or once this many characters are waiting (not per token)."""


@dataclass
class ToolRecord:
    number: int
    tool: str
    target: str
    input: dict[str, object]
    result: str = ""
    is_error: bool = False
    done: bool = False


class Narrator:
    """Turns one agent's messages (and its streamed text) into events for ``emit``; safe from any thread."""

    def __init__(self, cwd: Path, emit: Callable[[LiveEvent], object]) -> None:
        self.cwd = cwd
        self.emit = emit
        self._lock = threading.Lock()
        self._tools: list[ToolRecord] = []
        self._pending: dict[str, ToolRecord] = {}
        self._waiting = ""

    def stream(self, piece: str) -> None:
        """A piece of the text being produced: passed on as ``text_delta`` in line-sized pieces."""
        with self._lock:
            self._waiting += piece
            if "\n" not in piece and len(self._waiting) < DELTA_CHARS:
                return
            ready, self._waiting = self._waiting, ""
        self.emit(LiveEvent(type="text_delta", text=ready))

    def message(self, message: Message) -> None:
        """A message added to the conversation."""
        if message.role == "assistant":
            with self._lock:
                self._waiting = ""
            for thought in message.content:
                if isinstance(thought, ThinkingBlock):
                    self.emit(LiveEvent(type="thinking", text=flat(thought.thinking, THINKING_WIDTH)))
                elif isinstance(thought, RedactedThinkingBlock):
                    self.emit(LiveEvent(type="thinking", text="(redacted)"))
            text = message.text().strip()
            calls = message.tool_uses()
            if text:
                self.emit(LiveEvent(type="text", text=text, final=not calls))
            for call in calls:
                self.emit(self._started(call))
            return
        for block in message.content:
            if isinstance(block, ToolResultBlock) and (event := self._finished(block)) is not None:
                self.emit(event)

    def _started(self, call: ToolUseBlock) -> LiveEvent:
        with self._lock:
            record = ToolRecord(len(self._tools) + 1, call.name, target(call, self.cwd), dict(call.input))
            self._tools.append(record)
            self._pending[call.id] = record
        limit = declared_timeout_s(record.input) if record.tool == "Bash" else None
        return LiveEvent(type="tool_start", number=record.number, tool=record.tool, target=record.target,
                         timeout_s=limit)

    def _finished(self, block: ToolResultBlock) -> LiveEvent | None:
        with self._lock:
            record = self._pending.pop(block.tool_use_id, None)
        if record is None:
            return None
        record.result, record.is_error, record.done = block.text(), block.is_error, True
        outcome = f"error: {flat(record.result, OUTCOME_WIDTH)}" if record.is_error else summary(record.result)
        return LiveEvent(type="tool_end", number=record.number, tool=record.tool, target=record.target,
                         outcome=outcome, is_error=record.is_error)

    def records(self) -> list[ToolRecord]:
        with self._lock:
            return list(self._tools)


def target(call: ToolUseBlock, cwd: Path) -> str:
    """What a call works on, short: the real command or path (without the model's note), else its arguments."""
    what = describe(call.name, dict(call.input), cwd).split(MODEL_NOTE, 1)[0]
    if what.startswith(f"{call.name} "):  # no special wording for this tool: its arguments, compactly
        what = " ".join(f"{key}={flat(json.dumps(value, ensure_ascii=False).strip(chr(34)), 30)}"
                        for key, value in call.input.items() if key != "description")
    return flat(what, TARGET_WIDTH)


def summary(result: str) -> str:
    """A successful result on one line: ``ok``, ``ok: <its line>``, or ``ok (n lines)``."""
    lines = result.strip().count("\n") + 1 if result.strip() else 0
    return "ok" if not lines else f"ok: {flat(result, OUTCOME_WIDTH)}" if lines == 1 else f"ok ({lines} lines)"
