"""Walking a tree, matching glob patterns and containing paths: shared by Glob, Grep, Write/Edit and the permission rules.

``**`` spans directories, ``*`` / ``?`` / ``[...]`` stay within one path
component, ``{a,b}`` are alternatives; VCS directories are never entered.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

VCS_DIRS = frozenset({".git", ".hg", ".svn"})
MAGIC = re.compile(r"[*?\[{]")
"""Characters that make a path component a pattern rather than a literal name."""


def walk_files(root: Path) -> Iterator[tuple[Path, str]]:
    """Files under ``root`` in path order, with their ``/``-separated relative path.

    Entries of each directory are visited in name order, files and
    directories interleaved (as ``rg --sort path`` does); VCS directories and
    symlinked directories are not entered; unreadable directories are skipped.
    """
    yield from _walk(root, "")


def _walk(directory: Path, prefix: str) -> Iterator[tuple[Path, str]]:
    try:
        with os.scandir(directory) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        rel = prefix + entry.name
        try:
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in VCS_DIRS:
                    yield from _walk(Path(entry.path), rel + "/")
            elif entry.is_file():
                yield Path(entry.path), rel
        except OSError:
            continue


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A regex that matches a whole ``/``-separated relative path against ``pattern``."""
    return re.compile(_translate(pattern) + r"\Z", re.DOTALL)


def _translate(pat: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(pat):
        piece, i = _translate_at(pat, i)
        out.append(piece)
    return "".join(out)


def _translate_at(pat: str, i: int) -> tuple[str, int]:
    """The regex for the glob token starting at ``pat[i]``, and the next index."""
    if pat.startswith("**/", i):
        return "(?:.*/)?", i + 3
    if pat.startswith("**", i):
        return ".*", i + 2
    char = pat[i]
    if char == "*":
        return "[^/]*", i + 1
    if char == "?":
        return "[^/]", i + 1
    if char == "[":
        return _char_class(pat, i)
    if char == "{":
        return _braces(pat, i)
    return re.escape(char), i + 1


def _char_class(pat: str, i: int) -> tuple[str, int]:
    j = i + 1
    if j < len(pat) and pat[j] in "!^":
        j += 1
    if j < len(pat) and pat[j] == "]":
        j += 1
    end = pat.find("]", j)
    if end < 0:
        return re.escape("["), i + 1
    body = pat[i + 1:end].replace("\\", "\\\\")
    if body[:1] in ("!", "^"):
        body = "^" + body[1:]
    return f"[{body}]", end + 1


def _braces(pat: str, i: int) -> tuple[str, int]:
    depth, start, parts = 0, i + 1, []
    for j in range(i, len(pat)):
        if pat[j] == "{":
            depth += 1
        elif pat[j] == "}":
            depth -= 1
            if depth == 0:
                parts.append(pat[start:j])
                return "(?:" + "|".join(_translate(p) for p in parts) + ")", j + 1
        elif pat[j] == "," and depth == 1:
            parts.append(pat[start:j])
            start = j + 1
    return re.escape("{"), i + 1


def within_roots(path: Path, roots: Iterable[Path]) -> bool:
    """Is ``path`` one of ``roots`` or inside one, symlinks and ``..`` resolved?

    The one containment check: the permission policy decides with it and
    ``ToolContext.check_writable`` refuses with it.
    """
    real = path.resolve()
    return any(real == root.resolve() or real.is_relative_to(root.resolve()) for root in roots)


def split_base(pattern: str, base: Path) -> tuple[Path, str]:
    """Move the pattern's leading literal directories (or an absolute prefix) onto ``base``.

    The directory returned is the one a Glob call searches, which is also
    what the permission policy checks against the agent's roots.
    """
    if pattern.startswith("/"):
        base = Path("/")
    parts = [p for p in pattern.split("/") if p not in ("", ".")]
    k = 0
    while k < len(parts) - 1 and not MAGIC.search(parts[k]):
        k += 1
    return base.joinpath(*parts[:k]), "/".join(parts[k:])


def newest_first(paths: Iterable[Path]) -> list[Path]:
    """``paths`` sorted by modification time, newest first (ties by path)."""
    def key(path: Path) -> tuple[float, str]:
        try:
            return -path.stat().st_mtime, str(path)
        except OSError:
            return 0.0, str(path)
    return sorted(paths, key=key)
