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

import shutil
from enum import Enum
from pathlib import Path

from pydantic import Field

from swarm.agent.tool_api.base import Tool
from swarm.agent.tool_api.context import ToolContext, ToolError
from swarm.agent.tools.files import truncate_line
from swarm.agent.tools.grep_search import GrepQuery, OutputMode, file_type_globs, python_grep, rg_grep
from swarm.agent.tool_api.inputs import NoneOmitted, NonNegInt, ToolInput
from swarm.agent.tool_api.walking import (
    glob_regex,
    newest_first,
    split_base,
    walk_files,
)

MAX_GLOB_RESULTS = 1000
MAX_GREP_OUTPUT_CHARS = 30_000
DEFAULT_HEAD_LIMIT = 250
"""Grep's ``head_limit`` when the call sets none (Claude Code's default); 0 means unlimited."""

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
        query = _query(args, ctx)
        results = rg_grep(self.rg_path, query) if self.rg_path else python_grep(query)
        if not results:
            return "No files found" if query.mode == "files_with_matches" else "No matches found"
        if query.mode == "files_with_matches":
            results = [str(p) for p in newest_first(Path(r) for r in results)]
        head_limit = DEFAULT_HEAD_LIMIT if args.head_limit is None else args.head_limit
        return _format_results(results, head_limit, args.offset or 0, query.mode)


def _query(args: GrepInput, ctx: ToolContext) -> GrepQuery:
    """The Grep call resolved against the agent's context, for a backend."""
    content = args.output_mode == "content"
    around = args.context if args.context is not None else (args.around or 0)
    return GrepQuery(
        pattern=args.pattern, root=_search_root(ctx, args.path), glob=args.glob,
        mode=args.output_mode, ignore_case=args.case_insensitive, numbers=args.line_numbers,
        before=(args.before if args.before is not None else around) if content else 0,
        after=(args.after if args.after is not None else around) if content else 0,
        only_matching=args.only_matching and content, multiline=args.multiline,
        file_globs=file_type_globs(args.type) if args.type else (), type=args.type,
    )


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


