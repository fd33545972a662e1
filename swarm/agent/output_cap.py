"""How much of a long text a model reads: the cap, and the marker that says what was cut.

The one place text is cut to a size before a model reads it: a tool's result
(``Tool.max_result_chars``, applied by ``agent.executor`` to Grep, TaskList,
TaskGet), and what another agent wrote (``agent.peer_messages``: each message
a teammate or the lead receives, its summary and sender). Text one agent
writes for another is capped at ``PEER_TEXT_CHARS`` on the reading side,
because a teammate can write an inbox or a task file directly; SendMessage
also refuses more than that up front, so an honest sender is told at once.

Bash caps its output while it streams (``tools.shell.OutputCapture``: head
and tail kept, memory bounded), with the same marker.
"""

from __future__ import annotations

PEER_TEXT_CHARS = 30_000
"""Most characters of one message, one task listing or one task an agent reads from another (as Bash's output)."""
PEER_LABEL_CHARS = 200
"""Most characters of a message's summary or sender name as its recipient's model reads them."""


def truncation_marker(omitted: int, hint: str = "") -> str:
    """``[... N chars truncated ...]``, or ``[... N chars truncated; <hint> ...]``."""
    return f"[... {omitted} chars truncated{'; ' + hint if hint else ''} ...]"


def cap_text(text: str, limit: int, hint: str = "") -> str:
    """``text`` if it has at most ``limit`` characters, else its first ``limit`` and a line saying what was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n{truncation_marker(len(text) - limit, hint)}"


def cap_label(text: str, limit: int = PEER_LABEL_CHARS) -> str:
    """A one-line label (a summary, a name) cut to ``limit`` characters, ending in ``…`` when cut."""
    return text if len(text) <= limit else f"{text[:limit - 1]}…"
