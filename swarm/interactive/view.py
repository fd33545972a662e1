"""What the person sees: one line per event, printed above the prompt.

- the model's thinking is one collapsed line per block (``✻ thinking: …``,
  its first words), printed before the message's text and calls;
- the model's text streams into a live preview under the prompt (``preview``)
  while it is produced; when the message is complete it is printed — an
  intermediate message with ``●``, the turn's final answer under ``◆ answer``;
- a tool call is one line ``[n] Tool target → outcome``; ``details(n)``
  (Ctrl-O for the last) prints its full input and result;
- a teammate's message is one line in its colour; questions, notes and
  warnings have their own marks.

Styled output goes through prompt_toolkit (thread-safe above a running
prompt); with ``plain`` (stdout not a terminal, or ``NO_COLOR``) every event
is a plain line on stdout. Either way every text is made safe for the
terminal on its way out (``core/text.py`` ``for_terminal``): a control a
model or a teammate wrote is shown escaped, never sent to the terminal.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from prompt_toolkit import print_formatted_text
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.styles import Style
from prompt_toolkit.styles.style import parse_color

from swarm.agent.compaction import CONTINUATION
from swarm.agent.instructions import is_context_block
from swarm.agent.loop import AgentRun
from swarm.agent.permissions.describe import MODEL_NOTE, describe
from swarm.core.text import flat, for_terminal
from swarm.models.messages import (
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from swarm.runtime.lead_inbox import LeadMessage

STYLE = Style.from_dict({
    "dim": "#888888", "answer": "bold ansigreen", "tool": "ansicyan", "error": "ansired", "ok": "ansigreen",
    "question": "bold ansiyellow", "note": "#888888 italic", "warning": "ansiyellow", "you": "bold",
})
CONTINUATION_OPENING = CONTINUATION.split("{", 1)[0]
"""How a compacted conversation's summary message begins (not the person's words)."""
PREVIEW_LINES = 3
"""Lines of the text being produced shown under the prompt."""
TARGET_WIDTH = 70
OUTCOME_WIDTH = 50
THINKING_WIDTH = 86
"""Characters of a thinking block shown on its one collapsed line."""


@dataclass
class ToolRecord:
    number: int
    tool: str
    target: str
    input: dict[str, object]
    result: str = ""
    is_error: bool = False
    done: bool = False


class View:
    """Renders the session's events; safe to call from any thread."""

    def __init__(self, cwd: Path, *, plain: bool, write: Callable[[str], None] | None = None,
                 on_change: Callable[[], None] = lambda: None) -> None:
        self.cwd = cwd
        self.plain = plain
        self._write = write or _stdout
        self.on_change = on_change
        """Called when what the prompt's bottom area shows changed (the preview)."""
        self._lock = threading.Lock()
        self._partial = ""
        self._tools: list[ToolRecord] = []
        self._pending: dict[str, ToolRecord] = {}
        self.colors: dict[str, str] = {}
        """Teammate name -> colour (from the team file)."""

    # -- the model's text --------------------------------------------------------------

    def stream(self, piece: str) -> None:
        """A piece of the text being produced (the Anthropic provider's ``on_text``)."""
        with self._lock:
            self._partial += piece
        self.on_change()

    def preview(self) -> str:
        """The last lines of the text being produced, for the bottom area ('' when none)."""
        with self._lock:
            text = self._partial
        if not text.strip():
            return ""
        return "\n".join(for_terminal(line[:TARGET_WIDTH * 2]) for line in text.rstrip().splitlines()[-PREVIEW_LINES:])

    def message(self, message: Message) -> None:
        """A message added to the conversation (the conversation's observer)."""
        if message.role == "assistant":
            with self._lock:
                self._partial = ""
            self.on_change()
            for thought in message.content:
                if isinstance(thought, ThinkingBlock):
                    self._print([("class:note", f"✻ thinking: {flat(thought.thinking, THINKING_WIDTH)}")])
                elif isinstance(thought, RedactedThinkingBlock):
                    self._print([("class:note", "✻ thinking (redacted)")])
            text = message.text().strip()
            calls = message.tool_uses()
            if text and calls:
                self._print([("class:dim", "● " + _indent(text))])
            elif text:
                self._print([("class:answer", "◆ answer")])
                self._print([("", text)])
            for call in calls:
                self._tool_started(call)
            return
        for block in message.content:
            if isinstance(block, ToolResultBlock):
                self._tool_finished(block)

    def compacted(self, summarised: int) -> None:
        """The conversation was summarised to fit the model's window (the summary's text was only a preview)."""
        with self._lock:
            self._partial = ""
        self.on_change()
        self.note(f"the conversation neared the model's window: {summarised} messages were summarised "
                  "(the session file keeps them all)")

    def turn_end(self, run: AgentRun, seconds: float) -> None:
        tokens = run.usage.input_tokens + run.usage.output_tokens
        tail = f"{run.turns} model call{'s' if run.turns != 1 else ''} · {tokens:,} tokens · {seconds:.1f}s"
        if run.stop_reason == "interrupted":
            self._print([("class:warning", f"✗ interrupted ({tail}); the model is told at your next prompt")])
        elif not run.ok:
            self._print([("class:error", f"✗ stopped: {run.stop_reason}: {run.detail}")])
        else:
            self._print([("class:dim", f"└ {tail}")])

    # -- tools ---------------------------------------------------------------------------

    def _tool_started(self, call: ToolUseBlock) -> None:
        with self._lock:
            record = ToolRecord(len(self._tools) + 1, call.name, _target(call, self.cwd), dict(call.input))
            self._tools.append(record)
            self._pending[call.id] = record

    def _tool_finished(self, block: ToolResultBlock) -> None:
        with self._lock:
            record = self._pending.pop(block.tool_use_id, None)
        if record is None:
            return
        record.result, record.is_error, record.done = block.text(), block.is_error, True
        first = flat(record.result, OUTCOME_WIDTH)
        outcome = ("class:error", f"error: {first}") if record.is_error else ("class:ok", _summary(record.result))
        self._print([("class:dim", f"[{record.number}] "), ("class:tool", record.tool), ("", f" {record.target} → "),
                     outcome])

    def details(self, number: int | None = None) -> None:
        """Print tool call ``number`` (default: the last) whole: its input and its result."""
        with self._lock:
            records = list(self._tools)
        if not records:
            self.note("no tool calls yet")
            return
        found = records[-1] if number is None else next((r for r in records if r.number == number), None)
        if found is None:
            self.note(f"no tool call [{number}]; they are numbered 1 to {len(records)}")
            return
        self._print([("class:tool", f"[{found.number}] {found.tool}"),
                     ("", "\n" + json.dumps(found.input, indent=2, ensure_ascii=False))])
        self._print([("class:error" if found.is_error else "", found.result or "(no result yet)")])

    # -- the team and the person ---------------------------------------------------------

    def teammate(self, message: LeadMessage, line: str) -> None:
        self._print([(_colour(self.colors.get(message.sender)), f"⇐ {message.sender}"), ("", f" {line}")])

    def you(self, text: str) -> None:
        """Echo what the person sent (plain mode; a terminal keeps the typed prompt on screen)."""
        if self.plain:
            self._print([("class:you", f"> {text}")])

    def question(self, header: str, body: str = "") -> None:
        self._print([("class:question", f"? {header}")] + ([("", "\n" + body)] if body else []))

    def note(self, text: str) -> None:
        self._print([("class:note", f"· {text}")])

    def warn(self, text: str) -> None:
        self._print([("class:warning", f"! {text}")])

    def block(self, text: str) -> None:
        self._print([("", text)])

    def replay(self, messages: list[Message]) -> None:
        """Show an earlier conversation (``--resume``): the person's prompts and the model's texts and calls."""
        for message in messages:
            if message.role == "user":
                texts = [b.text for b in message.content if isinstance(b, TextBlock)]
                for text in texts:
                    if text.startswith(CONTINUATION_OPENING):
                        self.note("(what came before was summarised to fit the model's window)")
                    elif not is_context_block(text):
                        self._print([("class:you", f"> {_indent(text)}")])
                for block in message.content:
                    if isinstance(block, ToolResultBlock):
                        self._tool_finished(block)
            else:
                self.message(message)

    def _print(self, fragments: list[tuple[str, str]]) -> None:
        """Print one event; every text is made safe for the terminal here (what the models and teammates wrote
        is in most of them), whichever way it is printed."""
        safe = [(style, for_terminal(text)) for style, text in fragments]
        if self.plain:
            self._write("".join(text for _, text in safe))
            return
        print_formatted_text(FormattedText(safe), style=STYLE)


def _colour(name: str | None) -> str:
    """The style for a teammate's colour from the team file (``blue``, ``orange``, ``#aabbcc``), else the default."""
    if name:
        try:
            parse_color(name)
            return f"fg:{name}"
        except ValueError:
            pass
    return "class:tool"


def _stdout(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _indent(text: str) -> str:
    return text.replace("\n", "\n  ")


def _target(call: ToolUseBlock, cwd: Path) -> str:
    """What a call works on, short: the real command or path (without the model's note), else its arguments."""
    what = describe(call.name, dict(call.input), cwd).split(MODEL_NOTE, 1)[0]
    if what.startswith(f"{call.name} "):  # no special wording for this tool: its arguments, compactly
        what = " ".join(f"{key}={flat(json.dumps(value, ensure_ascii=False).strip(chr(34)), 30)}"
                        for key, value in call.input.items() if key != "description")
    return flat(what, TARGET_WIDTH)


def _summary(result: str) -> str:
    lines = result.strip().count("\n") + 1 if result.strip() else 0
    return "ok" if not lines else f"ok: {flat(result, OUTCOME_WIDTH)}" if lines == 1 else f"ok ({lines} lines)"
