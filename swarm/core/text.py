"""Short forms of text for summaries, tables and log lines, and text made safe to show on a terminal.

Text a model or a teammate wrote reaches the person's terminal only through
``for_terminal`` (or ``visible``, on one line; ``json_for_terminal`` for
JSON): every character a terminal could act on or hide text with — the C0
controls (ESC, BEL, backspace, a carriage return that rewrites the line),
DEL, the C1 controls (0x9b is CSI, 0x9d OSC), bidi overrides, line
separators, every other character that is not printable — is shown as its
Python escape (``\\x1b``, ``\\u202e``). The text stays readable and nothing
in it is run.
"""

from __future__ import annotations

import logging


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
    """``text`` on one line with newlines, tabs and every other character that is not printable escaped
    (``\\n``, ``\\x1b``)."""
    return _escaped(text, "")


def for_terminal(text: str) -> str:
    """``text`` as a terminal may show it: newlines and tabs kept (``\\r\\n`` is a newline), every other
    character that is not printable escaped (``\\x1b``, ``\\x9b``, ``\\r``, ``\\u202e``)."""
    return _escaped(text.replace("\r\n", "\n"), "\n\t")


def json_for_terminal(text: str) -> str:
    """JSON text (``json.dumps`` with ``ensure_ascii=False``) with every character that is not printable but
    a newline or a space written as a ``\\u`` escape: the same JSON, nothing a terminal acts on.

    Outside its strings JSON text holds only printable characters, newlines and
    spaces, and a string's ``\\u`` escape stands for the character itself.
    """
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or ch in "\n " else _json_escape(ch) for ch in text)


def _escaped(text: str, keep: str) -> str:
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or ch in keep else ch.encode("unicode_escape").decode("ascii")
                   for ch in text)


def _json_escape(ch: str) -> str:
    """``ch`` as JSON's ``\\uXXXX`` (a surrogate pair beyond the Basic Multilingual Plane)."""
    code = ord(ch)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


class TerminalLogFormatter(logging.Formatter):
    """A log line made safe for the terminal (``for_terminal``): a logged message may quote what a model or a
    teammate wrote, and a teammate's log is its tmux pane."""

    def format(self, record: logging.LogRecord) -> str:
        return for_terminal(super().format(record))
