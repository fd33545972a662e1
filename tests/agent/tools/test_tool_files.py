"""Read, Write and Edit on real files."""

from __future__ import annotations

import os
import stat
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from swarm.agent.tools import EditTool, ReadTool, ToolContext, ToolError, WriteTool

Call = Callable[..., str]
"""The ``call`` fixture: validate raw input through the tool's model, run the tool."""


def numbered(lines: list[str], start: int = 1) -> list[str]:
    return [f"{n:>6}\t{line}" for n, line in enumerate(lines, start)]


# --- Read --------------------------------------------------------------------


def test_read_numbers_lines_like_cat_n(work: Path, call: Call) -> None:
    (work / "f.txt").write_text("alpha\nbeta\ngamma\n")
    assert call(ReadTool(), file_path="f.txt").splitlines() == numbered(["alpha", "beta", "gamma"])


def test_read_offset_and_limit(work: Path, call: Call) -> None:
    (work / "f.txt").write_text("".join(f"line{i}\n" for i in range(1, 11)))
    out = call(ReadTool(), file_path=str(work / "f.txt"), offset=3, limit=2).splitlines()
    assert out[:2] == numbered(["line3", "line4"], start=3)
    assert out[2] == "(more lines follow; continue with offset=5)"
    tail = call(ReadTool(), file_path="f.txt", offset=9, limit=5).splitlines()
    assert tail == numbered(["line9", "line10"], start=9)


def test_read_offset_past_end(work: Path, call: Call) -> None:
    (work / "f.txt").write_text("one\ntwo\n")
    assert "only 2 lines" in call(ReadTool(), file_path="f.txt", offset=10)


def test_read_default_limit_is_2000_lines(work: Path, call: Call) -> None:
    (work / "f.txt").write_text("x\n" * 2500)
    out = call(ReadTool(), file_path="f.txt").splitlines()
    assert len(out) == 2001
    assert out[-2] == f"{2000:>6}\tx"
    assert "offset=2001" in out[-1]


def test_read_truncates_long_lines(work: Path, call: Call) -> None:
    (work / "f.txt").write_text("a" * 5000 + "\nshort\n")
    first, second = call(ReadTool(), file_path="f.txt").splitlines()
    assert first.startswith(f"{1:>6}\t" + "a" * 2000 + " [... line truncated")
    assert "a" * 2001 not in first
    assert second == f"{2:>6}\tshort"


@pytest.mark.parametrize("data", [b"ELF\x00\x01\x02binary", b"caf\xe9 latin-1 text\n"])
def test_read_refuses_binary(work: Path, call: Call, data: bytes) -> None:
    (work / "blob.bin").write_bytes(data)
    with pytest.raises(ToolError, match="binary") as err:
        call(ReadTool(), file_path="blob.bin")
    assert str(work / "blob.bin") in str(err.value)


def test_read_missing_file(work: Path, call: Call) -> None:
    with pytest.raises(ToolError) as err:
        call(ReadTool(), file_path="nope.txt")
    assert str(err.value) == f"file not found: {work / 'nope.txt'}"


def test_read_directory_suggests_glob(work: Path, call: Call) -> None:
    (work / "d").mkdir()
    with pytest.raises(ToolError, match=r"directory.*Glob"):
        call(ReadTool(), file_path="d")


def test_read_empty_file(work: Path, call: Call) -> None:
    (work / "empty.txt").touch()
    assert "is empty" in call(ReadTool(), file_path="empty.txt")


BLOCK_LINES = 100_000


@pytest.fixture(scope="module")
def huge_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ~20 MB text file whose line n reads ``row {(n-1) % BLOCK_LINES:07d}``."""
    path = tmp_path_factory.mktemp("huge") / "big.log"
    block = "".join(f"row {i:07d}\n" for i in range(BLOCK_LINES)).encode()
    with path.open("wb") as fh:
        for _ in range(17):
            fh.write(block)
    assert path.stat().st_size > 20 * 1000 * 1000
    return path


def test_read_huge_file_needs_offset_or_limit(huge_file: Path, call: Call) -> None:
    with pytest.raises(ToolError, match="offset and limit"):
        call(ReadTool(), file_path=str(huge_file))


def test_read_huge_file_streams_the_requested_lines(huge_file: Path, call: Call) -> None:
    tracemalloc.start()
    started = time.monotonic()
    try:
        out = call(ReadTool(), file_path=str(huge_file), offset=1_234_568, limit=3)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.monotonic() - started < 5
    assert out.splitlines()[:3] == numbered(["row 0034567", "row 0034568", "row 0034569"], start=1_234_568)
    assert peak < 2 * 1024 * 1024, "the file must be streamed, not read whole"


# --- Write -------------------------------------------------------------------


def test_write_creates_parent_dirs(work: Path, call: Call) -> None:
    out = call(WriteTool(), file_path="a/b/c.txt", content="héllo\n")
    assert (work / "a/b/c.txt").read_text() == "héllo\n"
    assert out == f"Created {work / 'a/b/c.txt'} (7 bytes)"


def test_write_replaces_atomically_and_keeps_mode(work: Path, call: Call) -> None:
    target = work / "run.sh"
    target.write_text("old\n")
    target.chmod(0o750)
    with target.open() as old_reader:
        call(WriteTool(), file_path="run.sh", content="new\n")
        assert old_reader.read() == "old\n", "replaced by rename, not rewritten in place"
    assert target.read_text() == "new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o750
    assert os.listdir(work) == ["run.sh"], "no temp file left behind"


def test_write_through_symlink_keeps_the_link(work: Path, call: Call) -> None:
    (work / "real.txt").write_text("old")
    (work / "link.txt").symlink_to("real.txt")
    call(WriteTool(), file_path="link.txt", content="new")
    assert (work / "link.txt").is_symlink()
    assert (work / "real.txt").read_text() == "new"


def test_write_translates_os_errors(work: Path, call: Call) -> None:
    (work / "file").write_text("x")
    with pytest.raises(ToolError, match="cannot write"):
        call(WriteTool(), file_path="file/child.txt", content="y")


def test_write_outside_write_roots_is_refused(tmp_path: Path, work: Path, ctx: ToolContext, call: Call) -> None:
    ctx.identity = replace(ctx.identity, write_roots=(work,))
    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    with pytest.raises(ToolError, match="outside"):
        call(WriteTool(), file_path=str(outside), content="changed")
    with pytest.raises(ToolError, match="outside"):
        call(WriteTool(), file_path="../new-dir/new.txt", content="x")
    assert outside.read_text() == "keep"
    assert not (tmp_path / "new-dir").exists()
    call(WriteTool(), file_path="inside.txt", content="ok")
    assert (work / "inside.txt").read_text() == "ok"


# --- Edit --------------------------------------------------------------------


def test_edit_replaces_a_unique_string(work: Path, call: Call) -> None:
    (work / "m.py").write_text("def f():\n    return 1\n")
    out = call(EditTool(), file_path="m.py", old_string="return 1", new_string="return 2")
    assert (work / "m.py").read_text() == "def f():\n    return 2\n"
    assert "replaced 1 occurrence" in out
    assert os.listdir(work) == ["m.py"]


def test_edit_non_unique_string_reports_count(work: Path, call: Call) -> None:
    (work / "m.py").write_text("x = 1\nx = 1\nx = 1\n")
    with pytest.raises(ToolError, match=r"occurs 3 times.*replace_all"):
        call(EditTool(), file_path="m.py", old_string="x = 1", new_string="x = 2")
    assert (work / "m.py").read_text() == "x = 1\nx = 1\nx = 1\n"


def test_edit_replace_all(work: Path, call: Call) -> None:
    (work / "m.py").write_text("x = 1\ny\nx = 1\n")
    out = call(EditTool(), file_path="m.py", old_string="x = 1", new_string="x = 2", replace_all=True)
    assert (work / "m.py").read_text() == "x = 2\ny\nx = 2\n"
    assert "replaced 2 occurrences" in out


def test_edit_missing_string_hints_at_whitespace(work: Path, call: Call) -> None:
    (work / "m.py").write_text("    indented\n")
    with pytest.raises(ToolError, match=r"not found.*whitespace"):
        call(EditTool(), file_path="m.py", old_string="\tindented", new_string="x")
    assert (work / "m.py").read_text() == "    indented\n"


def test_edit_identical_strings_refused(work: Path, call: Call) -> None:
    (work / "m.py").write_text("a\n")
    with pytest.raises(ToolError, match="identical"):
        call(EditTool(), file_path="m.py", old_string="a", new_string="a")


def test_edit_missing_file_suggests_write(work: Path, call: Call) -> None:
    with pytest.raises(ToolError, match=r"file not found.*Write"):
        call(EditTool(), file_path="new.py", old_string="a", new_string="b")
    assert not (work / "new.py").exists()


def test_edit_keeps_mode(work: Path, call: Call) -> None:
    script = work / "s.sh"
    script.write_text("echo a\n")
    script.chmod(0o700)
    call(EditTool(), file_path="s.sh", old_string="a", new_string="b")
    assert stat.S_IMODE(script.stat().st_mode) == 0o700


def test_edit_outside_write_roots_is_refused(tmp_path: Path, work: Path, ctx: ToolContext, call: Call) -> None:
    ctx.identity = replace(ctx.identity, write_roots=(work,))
    outside = tmp_path / "outside.py"
    outside.write_text("a = 1\n")
    with pytest.raises(ToolError, match="outside"):
        call(EditTool(), file_path=str(outside), old_string="a = 1", new_string="a = 2")
    assert outside.read_text() == "a = 1\n"


@pytest.mark.parametrize(("text", "offset", "expected"), [
    ("a\nb\nc", 3, ["c"]),
    ("a\nb\nc", 4, []),
    ("a\nb\nc\n", 4, []),
    ("a\nb\n", 2, ["b"]),
])
def test_read_offset_edges(work: Path, call: Call, text: str, offset: int, expected: list[str]) -> None:
    (work / "f.txt").write_text(text)
    out = call(ReadTool(), file_path="f.txt", offset=offset)
    if expected:
        assert out.splitlines() == numbered(expected, start=offset)
    else:
        assert "has only 3 lines" in out
