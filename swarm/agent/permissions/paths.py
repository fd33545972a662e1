"""Paths that matter to permissions: the agent's roots, and the settings files that grant rules.

- Containment in the agent's roots is ``walking.within_roots`` (one check,
  used by the policy to decide and by ``ToolContext.check_writable`` to refuse).
- ``SETTINGS_FILES`` is the one list of files whose rules swarm reads
  (``settings.py``). Writing one changes what an agent may do, so the policy
  never lets a rule or a mode allow it (``is_settings_file``,
  ``mentions_settings``); only ``bypassPermissions`` or the lead does.
- ``read_target`` is the directory or file a read-only tool call looks at.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from swarm.agent.permissions.shell_syntax import ShellCommand
from swarm.agent.tools.walking import MAGIC, glob_regex, split_base

SETTINGS_FILES = (".claude/settings.json", ".claude/settings.local.json", ".swarm/settings.json")
"""Settings files (relative to a cwd) whose ``permissions`` grant rules; the one list swarm reads."""
_SETTINGS_DIRS = frozenset(name.split("/")[0] for name in SETTINGS_FILES)
_MENTIONS = (*sorted(_SETTINGS_DIRS), *sorted({name.split("/")[-1] for name in SETTINGS_FILES}))


def absolute(value: str, cwd: Path) -> Path:
    """``value`` (``~`` expanded, relative to ``cwd``) made absolute, symlinks and ``..`` resolved."""
    path = Path(value).expanduser()
    return (path if path.is_absolute() else cwd / path).resolve()


def is_settings_file(value: str, cwd: Path) -> bool:
    """Would writing ``value`` write a settings file (as named, or where a symlink leads)?"""
    path = Path(value).expanduser()
    named = path if path.is_absolute() else cwd / path
    return any(_ends_with_settings(p) for p in (named, absolute(value, cwd)))


def _ends_with_settings(path: Path) -> bool:
    tail = "/".join(path.parts[-2:]).casefold()
    return any(tail == name.casefold() for name in SETTINGS_FILES)


def mentions_settings(command: ShellCommand) -> bool:
    """Might the command touch a settings file: named in its text, matched by a glob, or unreadable?"""
    if not command.parsed:
        return True
    texts = [command.text, *command.words]
    if any(mark in text.casefold() for text in texts for mark in _MENTIONS):
        return True
    return any(_glob_reaches_settings(word) for word in command.words if MAGIC.search(word))


def _glob_reaches_settings(word: str) -> bool:
    """A glob component that could name a settings directory (as the shell globs: ``*`` skips dot names)."""
    parts = [p for p in word.split("/") if p.startswith(".")]
    return any(glob_regex(part).match(name) for part in parts for name in _SETTINGS_DIRS)


def read_target(tool: str, args: dict[str, Any], cwd: Path) -> Path | None:
    """What a read-only file tool looks at (Read: the file, Grep: its path, Glob: the pattern's base); None for others."""
    if tool == "Read":
        return absolute(str(args.get("file_path", "")), cwd)
    if tool in ("Grep", "Glob"):
        root = absolute(str(args.get("path") or "."), cwd)
        if tool == "Glob":
            root, _ = split_base(str(args.get("pattern", "")), root)
        return root.resolve()
    return None
