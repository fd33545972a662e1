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
from pathlib import Path

from prompt_toolkit import print_formatted_text
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.styles import Style
from prompt_toolkit.styles.style import parse_color

from swarm.agent.compaction import CONTINUATION
from swarm.agent.instructions import is_context_block
from swarm.agent.live_events import LiveEvent
from swarm.agent.live_render import lines
from swarm.agent.loop import AgentRun
from swarm.agent.narration import TARGET_WIDTH, Narrator
from swarm.core.text import for_terminal
from swarm.models.messages import Message, TextBlock, ToolResultBlock
from swarm.runtime.lead_inbox import LeadMessage

STYLE = Style.from_dict({
    "dim": "#888888", "answer": "bold ansigreen", "tool": "ansicyan", "error": "ansired", "ok": "ansigreen",
    "question": "bold ansiyellow", "note": "#888888 italic", "warning": "ansiyellow", "you": "bold",
})
CONTINUATION_OPENING = CONTINUATION.split("{", 1)[0]
"""How a compacted conversation's summary message begins (not the person's words)."""
HELD = 500
"""The lead's events kept while a teammate is viewed (the oldest go first)."""
PREVIEW_LINES = 3
"""Lines of the text being produced shown under the prompt."""


class View:
    """Renders the session's events; safe to call from any thread.

    The lead's own messages are told by a ``Narrator`` (``agent/narration.py``)
    and drawn by ``agent/live_render.py``: the same events and lines as a
    teammate's pane and ``swarm logs -f``.
    """

    def __init__(self, cwd: Path, *, plain: bool, write: Callable[[str], None] | None = None,
                 on_change: Callable[[], None] = lambda: None) -> None:
        self.cwd = cwd
        self.plain = plain
        self._write = write or _stdout
        self.on_change = on_change
        """Called when what the prompt's bottom area shows changed (the preview)."""
        self._lock = threading.Lock()
        self._partial = ""
        self.narrator = Narrator(cwd, self.event)
        self.colors: dict[str, str] = {}
        """Teammate name -> colour (from the team file)."""
        self.viewing: str | None = None
        """The teammate the main view shows (``interactive/focus.py``); None: the lead."""
        self._held: list[LiveEvent] = []

    # -- the model's text --------------------------------------------------------------

    def stream(self, piece: str, source: str | None = None) -> None:
        """A piece of the text being produced: the lead's (the Anthropic provider's ``on_text``), or the viewed
        teammate ``source``'s; another agent's than the one viewed is not previewed."""
        with self._lock:
            if source != self.viewing:
                return
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
        self.narrator.message(message)

    def focus(self, name: str | None) -> None:
        """Show teammate ``name``'s events from now on (None: the lead's again, with those held meanwhile)."""
        with self._lock:
            self.viewing = name
            self._partial = ""  # the text the other agent was producing is not this one's
            held, self._held = (self._held, []) if name is None else ([], self._held)
        self.on_change()
        if held:
            self.note(f"the lead meanwhile ({len(held)} events):")
        for event in held:
            self.event(event)

    def event(self, event: LiveEvent, source: str | None = None) -> None:
        """Show one live event of the lead (its narrator's), or of teammate ``source`` (while it is viewed).

        The lead's events are held while a teammate is viewed. A call's start
        shows nothing here: its one line comes with its outcome."""
        with self._lock:
            if source != self.viewing:
                if source is None:
                    self._held.append(event)
                    del self._held[:-HELD]
                return
        if source is not None and event.type == "text_delta":  # a viewed teammate's text, as it streams
            self.stream(event.text or "", source)
            return
        if source is not None and event.type == "text":
            with self._lock:
                self._partial = ""
            self.on_change()
        if event.type in ("text_delta", "tool_start"):
            return
        style = _colour(self.colors.get(event.sender)) if event.sender else "class:tool"
        for line in lines(event, sender_style=style):
            self._print(line)

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

    def details(self, number: int | None = None) -> None:
        """Print tool call ``number`` (default: the last) whole: its input and its result."""
        records = self.narrator.records()
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
                if any(isinstance(block, ToolResultBlock) for block in message.content):
                    self.narrator.message(message)
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
