"""Read, Write and Edit: the file tools, with Claude Code's names and fields.

All three take ``file_path`` absolute or relative to the agent's cwd. Read
streams the file (so a 20 MB log read with ``offset``/``limit`` never sits in
memory whole) and numbers lines like ``cat -n``; a read over ``MAX_READ_TOKENS``
is refused by the executor with an error pointing at offset/limit; an image or a
PDF is handed to ``tools.media`` and comes back as a block. Write and Edit check the
agent's write roots first, then replace the file atomically: a temp file in
the same directory, fsynced, ``os.replace``-d over the target, keeping an
existing file's mode. Every ``OSError`` becomes a ``ToolError`` here.
"""

from __future__ import annotations

import codecs
import os
from collections.abc import Iterator
from itertools import islice
from pathlib import Path
from typing import BinaryIO

from pydantic import Field

from swarm.agent.output_cap import ToolOutput
from swarm.agent.tool_api.base import Tool
from swarm.agent.tool_api.context import ToolContext, ToolError
from swarm.agent.tool_api.inputs import NoneOmitted, NonNegInt, PosInt, ToolInput
from swarm.agent.tools.media import MAX_PAGES_PER_READ, MAX_WHOLE_PDF_PAGES, PDF, media_type, read_image, read_pdf
from swarm.core.fileio import replace_file

DEFAULT_LIMIT = 2000
MAX_READ_TOKENS = 25_000
"""Most tokens (estimated) one Read returns; more is an error pointing at offset/limit, as in Claude Code."""
MAX_LINE_CHARS = 2000
MAX_WHOLE_FILE_BYTES = 10 * 1024 * 1024
SNIFF_BYTES = 8192
SKIP_CHUNK_BYTES = 256 * 1024


# --- helpers shared with the other tool modules ------------------------------


def os_error(exc: OSError, path: Path, verb: str) -> ToolError:
    """Translate an OSError into a ToolError the model can act on."""
    if isinstance(exc, FileNotFoundError):
        return ToolError(f"file not found: {path}")
    if isinstance(exc, IsADirectoryError):
        return ToolError(f"{path} is a directory, not a file")
    if isinstance(exc, PermissionError):
        return ToolError(f"permission denied: cannot {verb} {path}")
    return ToolError(f"cannot {verb} {path}: {exc.strerror or exc}")


def looks_binary(head: bytes) -> bool:
    """True if ``head`` (a file's first bytes) is not UTF-8 text."""
    if b"\x00" in head:
        return True
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        return True
    return False


def truncate_line(line: str, limit: int = MAX_LINE_CHARS) -> str:
    """``line`` cut to ``limit`` chars, with a marker when cut."""
    if len(line) <= limit:
        return line
    return f"{line[:limit]} [... line truncated, {len(line) - limit} more chars]"


def _binary_error(path: Path) -> ToolError:
    return ToolError(f"{path} looks like a binary file (not UTF-8 text); Read only shows text files")


# --- Read --------------------------------------------------------------------


class ReadInput(ToolInput):
    file_path: str = Field(description="Path of the file to read: absolute, or relative to the working directory.")
    offset: NonNegInt | NoneOmitted = Field(
        default=None,
        description="1-based line number to start reading at. "
        "Give it (with limit) for files too large to read at once.",
    )
    limit: PosInt | NoneOmitted = Field(
        default=None,
        description=f"Number of lines to read (default {DEFAULT_LIMIT}).",
    )
    pages: str | NoneOmitted = Field(
        default=None,
        description=f'Page range for PDF files (e.g. "1-5", "3", "10-20"). Only for PDF files; at most '
        f"{MAX_PAGES_PER_READ} pages per request. Required for a PDF of more than {MAX_WHOLE_PDF_PAGES} pages.",
    )


class ReadTool(Tool[ReadInput]):
    name = "Read"
    description = (
        "Read a file from the local filesystem. Text comes back with lines numbered like `cat -n` "
        f"(line number, a tab, the line). Reads up to {DEFAULT_LIMIT} lines from the start unless "
        "offset/limit are given; lines longer than 2000 characters are truncated. A read of more than "
        f"{MAX_READ_TOKENS:,} tokens is refused: read large files in pieces with offset/limit. Images "
        "(PNG, JPEG, GIF, WebP) are shown to you as images, up to 5 MB. PDFs are given to you as documents: "
        f"whole up to {MAX_WHOLE_PDF_PAGES} pages, else give pages (e.g. \"1-5\"), at most "
        f"{MAX_PAGES_PER_READ} at a time. Other binary files are refused. To list a directory use Glob or Bash `ls`."
    )
    input_model = ReadInput
    read_only = True
    max_result_tokens = MAX_READ_TOKENS
    truncation_hint = "read a part of the file with offset and limit (e.g. limit=300), or find the lines you need with Grep"

    def run(self, args: ReadInput, ctx: ToolContext) -> ToolOutput:
        path = ctx.resolve(args.file_path)
        start = max(args.offset or 1, 1)
        limit = args.limit or DEFAULT_LIMIT
        try:
            size = _check_readable(path)
            with path.open("rb") as fh:
                kind = media_type(fh.read(SNIFF_BYTES))
                if args.pages is not None and kind != PDF:
                    raise ToolError(f"pages is for PDF files and {path} is not a PDF; read text with offset and limit")
                if kind == PDF:
                    return read_pdf(path, size, args.pages)
                if kind is not None:
                    return read_image(path, size, kind)  # type: ignore[arg-type]
                if size == 0:
                    return f"(the file {path} exists but is empty)"
                _check_whole(path, size, whole=args.offset is None and args.limit is None)
                fh.seek(0)
                return _read_numbered(fh, path, start, limit)
        except OSError as exc:
            raise os_error(exc, path, "read") from exc


def _check_readable(path: Path) -> int:
    """The size of ``path``; ToolError for a directory."""
    if path.is_dir():
        raise ToolError(f"{path} is a directory; use Glob or Bash `ls` to list its contents")
    return path.stat().st_size


def _check_whole(path: Path, size: int, whole: bool) -> None:
    """ToolError for a whole read of a text file too large to read at once."""
    if whole and size > MAX_WHOLE_FILE_BYTES:
        raise ToolError(
            f"{path} is {size:,} bytes, over the {MAX_WHOLE_FILE_BYTES:,}-byte limit for a whole-file "
            "read; use offset and limit to read part of it (or Grep to find the lines you need)"
        )


def _read_numbered(fh: BinaryIO, path: Path, start: int, limit: int) -> str:
    """Lines ``start .. start+limit-1`` of ``fh``, numbered, plus a note if more follow."""
    if looks_binary(fh.read(SNIFF_BYTES)):
        raise _binary_error(path)
    fh.seek(0)
    skipped = _skip_lines(fh, start - 1)
    lines = _text_lines(fh, path)
    out = [f"{n:>6}\t{truncate_line(line)}" for n, line in enumerate(islice(lines, limit), start)]
    if not out:
        return f"(the file {path} has only {skipped} lines; offset {start} is past the end)"
    if next(lines, None) is not None:
        out.append(f"(more lines follow; continue with offset={start + len(out)})")
    return "\n".join(out)


def _skip_lines(fh: BinaryIO, count: int) -> int:
    """Move ``fh`` past ``count`` lines, counting newlines chunk by chunk.

    Returns the number of lines skipped: ``count``, or the file's line count
    if it has fewer lines.
    """
    skipped, partial = 0, False
    while skipped < count:
        chunk = fh.read(SKIP_CHUNK_BYTES)
        if not chunk:
            return skipped + partial
        newlines = chunk.count(b"\n")
        if skipped + newlines >= count:
            pos = -1
            for _ in range(count - skipped):
                pos = chunk.index(b"\n", pos + 1)
            fh.seek(pos + 1 - len(chunk), os.SEEK_CUR)
            return count
        skipped += newlines
        partial = not chunk.endswith(b"\n")
    return skipped


def _text_lines(fh: BinaryIO, path: Path) -> Iterator[str]:
    """Decoded lines of ``fh`` without their line endings, streamed."""
    for raw in fh:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _binary_error(path) from exc
        yield text.rstrip("\r\n")


# --- atomic writes ------------------------------------------------------------


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically, keeping an existing file's mode.

    Writes through a symlink to its target; the temp file and the checks are
    core's one primitive (``replace_file``). Raises OSError (callers translate).
    """
    target = path.resolve() if path.is_symlink() else path
    target.parent.mkdir(parents=True, exist_ok=True)
    mode = target.stat().st_mode & 0o7777 if target.exists() else None
    replace_file(target, data, mode=mode, create_mode=0o666)


# --- Write -------------------------------------------------------------------


class WriteInput(ToolInput):
    file_path: str = Field(description="Path of the file to write: absolute, or relative to the working directory.")
    content: str = Field(description="The complete new content of the file.")


class WriteTool(Tool[WriteInput]):
    name = "Write"
    description = (
        "Write a file, replacing it if it exists and creating missing parent directories. "
        "The content is the whole file. To change part of an existing file, prefer Edit."
    )
    input_model = WriteInput
    read_only = False

    def run(self, args: WriteInput, ctx: ToolContext) -> str:
        path = ctx.resolve(args.file_path)
        ctx.check_writable(path)
        data = args.content.encode("utf-8")
        try:
            if path.is_dir():
                raise ToolError(f"{path} is a directory; give the path of a file to write")
            existed = path.exists()
            atomic_write(path, data)
        except OSError as exc:
            raise os_error(exc, path, "write") from exc
        verb = "Overwrote" if existed else "Created"
        return f"{verb} {path} ({len(data)} bytes)"


# --- Edit --------------------------------------------------------------------


class EditInput(ToolInput):
    file_path: str = Field(description="Path of the file to edit: absolute, or relative to the working directory.")
    old_string: str = Field(
        description="The exact text to replace, including whitespace and indentation. "
        "It must occur exactly once unless replace_all is true."
    )
    new_string: str = Field(description="The text to put in its place (must differ from old_string).")
    replace_all: bool = Field(default=False, description="Replace every occurrence of old_string (default false).")


class EditTool(Tool[EditInput]):
    name = "Edit"
    description = (
        "Replace an exact string in an existing file. old_string must match the file exactly "
        "(whitespace and indentation included) and occur once, unless replace_all is true. "
        "Read the file first. To create a new file use Write."
    )
    input_model = EditInput
    read_only = False

    def run(self, args: EditInput, ctx: ToolContext) -> str:
        path = ctx.resolve(args.file_path)
        ctx.check_writable(path)
        _check_edit_args(args)
        try:
            text = _read_text(path)
            new_text, count = _replace(text, args, path)
            atomic_write(path, new_text.encode("utf-8"))
        except OSError as exc:
            raise os_error(exc, path, "edit") from exc
        plural = "occurrence" if count == 1 else "occurrences"
        return f"Edited {path}: replaced {count} {plural}"


def _check_edit_args(args: EditInput) -> None:
    if args.old_string == "":
        raise ToolError("old_string is empty; give the exact text to replace (use Write to create or overwrite a file)")
    if args.old_string == args.new_string:
        raise ToolError("old_string and new_string are identical; nothing would change")


def _read_text(path: Path) -> str:
    """The whole text of ``path``, for Edit; ToolError if missing or binary."""
    if not path.exists():
        raise ToolError(f"file not found: {path} (Edit changes existing files; use Write to create one)")
    if path.is_dir():
        raise ToolError(f"{path} is a directory, not a file")
    data = path.read_bytes()
    if looks_binary(data[:SNIFF_BYTES]):
        raise ToolError(f"{path} looks like a binary file; Edit only changes UTF-8 text files")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(f"{path} is not valid UTF-8 text; Edit only changes UTF-8 text files") from exc


def _replace(text: str, args: EditInput, path: Path) -> tuple[str, int]:
    """``text`` with the replacement made, and the number of replacements."""
    count = text.count(args.old_string)
    if count == 0:
        raise ToolError(
            f"old_string was not found in {path}. It must match exactly, including whitespace, "
            "indentation and line endings; Read the file and copy the text from it."
        )
    if count > 1 and not args.replace_all:
        raise ToolError(
            f"old_string occurs {count} times in {path}; add surrounding lines to make it unique, "
            "or set replace_all to true to replace every occurrence"
        )
    return text.replace(args.old_string, args.new_string), count
