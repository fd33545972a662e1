"""What a permission request says to the lead: the real call first, the model's words after.

The model writes a Bash ``description`` and could make it say anything ("run:
git status" for ``touch ~/.bashrc``), so the line the lead reads starts with
what will really run: the whole command (never cut; newlines and control
characters shown escaped, so nothing hides a tail or rewrites the terminal),
or the file path, absolute, and, when a symlink or ``..`` leads elsewhere,
where it really goes. A command that runs somewhere other than the
requester's usual directory (a subagent's cwd) says where first. The model's
description follows, marked as the model's. A command that asks to leave
the OS sandbox (``dangerouslyDisableSandbox``) says so first.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from swarm.agent.permissions.paths import absolute
from swarm.core.text import one_line, visible

MODEL_NOTE = " — the model says: "
"""What separates the real call from the model's own description of it."""
NOTE_LIMIT = 120
"""Characters of the model's description kept after the real call."""


def describe(tool: str, args: dict[str, Any], cwd: Path, *, usual: Path | None = None) -> str:
    """One line saying what the call would really do, then the model's description if it gave one.

    ``cwd`` is where the call runs; ``usual`` the requester's own directory: a command run elsewhere
    starts with ``in <cwd>:``.
    """
    real = _real(tool, args, cwd)
    if tool == "Bash" and usual is not None and os.path.normpath(cwd) != os.path.normpath(usual):
        real = f"in {visible(str(cwd))}: {real}"
    note = one_line(str(args.get("description") or ""), NOTE_LIMIT)
    return f"{real}{MODEL_NOTE}{visible(note)}" if note else real


def _real(tool: str, args: dict[str, Any], cwd: Path) -> str:
    if tool == "Bash":
        verb = "run outside the sandbox (unsandboxed)" if args.get("dangerouslyDisableSandbox") else "run"
        return f"{verb}: {visible(str(args.get('command', '')))}"
    if tool == "Write":
        return f"write {len(str(args.get('content', '')))} characters to {_path(args.get('file_path'), cwd)}"
    if tool == "Edit":
        return f"edit {_path(args.get('file_path'), cwd)}"
    if tool == "Read":
        return f"read {_path(args.get('file_path'), cwd)}"
    if tool == "WebFetch":
        return f"connect to {visible(str(args.get('url', '')))}"
    if tool in ("Grep", "Glob"):
        return f"{tool.lower()} {visible(repr(args.get('pattern', '')))} in {_path(args.get('path') or '.', cwd)}"
    shown = {k: v for k, v in args.items() if k != "description"}
    return f"{tool} {visible(str(shown))}"


def _path(value: Any, cwd: Path) -> str:
    try:
        real = absolute(str(value), cwd)
    except (OSError, RuntimeError, ValueError):  # a symlink loop, a NUL: show the path as named
        return visible(str(value))
    given = Path(str(value)).expanduser()
    plain = Path(os.path.normpath(given if given.is_absolute() else cwd.resolve() / given))
    shown = visible(str(given)) if given.is_absolute() else visible(str(cwd / given))
    return shown if plain == real else f"{shown} (really {visible(str(real))})"
