"""How a live event looks: one or more lines of styled fragments, the same in every view.

``lines(event)`` gives ``[(style, text), ...]`` per line, with the style
classes of the interactive session (``class:dim``, ``class:tool``, ...): the
session's ``View`` prints them through prompt_toolkit, a teammate's pane as
ANSI (``ansi``), a log or ``swarm logs -f`` as plain text (``plain``). Both
``ansi`` and ``plain`` make every text safe for the terminal first
(``core/text.py`` ``for_terminal``): what a model wrote is shown escaped,
never acted on — only the style codes added here reach the terminal raw.
"""

from __future__ import annotations

from swarm.agent.live_events import LiveEvent
from swarm.core.text import flat, for_terminal

Fragments = list[tuple[str, str]]

ANSI = {"class:dim": "2", "class:answer": "1;32", "class:tool": "36", "class:error": "31", "class:ok": "32",
        "class:question": "1;33", "class:note": "2;3", "class:warning": "33", "class:you": "1"}
"""SGR codes for the style classes (the interactive session's ``STYLE``, in plain ANSI)."""


def lines(event: LiveEvent, *, sender_style: str = "class:tool") -> list[Fragments]:
    """The lines ``event`` shows as ([] for one that shows nothing by itself: streamed text, a delta)."""
    kind = event.type
    text = event.text or ""
    if kind == "thinking":
        return [[("class:note", f"✻ thinking: {text}" if text != "(redacted)" else "✻ thinking (redacted)")]]
    if kind == "text":
        if event.final:
            return [[("class:answer", "◆ answer")], [("", text)]]
        return [[("class:dim", "● " + text.replace("\n", "\n  "))]]
    if kind == "tool_start":
        return [[("class:dim", f"[{event.number}] "), ("class:tool", event.tool or ""), ("", f" {event.target} …")]]
    if kind == "tool_end":
        outcome = ("class:error" if event.is_error else "class:ok", event.outcome or "")
        return [[("class:dim", f"[{event.number}] "), ("class:tool", event.tool or ""),
                 ("", f" {event.target} → "), outcome]]
    if kind == "message":
        return [[(sender_style, f"⇐ {event.sender}"), ("", f" {flat(text, 240)}")]]
    if kind == "request":
        who = event.answerer or "the lead"
        return [[("class:question", f"? waiting for {who}: {event.kind or 'permission'} request {event.request_id}"),
                 ("", f"\n  {text}")]]
    if kind == "answered":
        style = "class:ok" if event.kind == "approved" else "class:warning"
        return [[(style, f"✓ {event.kind}" if event.kind == "approved" else f"✗ {event.kind}"),
                 ("", f" request {event.request_id}" + (f" by {event.answerer}" if event.answerer else "")
                  + (f": {flat(text, 160)}" if text else ""))]]
    if kind == "state":
        return [[("class:dim", f"— {event.state}" + _usage(event))]]
    if kind == "task":
        return [[("class:note", f"· task #{event.task_id} {flat(text, 120)}")]]
    if kind == "turn_end":
        if event.stop_reason == "interrupted":
            return [[("class:warning", "✗ interrupted" + _usage(event))]]
        if event.stop_reason not in (None, "end_turn", "ok"):
            return [[("class:error", f"✗ stopped: {event.stop_reason}" + (f": {text}" if text else ""))]]
        return [[("class:dim", "└ turn done" + _usage(event))]]
    if kind == "compaction":
        return [[("class:note", f"· the conversation neared the model's window: {event.summarised} messages were "
                  "summarised (the transcript keeps them all)")]]
    if kind == "you":
        return [[("class:you", f"> {text}")]]
    if kind == "note":
        return [[("class:note", f"· {text}")]]
    if kind == "warning":
        return [[("class:warning", f"! {text}")]]
    return []


def _usage(event: LiveEvent) -> str:
    parts = []
    if event.tokens:
        parts.append(f"{event.tokens:,} tokens")
    if event.cost_usd:
        parts.append(f"${event.cost_usd:.4f}")
    return f" ({' · '.join(parts)})" if parts else ""


def plain(fragments: Fragments) -> str:
    """One line, its texts made safe for the terminal, no styles."""
    return "".join(for_terminal(text) for _, text in fragments)


def ansi(fragments: Fragments) -> str:
    """One line with ANSI styles; only the style codes are raw, every text is made safe for the terminal."""
    out = []
    for style, text in fragments:
        safe = for_terminal(text)
        code = ANSI.get(style)
        out.append(f"\x1b[{code}m{safe}\x1b[0m" if code else safe)
    return "".join(out)


def delta(event: LiveEvent) -> str:
    """A streamed piece of text, made safe for the terminal (shown as it comes, before its ``text`` event)."""
    return for_terminal(event.text or "")
