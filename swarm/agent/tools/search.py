"""Glob and Grep: find files by name and by content.

Glob walks the tree itself (skipping VCS directories such as ``.git``) and
matches each file's path relative to the search root against the pattern:
``**`` spans directories, ``*`` / ``?`` / ``[...]`` stay within one path
component, ``{a,b}`` are alternatives. Matches come newest first.

Grep runs ripgrep (``rg``) when it is installed, else a pure-Python search
with the same semantics; ``GrepTool(rg_path=...)`` picks the backend
explicitly (``None`` forces the Python one). Both backends:

- search every file under the root except inside VCS directories — neither
  reads ``.gitignore`` (rg runs with ``--no-ignore --hidden``), so results do
  not depend on which backend is installed;
- skip binary files (a NUL byte in the first 8 KiB);
- skip symbolic links met under the root (ripgrep does not follow them), so
  a link inside the agent's roots never leads the search outside them (the
  root itself is resolved and checked by the permission policy);
- apply ``glob`` to the file name when it has no ``/``, else to the path
  relative to the root (ripgrep's rule), and not at all when the root is a
  single file;
- print absolute paths, files in path order, in ripgrep's formats
  (``path:line:text`` for matches, ``path-line-text`` for context, ``--``
  between separate groups when context is asked for).

- take ``type`` from one table (``FILE_TYPES``; rg gets it as ``--type-add``),
  matched against file names, together with ``glob`` when both are given;
- with ``multiline``, let the pattern span lines (``.`` matches a newline):
  every line a match touches is a matching line;
- with ``-o`` (content mode), print each non-empty matched part on its own
  line instead of the whole line.

``files_with_matches`` lists are then sorted newest first; ``offset`` skips
that many lines or entries of the final list and ``head_limit`` (default
``DEFAULT_HEAD_LIMIT``, Claude Code's; 0 for none) keeps the next ones.
"""

from __future__ import annotations

import re
import shutil
from bisect import bisect_right
import subprocess
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from types import MappingProxyType
from typing import Literal

from pydantic import Field

from swarm.agent.tool_api.base import Tool
from swarm.agent.tool_api.context import ToolContext, ToolError
from swarm.agent.tools.files import SNIFF_BYTES, truncate_line
from swarm.agent.tool_api.inputs import NoneOmitted, NonNegInt, ToolInput
from swarm.agent.tool_api.walking import (
    VCS_DIRS,
    glob_regex,
    newest_first,
    split_base,
    walk_files,
)

MAX_GLOB_RESULTS = 1000
MAX_GREP_OUTPUT_CHARS = 30_000
DEFAULT_HEAD_LIMIT = 250
"""Grep's ``head_limit`` when the call sets none (Claude Code's default); 0 means unlimited."""

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


def _search_root(ctx: ToolContext, path: str | None) -> Path:
    root = ctx.resolve(path) if path else ctx.identity.cwd
    if not root.exists():
        raise ToolError(f"path not found: {root}")
    return root


# --- Glob --------------------------------------------------------------------


class GlobInput(ToolInput):
    pattern: str = Field(
        description="Glob pattern matched against paths relative to `path`, e.g. `**/*.py` or "
        "`src/**/*.{ts,tsx}`. `**` matches any number of directories; `*` stays within one."
    )
    path: str | NoneOmitted = Field(
        default=None, description="Directory to search in (default: the working directory)."
    )


class GlobTool(Tool[GlobInput]):
    name = "Glob"
    description = (
        "Find files by name pattern (e.g. `**/*.py`, `src/**/test_*.ts`). Returns absolute paths, "
        f"most recently modified first, at most {MAX_GLOB_RESULTS}. Skips .git directories. "
        "Use Grep to search file contents."
    )
    input_model = GlobInput
    read_only = True

    def run(self, args: GlobInput, ctx: ToolContext) -> str:
        root, pattern = split_base(args.pattern, _search_root(ctx, args.path))
        if not root.is_dir():
            raise ToolError(f"not a directory: {root} (Glob searches a directory; use Read for a file)")
        rx = glob_regex(pattern)
        found = newest_first(path for path, rel in walk_files(root) if rx.match(rel))
        if not found:
            return "No files found"
        lines = [str(p) for p in found[:MAX_GLOB_RESULTS]]
        if len(found) > MAX_GLOB_RESULTS:
            lines.append(
                f"(showing the {MAX_GLOB_RESULTS} most recently modified of {len(found)} files; "
                "use a narrower pattern or path)"
            )
        return "\n".join(lines)


# --- Grep --------------------------------------------------------------------


class GrepInput(ToolInput):
    pattern: str = Field(description="Regular expression to search for in file contents.")
    path: str | NoneOmitted = Field(
        default=None, description="File or directory to search (default: the working directory)."
    )
    glob: str | NoneOmitted = Field(
        default=None,
        description="Only search files matching this glob, e.g. `*.py` or `*.{ts,tsx}` (matched "
        "against the file name; against the relative path if it contains `/`).",
    )
    output_mode: OutputMode = Field(
        default="files_with_matches",
        description="`files_with_matches` (default): paths of matching files; `content`: matching "
        "lines; `count`: number of matching lines per file.",
    )
    case_insensitive: bool = Field(default=False, alias="-i", description="Case-insensitive search.")
    line_numbers: bool = Field(
        default=True, alias="-n", description="Show line numbers (content mode; default true)."
    )
    after: NonNegInt | NoneOmitted = Field(
        default=None, alias="-A", description="Lines of context after each match (content mode)."
    )
    before: NonNegInt | NoneOmitted = Field(
        default=None, alias="-B", description="Lines of context before each match (content mode)."
    )
    around: NonNegInt | NoneOmitted = Field(default=None, alias="-C", description="Alias for context.")
    context: NonNegInt | NoneOmitted = Field(
        default=None, description="Lines of context before and after each match (content mode)."
    )
    only_matching: bool = Field(
        default=False, alias="-o",
        description="Print only the matched parts of each matching line, one per output line (content mode).",
    )
    type: str | NoneOmitted = Field(
        default=None,
        description="Only search files of this type (ripgrep's --type), e.g. `py`, `js`, `ts`, `rust`, `go`.",
    )
    multiline: bool = Field(
        default=False,
        description="Let the pattern span lines: `.` matches newlines too (ripgrep's -U --multiline-dotall).",
    )
    head_limit: NonNegInt | NoneOmitted = Field(
        default=None,
        description=f"Show only the first N output lines (content) or entries (files, count); default "
        f"{DEFAULT_HEAD_LIMIT}, 0 for unlimited.",
    )
    offset: NonNegInt | NoneOmitted = Field(
        default=None, description="Skip the first N lines or entries before applying head_limit (default 0)."
    )


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

    @classmethod
    def from_input(cls, args: GrepInput, ctx: ToolContext) -> GrepQuery:
        content = args.output_mode == "content"
        around = args.context if args.context is not None else (args.around or 0)
        return cls(
            pattern=args.pattern, root=_search_root(ctx, args.path), glob=args.glob,
            mode=args.output_mode, ignore_case=args.case_insensitive, numbers=args.line_numbers,
            before=(args.before if args.before is not None else around) if content else 0,
            after=(args.after if args.after is not None else around) if content else 0,
            only_matching=args.only_matching and content, multiline=args.multiline,
            file_globs=file_type_globs(args.type) if args.type else (), type=args.type,
        )


class _Detect(Enum):
    DETECT = "detect"


DETECT = _Detect.DETECT
"""``GrepTool(rg_path=DETECT)``: use ``rg`` from PATH if there is one."""


class GrepTool(Tool[GrepInput]):
    name = "Grep"
    description = (
        "Search file contents with a regular expression (ripgrep syntax). output_mode "
        "`files_with_matches` (default) lists matching files newest first; `content` shows matching "
        "lines as path:line:text (with -A/-B/-C context lines as path-line-text); `count` shows "
        "path:count. Filter files with `glob`; `-i` ignores case; `head_limit` caps the output. "
        "Skips binary files and .git directories."
    )
    input_model = GrepInput
    read_only = True
    max_result_chars = MAX_GREP_OUTPUT_CHARS
    truncation_hint = "use head_limit or a narrower search"

    def __init__(self, rg_path: str | _Detect | None = DETECT) -> None:
        self.rg_path: str | None = shutil.which("rg") if rg_path is DETECT else rg_path

    def run(self, args: GrepInput, ctx: ToolContext) -> str:
        query = GrepQuery.from_input(args, ctx)
        results = rg_grep(self.rg_path, query) if self.rg_path else python_grep(query)
        if not results:
            return "No files found" if query.mode == "files_with_matches" else "No matches found"
        if query.mode == "files_with_matches":
            results = [str(p) for p in newest_first(Path(r) for r in results)]
        head_limit = DEFAULT_HEAD_LIMIT if args.head_limit is None else args.head_limit
        return _format_results(results, head_limit, args.offset or 0, query.mode)


def _format_results(results: list[str], head_limit: int, offset: int, mode: OutputMode) -> str:
    """The page ``offset``..``offset + head_limit`` of the results (0: no limit), with a note when cut."""
    end = offset + head_limit if head_limit else len(results)
    shown = results[offset:end]
    lines = [truncate_line(line) for line in shown]
    if mode == "files_with_matches":
        lines.insert(0, f"Found {len(results)} file{'s' if len(results) != 1 else ''}")
    more = head_limit and end < len(results)
    if more and offset:
        lines.append(f"(showing results {offset + 1}-{offset + len(shown)} of {len(results)}; "
                     "use offset and head_limit to see more)")
    elif more:
        lines.append(f"(showing the first {len(shown)} of {len(results)} results; raise head_limit to see more)")
    return "\n".join(lines)  # cut at max_result_chars by the executor


# --- Grep backends -----------------------------------------------------------


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
