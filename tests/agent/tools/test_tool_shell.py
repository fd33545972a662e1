"""Bash with real subprocesses: output, exit codes, caps, timeouts, background."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import psutil
import pytest

from swarm.agent.tool_api.processes import stop_background
from swarm.agent.tools import BashTool, ToolContext, ToolError

Call = Callable[..., str]
"""The ``call`` fixture: validate raw input through the tool's model, run the tool."""


def alive(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


def wait_until(check: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


@pytest.fixture
def pidfile(work: Path) -> Iterator[Path]:
    """A file the command appends pids to; any pid still alive at teardown is SIGKILLed."""
    path = work / "pids"
    yield path
    if path.exists():
        for pid in map(int, path.read_text().split()):
            # Cleanup only: the assertions already ran; a pid that is gone is fine.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


def read_pids(path: Path) -> list[int]:
    return [int(p) for p in path.read_text().split()]


def test_output_combines_stdout_and_stderr(call: Call) -> None:
    out = call(BashTool(), command="echo out; echo err >&2", description="print two lines")
    assert out.splitlines() == ["out", "err"]


def test_no_output(call: Call) -> None:
    assert call(BashTool(), command="true") == "(no output)"


def test_nonzero_exit_is_an_error_result_with_output(call: Call) -> None:
    with pytest.raises(ToolError) as err:
        call(BashTool(), command="echo partial; exit 3")
    assert str(err.value) == "partial\nexit code 3"


def test_killed_by_signal(call: Call) -> None:
    with pytest.raises(ToolError, match="killed by signal SIGKILL"):
        call(BashTool(), command="kill -9 $$")


def test_runs_in_cwd_with_inherited_env_and_no_stdin(work: Path, call: Call, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWARM_TOOL_TEST", "inherited")
    out = call(BashTool(), command='pwd; echo "$SWARM_TOOL_TEST"; cat; echo made > rel.txt')
    assert out.splitlines() == [str(work), "inherited"]
    assert (work / "rel.txt").read_text() == "made\n"


def test_bad_cwd_is_a_tool_error(tmp_path: Path, call: Call, ctx: ToolContext) -> None:
    ctx.identity = replace(ctx.identity, cwd=tmp_path / "gone")
    with pytest.raises(ToolError, match="could not start"):
        call(BashTool(), command="true")


def test_output_is_capped_keeping_head_and_tail(call: Call) -> None:
    command = "printf START; head -c 1000000 /dev/zero | tr '\\0' x; printf END"
    out = call(BashTool(), command=command)
    assert out.startswith("START")
    assert out.endswith("END")
    assert "\n[... 970008 chars truncated ...]\n" in out
    assert len(out) < 30_100


def test_timeout_kills_the_whole_tree(call: Call, pidfile: Path) -> None:
    command = (
        "echo $$ > pids; echo started; "
        "sleep 100 & echo $! >> pids; "                       # same process group
        "setsid sleep 100 & echo $! >> pids; "                # escaped to its own session
        "sleep 100"
    )
    started = time.monotonic()
    with pytest.raises(ToolError) as err:
        call(BashTool(kill_grace=1.0), command=command, timeout=1000)
    assert time.monotonic() - started < 4
    assert str(err.value).startswith("Command timed out after 1000 ms")
    assert "started" in str(err.value)
    pids = read_pids(pidfile)
    assert len(pids) == 3
    assert [pid for pid in pids if alive(pid)] == []


def test_timeout_escalates_to_sigkill(call: Call, pidfile: Path) -> None:
    command = "echo $$ > pids; trap '' TERM; sleep 100 & echo $! >> pids; wait"
    with pytest.raises(ToolError, match="timed out after 300 ms"):
        call(BashTool(kill_grace=0.3), command=command, timeout=300)
    pids = read_pids(pidfile)
    assert len(pids) == 2
    assert [pid for pid in pids if alive(pid)] == []


def test_leftover_process_holding_output_is_stopped(call: Call, pidfile: Path) -> None:
    out = call(BashTool(), command="sleep 100 & echo $! > pids; echo done")
    assert out.startswith("done\n")
    assert "use run_in_background" in out
    assert not alive(read_pids(pidfile)[0])


def test_detached_leftover_with_redirected_output_survives(call: Call, pidfile: Path) -> None:
    started = time.monotonic()
    out = call(BashTool(), command="sleep 100 > /dev/null 2>&1 & echo $! > pids; echo done")
    assert out == "done"
    assert time.monotonic() - started < 1
    assert alive(read_pids(pidfile)[0])


def test_run_in_background_returns_at_once(call: Call, ctx: ToolContext) -> None:
    started = time.monotonic()
    out = call(BashTool(), command="echo hello-bg; sleep 100", run_in_background=True)
    assert time.monotonic() - started < 1
    assert len(ctx.background) == 1
    proc = ctx.background[0]
    assert proc.poll() is None
    assert os.getsid(proc.pid) == proc.pid, "own session"
    assert f"pid {proc.pid}" in out
    log = Path(out.split("goes to ")[1].split(";")[0])
    assert wait_until(lambda: "hello-bg" in log.read_text())


def test_background_output_goes_to_the_agents_own_directory_removed_when_its_commands_are_stopped(
        work: Path, call: Call, ctx: ToolContext) -> None:
    """A teammate, subagent or session that ran background commands leaves nothing in /tmp once it is done."""
    first = Path(call(BashTool(), command="echo one; sleep 100", run_in_background=True).split("goes to ")[1]
                 .split(";")[0])
    second = Path(call(BashTool(), command="echo two", run_in_background=True).split("goes to ")[1].split(";")[0])
    assert first.parent == second.parent == ctx.background_logs  # one directory per agent, whichever tool made it
    other = ToolContext(ctx.identity)
    third = Path(BashTool().run(BashTool.input_model.model_validate({"command": "echo three",
                                                                      "run_in_background": True}), other)
                 .split("goes to ")[1].split(";")[0])
    assert third.parent == other.background_logs != ctx.background_logs  # another agent: its own
    assert wait_until(lambda: "one" in first.read_text())
    proc = ctx.background[0]
    stop_background(ctx)
    assert not first.parent.exists() and ctx.background_logs is None
    assert proc.poll() is not None  # stopped before its output went
    assert third.exists()  # the other agent's output stays until its own commands are stopped
    stop_background(other)
    assert not third.parent.exists()
    stop_background(ctx)  # twice is safe
