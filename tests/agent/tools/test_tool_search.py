"""Glob and Grep on a real tree; Grep on both backends (rg only where installed)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from swarm.agent.tools import GlobTool, GrepTool, ToolError
from swarm.agent.tools.search import DETECT, glob_regex

Call = Callable[..., str]
"""The ``call`` fixture: validate raw input through the tool's model, run the tool."""


def touch(path: Path, text: str = "", mtime: float | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


# --- glob patterns -----------------------------------------------------------


@pytest.mark.parametrize(("pattern", "path", "matches"), [
    ("**/*.py", "a.py", True),
    ("**/*.py", "x/y/a.py", True),
    ("*.py", "x/a.py", False),
    ("src/**/test_*.py", "src/test_a.py", True),
    ("src/**/test_*.py", "src/k/test_a.py", True),
    ("*.{ts,tsx}", "a.tsx", True),
    ("*.{ts,tsx}", "a.js", False),
    ("file[0-9].txt", "file7.txt", True),
    ("file[!0-9].txt", "file7.txt", False),
    ("a?c", "a/c", False),
])
def test_glob_regex(pattern: str, path: str, matches: bool) -> None:
    assert bool(glob_regex(pattern).match(path)) is matches


# --- Glob --------------------------------------------------------------------


def test_glob_newest_first_and_skips_git(work: Path, call: Call) -> None:
    old = touch(work / "old.py", mtime=1_000_000)
    new = touch(work / "pkg/new.py", mtime=3_000_000)
    mid = touch(work / "pkg/deep/mid.py", mtime=2_000_000)
    touch(work / ".git/hooks/hook.py", mtime=4_000_000)
    touch(work / "notes.txt", mtime=5_000_000)
    assert call(GlobTool(), pattern="**/*.py").splitlines() == [str(new), str(mid), str(old)]
    assert call(GlobTool(), pattern="*.py").splitlines() == [str(old)]
    assert call(GlobTool(), pattern="pkg/**/*.py").splitlines() == [str(new), str(mid)]
    assert call(GlobTool(), pattern="*.py", path="pkg/deep").splitlines() == [str(mid)]
    assert call(GlobTool(), pattern=f"{work}/pkg/*.py").splitlines() == [str(new)]


def test_glob_no_match_and_missing_dir(work: Path, call: Call) -> None:
    assert call(GlobTool(), pattern="**/*.rs") == "No files found"
    with pytest.raises(ToolError, match="path not found"):
        call(GlobTool(), pattern="*", path="missing")


def test_glob_caps_results(work: Path, call: Call) -> None:
    for i in range(1005):
        (work / f"f{i:04d}.txt").touch()
    out = call(GlobTool(), pattern="*.txt").splitlines()
    assert len(out) == 1001
    assert "1000 most recently modified of 1005" in out[-1]


# --- Grep --------------------------------------------------------------------


@pytest.fixture(params=["python", "rg"])
def grep(request: pytest.FixtureRequest) -> GrepTool:
    if request.param == "python":
        return GrepTool(rg_path=None)
    rg = shutil.which("rg")
    if rg is None:
        pytest.skip("ripgrep (rg) is not installed")
    return GrepTool(rg_path=rg)


@pytest.fixture
def tree(work: Path) -> dict[str, Path]:
    return {
        "a": touch(work / "a.py", "import os\ndef Foo():\n    return 1\n\n\ndef bar():\n    return foo\n", 3_000_000),
        "b": touch(work / "b.txt", "foo here\nnothing\nFOO again\n", 2_000_000),
        "c": touch(work / "sub/c.py", "x = 'foo'\n", 1_000_000),
        "git": touch(work / ".git/config", "foo\n", 4_000_000),
        "bin": _binary(work / "data.bin"),
    }


def _binary(path: Path) -> Path:
    path.write_bytes(b"foo\x00\x01\x02")
    return path


def test_grep_default_backend_detection() -> None:
    assert GrepTool().rg_path == shutil.which("rg")
    assert GrepTool(rg_path=DETECT).rg_path == shutil.which("rg")
    assert GrepTool(rg_path=None).rg_path is None


def test_grep_files_with_matches(grep: GrepTool, tree: dict[str, Path], call: Call) -> None:
    out = call(grep, pattern="foo").splitlines()
    assert out == ["Found 3 files", str(tree["a"]), str(tree["b"]), str(tree["c"])]


def test_grep_content_case_insensitive_with_glob(grep: GrepTool, tree: dict[str, Path], call: Call) -> None:
    b = tree["b"]
    out = call(grep, pattern="foo", output_mode="content", glob="*.txt", **{"-i": True})
    assert out.splitlines() == [f"{b}:1:foo here", f"{b}:3:FOO again"]
    plain = call(grep, pattern="foo", output_mode="content", glob="*.txt", **{"-n": False})
    assert plain.splitlines() == [f"{b}:foo here"]


def test_grep_context(grep: GrepTool, tree: dict[str, Path], call: Call) -> None:
    a = tree["a"]
    both = call(grep, pattern="^def", path="a.py", output_mode="content", **{"-C": 1})
    assert both.splitlines() == [
        f"{a}-1-import os", f"{a}:2:def Foo():", f"{a}-3-    return 1", "--",
        f"{a}-5-", f"{a}:6:def bar():", f"{a}-7-    return foo",
    ]
    after = call(grep, pattern="^def", path="a.py", output_mode="content", **{"-A": 1})
    assert after.splitlines() == [
        f"{a}:2:def Foo():", f"{a}-3-    return 1", "--", f"{a}:6:def bar():", f"{a}-7-    return foo",
    ]
    before = call(grep, pattern="return", path="a.py", output_mode="content", **{"-B": 2, "-C": 5})
    assert before.splitlines() == [  # -B overrides -C before the match; -C still sets "after"
        f"{a}-1-import os", f"{a}-2-def Foo():", f"{a}:3:    return 1",
        f"{a}-4-", f"{a}-5-", f"{a}-6-def bar():", f"{a}:7:    return foo",
    ]


def test_grep_count(grep: GrepTool, tree: dict[str, Path], call: Call) -> None:
    out = call(grep, pattern="foo", output_mode="count", **{"-i": True})
    assert out.splitlines() == [f"{tree['a']}:2", f"{tree['b']}:2", f"{tree['c']}:1"]


def test_grep_glob_on_relative_path(grep: GrepTool, tree: dict[str, Path], call: Call) -> None:
    assert call(grep, pattern="foo", glob="sub/*.py").splitlines() == ["Found 1 file", str(tree["c"])]


def test_grep_head_limit(grep: GrepTool, tree: dict[str, Path], call: Call) -> None:
    out = call(grep, pattern="foo", output_mode="content", head_limit=2, **{"-i": True}).splitlines()
    assert out[:2] == [f"{tree['a']}:2:def Foo():", f"{tree['a']}:7:    return foo"]
    assert out[2] == "(showing the first 2 of 5 results; raise head_limit to see more)"
    files = call(grep, pattern="foo", head_limit=1).splitlines()
    assert files[:2] == ["Found 3 files", str(tree["a"])]
    assert len(files) == 3


def test_grep_no_match_and_errors(grep: GrepTool, tree: dict[str, Path], call: Call) -> None:
    assert call(grep, pattern="zebra") == "No files found"
    assert call(grep, pattern="zebra", output_mode="content") == "No matches found"
    with pytest.raises(ToolError):
        call(grep, pattern="(unclosed")
    with pytest.raises(ToolError, match="path not found"):
        call(grep, pattern="foo", path="missing")


def test_a_long_grep_result_is_cut_where_every_tool_result_is_with_a_hint(work: Path) -> None:
    """The cap is the executor's (``Tool.max_result_chars``): what the model reads, whatever ``run`` returned."""
    from swarm.agent.executor import execute
    from swarm.agent.tool_api.context import AgentIdentity, ToolContext
    from swarm.agent.tools.search import MAX_GREP_OUTPUT_CHARS
    from swarm.models.messages import ToolUseBlock

    for n in range(400):
        touch(work / f"dir{n:03d}" / ("x" * 120 + ".txt"), "needle\n")
    tool = GrepTool(rg_path=None)
    result = execute(ToolUseBlock(id="t1", name="Grep", input={"pattern": "needle"}), {"Grep": tool},
                     ToolContext(AgentIdentity(cwd=work)))
    assert not result.is_error and len(result.content) < MAX_GREP_OUTPUT_CHARS + 100
    assert result.content.endswith("chars truncated; use head_limit or a narrower search ...]")


# --- Grep parameters Claude Code has (type, multiline, -o, offset, context, head_limit default) ----------


def test_grep_type_filters_by_file_type(grep: GrepTool, tree: dict[str, Path], work: Path, call: Call) -> None:
    touch(work / "web/app.js", "foo\n", 500_000)
    touch(work / "stubs/d.pyi", "foo\n", 400_000)
    out = call(grep, pattern="foo", type="py").splitlines()
    assert out == ["Found 3 files", str(tree["a"]), str(tree["c"]), str(work / "stubs/d.pyi")]
    assert call(grep, pattern="foo", type="js").splitlines() == ["Found 1 file", str(work / "web/app.js")]
    assert call(grep, pattern="foo", type="py", glob="sub/*").splitlines() == ["Found 1 file", str(tree["c"])]
    with pytest.raises(ToolError, match="unknown file type 'nosuch'"):
        call(grep, pattern="foo", type="nosuch")


def test_grep_multiline_spans_lines(grep: GrepTool, tree: dict[str, Path], call: Call) -> None:
    a = tree["a"]
    if grep.rg_path is None:  # rg refuses a literal newline without multiline
        assert call(grep, pattern=r"Foo\(\):\n\s+return", path="a.py") == "No files found"
    assert call(grep, pattern=r"Foo\(\):\n\s+return", path="a.py", multiline=True).splitlines() == [
        "Found 1 file", str(a)]
    out = call(grep, pattern=r"def Foo.*?return", path="a.py", output_mode="content", multiline=True)
    assert out.splitlines() == [f"{a}:2:def Foo():", f"{a}:3:    return 1"]


def test_grep_only_matching(grep: GrepTool, tree: dict[str, Path], call: Call) -> None:
    b = tree["b"]
    out = call(grep, pattern=r"fo+ \w+", path="b.txt", output_mode="content", **{"-o": True, "-i": True})
    assert out.splitlines() == [f"{b}:1:foo here", f"{b}:3:FOO again"]
    out = call(grep, pattern=r"o", path="b.txt", output_mode="content", **{"-o": True})
    assert out.splitlines() == [f"{b}:1:o", f"{b}:1:o", f"{b}:2:o"]


def test_grep_offset_skips_entries_before_head_limit(grep: GrepTool, tree: dict[str, Path], call: Call) -> None:
    out = call(grep, pattern="foo", output_mode="content", offset=1, head_limit=2, **{"-i": True}).splitlines()
    assert out[:2] == [f"{tree['a']}:7:    return foo", f"{tree['b']}:1:foo here"]
    assert out[2] == "(showing results 2-3 of 5; use offset and head_limit to see more)"
    files = call(grep, pattern="foo", offset=2).splitlines()
    assert files == ["Found 3 files", str(tree["c"])]


def test_grep_head_limit_defaults_to_250(grep: GrepTool, work: Path, call: Call) -> None:
    touch(work / "many.txt", "hit\n" * 300)
    out = call(grep, pattern="hit", output_mode="content").splitlines()
    assert len(out) == 251 and out[-1] == "(showing the first 250 of 300 results; raise head_limit to see more)"
    assert len(call(grep, pattern="hit", output_mode="content", head_limit=0).splitlines()) == 300
