"""Everything a command shows goes out through here, made safe for the terminal (``core/text.py``).

Names, messages, tasks, plans, requests, logs: what a command prints was often
written by a model or a teammate, so every line is escaped on its way out
(``for_terminal``: newlines and tabs kept, every other control shown as
``\\x1b``), a table's cells on one line (``visible``), and JSON with its
controls as ``\\u`` escapes (``json_for_terminal``). Commands print only
through ``echo``, ``write_out``, ``table`` and ``emit_json``
(``tests/core/test_owners.py`` checks it).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

import click

from swarm.core.fileio import write_all
from swarm.core.text import for_terminal, json_for_terminal, one_line, visible

__all__ = ["echo", "emit_json", "json_line", "one_line", "table", "write_out"]


def write_out(text: str) -> None:
    """Write ``text``, made safe for the terminal, to stdout in full, or raise (``BrokenPipeError`` when the
    reader went away).

    ``click.echo`` cannot promise that: with an unbuffered stdout
    (``PYTHONUNBUFFERED``) a short write into a pipe is silently dropped. A
    command that removes what it showed (``inbox --take``) relies on this.
    """
    text = for_terminal(text)
    stream = sys.stdout
    stream.flush()
    try:
        fd = stream.fileno()
    except (OSError, ValueError):  # not a real file (e.g. click's test runner): its writes are whole
        stream.write(text)
        stream.flush()
        return
    write_all(fd, text.encode(stream.encoding or "utf-8", errors="replace"))


def echo(text: str = "", *, err: bool = False, nl: bool = True) -> None:
    """``click.echo`` of ``text`` made safe for the terminal: a line for the person, on stderr with ``err``."""
    click.echo(for_terminal(text), err=err, nl=nl)


def json_line(data: Any) -> str:
    """``data`` as one line of JSON, its controls escaped (for commands that print a JSON object a line)."""
    return json_for_terminal(json.dumps(data, ensure_ascii=False)) + "\n"


def emit_json(data: Any) -> None:
    write_out(json_for_terminal(json.dumps(data, indent=2, ensure_ascii=False)) + "\n")


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Print a left-aligned plain-text table, each cell on one line with its controls escaped."""
    cells = [[visible(str(c)) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    lines = ["  ".join(h.upper().ljust(w) for h, w in zip(headers, widths)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    write_out("".join(f"{line}\n" for line in lines))
