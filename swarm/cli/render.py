"""Output helpers shared by commands: JSON, simple tables, one-line errors."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import click

from swarm.core.text import one_line

__all__ = ["emit_json", "one_line", "table"]


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Print a left-aligned plain-text table."""
    cells = [[str(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    click.echo("  ".join(h.upper().ljust(w) for h, w in zip(headers, widths)).rstrip())
    for row in cells:
        click.echo("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
