"""Output helpers shared by commands: JSON, simple tables, checked writes to stdout."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from swarm.core.fileio import write_all
from swarm.core.text import one_line

__all__ = ["emit_json", "one_line", "table", "write_out"]


def write_out(text: str) -> None:
    """Write ``text`` to stdout in full, or raise (``BrokenPipeError`` when the reader went away).

    ``click.echo`` cannot promise that: with an unbuffered stdout
    (``PYTHONUNBUFFERED``) a short write into a pipe is silently dropped. A
    command that removes what it showed (``inbox --take``) relies on this.
    """
    stream = sys.stdout
    stream.flush()
    try:
        fd = stream.fileno()
    except (OSError, ValueError):  # not a real file (e.g. click's test runner): its writes are whole
        stream.write(text)
        stream.flush()
        return
    write_all(fd, text.encode(stream.encoding or "utf-8", errors="replace"))


def emit_json(data: Any) -> None:
    write_out(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Print a left-aligned plain-text table."""
    cells = [[str(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    lines = ["  ".join(h.upper().ljust(w) for h, w in zip(headers, widths)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    write_out("".join(f"{line}\n" for line in lines))
