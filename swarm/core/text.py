"""Short forms of text for summaries, tables and log lines."""

from __future__ import annotations


def one_line(text: str, limit: int = 80) -> str:
    """The first non-blank line of ``text``, stripped; ``…`` marks a cut or lines that follow."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return ""
    first = lines[0]
    if len(first) > limit:
        return first[: limit - 1] + "…"
    return first + " …" if len(lines) > 1 and len(first) + 2 <= limit else first


def flat(text: str, limit: int | None = 200) -> str:
    """All of ``text`` on one line (runs of whitespace and newlines become one space); ``…`` marks a cut.

    ``limit=None`` never cuts.
    """
    joined = " ".join(text.split())
    return joined if limit is None or len(joined) <= limit else joined[: limit - 1] + "…"


def visible(text: str) -> str:
    """``text`` on one line with newlines, tabs and other control characters escaped (``\\n``, ``\\x1b``)."""
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)
