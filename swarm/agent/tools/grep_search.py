"""Grep's search itself: the file types, a resolved query, and its two backends with one behaviour.

``rg_grep`` runs ripgrep (``rg``); ``python_grep`` is the pure-Python search
used when ripgrep is missing. Both take a ``GrepQuery`` and return the
result lines unsorted and unpaged; the Grep tool (``swarm.agent.tools.search``)
resolves the query from its input and pages the result. What both backends
promise is said in that module's docstring.
"""

from __future__ import annotations

import re
import subprocess
from bisect import bisect_right
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Literal

from swarm.agent.tool_api.context import ToolError
from swarm.agent.tool_api.walking import VCS_DIRS, glob_regex, walk_files
from swarm.agent.tools.files import SNIFF_BYTES

FILE_TYPES: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "c": ("*.c", "*.h"),
    "cpp": ("*.cpp", "*.cc", "*.cxx", "*.c++", "*.hpp", "*.hh", "*.hxx", "*.h", "*.inl"),
    "cs": ("*.cs",),
    "css": ("*.css", "*.scss"),
    "go": ("*.go",),
    "html": ("*.htm", "*.html"),
    "java": ("*.java", "*.jsp"),
    "js": ("*.js", "*.jsx", "*.mjs", "*.cjs", "*.vue"),
    "json": ("*.json", "*.jsonl"),
    "kotlin": ("*.kt", "*.kts"),
    "lua": ("*.lua",),
    "md": ("*.md", "*.markdown", "*.mdx"),
    "markdown": ("*.md", "*.markdown", "*.mdx"),
    "php": ("*.php",),
    "py": ("*.py", "*.pyi"),
    "python": ("*.py", "*.pyi"),
    "rb": ("*.rb", "*.gemspec", "Gemfile", "Rakefile"),
    "ruby": ("*.rb", "*.gemspec", "Gemfile", "Rakefile"),
    "rust": ("*.rs",),
    "sh": ("*.sh", "*.bash", "*.zsh", ".bashrc", ".zshrc", ".profile"),
    "sql": ("*.sql",),
    "swift": ("*.swift",),
    "toml": ("*.toml", "Cargo.lock"),
    "ts": ("*.ts", "*.tsx", "*.cts", "*.mts"),
    "typescript": ("*.ts", "*.tsx", "*.cts", "*.mts"),
    "txt": ("*.txt",),
    "yaml": ("*.yaml", "*.yml"),
})
"""Grep's ``type`` names and the file-name globs of each (a subset of ripgrep's ``--type-list``).

Both backends use this table (rg through ``--type-add``), so a type means the
same files whichever runs."""


def file_type_globs(name: str) -> tuple[str, ...]:
    """The globs of a Grep ``type``; ToolError naming the known ones for an unknown type."""
    globs = FILE_TYPES.get(name)
    if globs is None:
        raise ToolError(f"unknown file type {name!r}; known types: {', '.join(sorted(FILE_TYPES))}")
    return globs

OutputMode = Literal["content", "files_with_matches", "count"]




@dataclass(frozen=True)
class GrepQuery:
    """A Grep request resolved against the context, ready for a backend."""

    pattern: str
    root: Path
    glob: str | None
    mode: OutputMode
    ignore_case: bool
    numbers: bool
    before: int
    after: int
    only_matching: bool = False
    multiline: bool = False
    file_globs: tuple[str, ...] = ()
    """The globs of the ``type`` asked for (matched against file names); empty: any file."""
    type: str | None = None


def python_grep(query: GrepQuery) -> list[str]:
    """Search with ``re``; result lines in ripgrep's formats (see module docstring)."""
    rx = _compile(query)
    out: list[str] = []
    writer = _ContentWriter(query, out)
    for path in _candidates(query):
        lines = _text_lines(path)
        if lines is None:
            continue
        if query.mode == "files_with_matches" and not query.multiline:
            if any(rx.search(line) for line in lines):  # stops reading at the first match
                out.append(str(path))
            continue
        text = list(lines)
        hits = _multiline_hits(text, rx) if query.multiline else _line_hits(text, rx)
        if not hits:
            continue
        if query.mode == "files_with_matches":
            out.append(str(path))
        elif query.mode == "count":
            out.append(f"{path}:{len(hits)}")
        else:
            writer.add_file(str(path), text, hits)
    return out


Hits = dict[int, list[str]]
"""A file's matching line numbers (1-based), each with the non-empty matched parts that start on it."""


def _line_hits(lines: list[str], rx: re.Pattern[str]) -> Hits:
    hits: Hits = {}
    for no, line in enumerate(lines, 1):
        if rx.search(line):
            hits[no] = [m.group(0) for m in rx.finditer(line) if m.group(0)]
    return hits


def _multiline_hits(lines: list[str], rx: re.Pattern[str]) -> Hits:
    """Matches over the whole text: every line a match touches matches; its parts go on its first line."""
    text = "\n".join(lines)
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    hits: Hits = {}
    for m in rx.finditer(text):
        first = bisect_right(starts, m.start())
        last = bisect_right(starts, max(m.end() - 1, m.start()))
        for no in range(first, last + 1):
            hits.setdefault(no, [])
        if m.group(0):
            hits[first].append(m.group(0))
    return hits


def _compile(query: GrepQuery) -> re.Pattern[str]:
    flags = re.IGNORECASE if query.ignore_case else 0
    if query.multiline:
        flags |= re.DOTALL | re.MULTILINE
    try:
        return re.compile(query.pattern, flags)
    except re.error as exc:
        raise ToolError(f"invalid regular expression {query.pattern!r}: {exc}") from exc


def _candidates(query: GrepQuery) -> Iterator[Path]:
    if query.root.is_file():
        yield query.root
        return
    rx = glob_regex(query.glob) if query.glob else None
    on_path = bool(query.glob and "/" in query.glob)
    typed = [glob_regex(g) for g in query.file_globs]
    for path, rel in walk_files(query.root):
        if rx is not None and not rx.match(rel if on_path else path.name):
            continue
        if typed and not any(t.match(path.name) for t in typed):
            continue
        if not path.is_symlink():
            yield path


def _text_lines(path: Path) -> Iterator[str] | None:
    """The lines of ``path`` (lossy UTF-8), or None for a binary or unreadable file."""
    try:
        with path.open("rb") as fh:
            if b"\x00" in fh.read(SNIFF_BYTES):
                return None
    except OSError:
        return None
    return _iter_lines(path)


def _iter_lines(path: Path) -> Iterator[str]:
    try:
        with path.open("rb") as fh:
            for raw in fh:
                yield raw.decode("utf-8", "replace").rstrip("\r\n")
    except OSError:
        return


class _ContentWriter:
    """Appends ``content``-mode lines for file after file, with context and ``--``."""

    def __init__(self, query: GrepQuery, out: list[str]) -> None:
        self._q = query
        self._out = out

    def add_file(self, display: str, lines: Iterable[str], hits: Hits) -> None:
        pending: deque[tuple[int, str]] = deque(maxlen=self._q.before)
        last = after_left = 0
        for no, line in enumerate(lines, 1):
            if no in hits:
                self._separate(pending[0][0] if pending else no, last)
                for n, text in pending:
                    self._emit(display, n, text, "-")
                pending.clear()
                for part in hits[no] if self._q.only_matching else [line]:
                    self._emit(display, no, part, ":")
                last, after_left = no, self._q.after
            elif after_left > 0:
                self._emit(display, no, line, "-")
                last, after_left = no, after_left - 1
            else:
                pending.append((no, line))

    def _separate(self, first: int, last: int) -> None:
        """``--`` before a group not adjacent to the previous output (context mode only)."""
        has_context = self._q.before > 0 or self._q.after > 0
        if has_context and self._out and (last == 0 or first > last + 1):
            self._out.append("--")

    def _emit(self, display: str, no: int, line: str, sep: str) -> None:
        number = f"{no}{sep}" if self._q.numbers else ""
        self._out.append(f"{display}{sep}{number}{line}")


def rg_grep(rg: str, query: GrepQuery) -> list[str]:
    """Search with ripgrep; result lines in the same formats as ``python_grep``."""
    try:
        done = subprocess.run(
            _rg_args(rg, query), capture_output=True, stdin=subprocess.DEVNULL,
            cwd=query.root if query.root.is_dir() else query.root.parent,  # rg anchors globs at its cwd
        )
    except OSError as exc:
        raise ToolError(f"could not run ripgrep ({rg}): {exc.strerror or exc}") from exc
    stdout = done.stdout.decode("utf-8", "replace")
    if done.returncode == 2 and not stdout:
        message = done.stderr.decode("utf-8", "replace").strip()
        raise ToolError(f"grep failed: {message}")
    return [line.rstrip("\r") for line in stdout.splitlines()]


def _rg_args(rg: str, query: GrepQuery) -> list[str]:
    args = [rg, "--no-config", "--no-ignore", "--hidden", "--color", "never", "--sort", "path"]
    args += [arg for name in sorted(VCS_DIRS) for arg in ("--glob", f"!{name}")]
    if query.ignore_case:
        args.append("--ignore-case")
    if query.glob:
        args += ["--glob", query.glob]
    if query.file_globs:
        args += [arg for g in query.file_globs for arg in ("--type-add", f"swarmtype:{g}")]
        args += ["--type", "swarmtype"]
    if query.multiline:
        args += ["--multiline", "--multiline-dotall"]
    if query.mode == "files_with_matches":
        args.append("--files-with-matches")
    elif query.mode == "count":
        args += ["--count", "--with-filename"]
    else:
        args += ["--with-filename", "--no-heading", "-n" if query.numbers else "-N"]
        args += ["-A", str(query.after), "-B", str(query.before)]
        if query.only_matching:
            args.append("--only-matching")
    return [*args, "--regexp", query.pattern, "--", str(query.root)]
