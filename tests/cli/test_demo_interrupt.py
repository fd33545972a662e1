"""`swarm demo` leaves nothing behind: not after a full run, not after Ctrl-C at any moment.

The installed executable runs the demo on a private tmux server whose socket
lives under this test's ``TMUX_TMPDIR``, with ``TMPDIR`` pointing at a tmp
dir so the demo's own directory can be found. SIGINT is sent when the demo
reaches a given state (read from the demo's home, never after a delay); then
no teammate process, no tmux server, no socket file and no demo directory may
be left.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from swarm.teammate.served import teammate_processes
from tests.backends.helpers import retry_until
from tests.cli.conftest import SWARM_EXE
from tests.forked import run_swarm

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


@pytest.fixture
def tmpdir_env(tmp_path: Path) -> dict[str, str]:
    demo_tmp = tmp_path / "tmp"
    demo_tmp.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env["TMPDIR"] = str(demo_tmp)
    return env


def _sockets(env: dict[str, str]) -> list[Path]:
    base = Path(env["TMUX_TMPDIR"])
    return [p for p in base.rglob("*") if p.is_socket()]


def _teammates(demo_tmp: Path) -> list[psutil.Process]:
    return teammate_processes(str(demo_tmp))


def _members(demo_tmp: Path) -> list[dict[str, object]]:
    for config in demo_tmp.glob("swarm-demo-*/home/teams/feature/config.json"):
        try:
            return list(json.loads(config.read_text()).get("members", []))
        except (OSError, ValueError):
            return []
    return []


@pytest.fixture
def leftovers(tmpdir_env: dict[str, str]) -> Iterator[None]:
    """Whatever a failing test leaves is killed afterwards."""
    yield
    for proc in _teammates(Path(tmpdir_env["TMPDIR"])):
        proc.kill()
    for sock in _sockets(tmpdir_env):
        subprocess.run(["tmux", "-S", str(sock), "kill-server"], capture_output=True, check=False)


def test_a_finished_demo_leaves_no_tmux_socket(tmpdir_env: dict[str, str], leftovers: None) -> None:
    result = run_swarm(["demo", "--backend", "tmux"], env=tmpdir_env, timeout=180)
    assert result.returncode == 0, result.stderr
    assert _sockets(tmpdir_env) == []
    assert list(Path(tmpdir_env["TMPDIR"]).iterdir()) == []


def _joined(member: dict[str, object]) -> bool:
    return member.get("name") != "team-lead" and member.get("status") in ("idle", "busy")


MOMENTS: dict[str, Callable[[list[dict[str, object]]], bool]] = {
    "first-member-joined": lambda members: any(_joined(m) for m in members),
    "all-members-joined": lambda members: sum(1 for m in members if _joined(m)) == 2,
}


@pytest.mark.parametrize("moment", list(MOMENTS))
def test_ctrl_c_at_any_moment_leaves_nothing(moment: str, tmpdir_env: dict[str, str], leftovers: None) -> None:
    demo_tmp = Path(tmpdir_env["TMPDIR"])
    proc = subprocess.Popen([str(SWARM_EXE), "demo", "--backend", "tmux"], env=tmpdir_env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        reached = MOMENTS[moment]
        retry_until(lambda: reached(_members(demo_tmp)) or proc.poll() is not None, 60, interval=0.001,
                    what=f"the demo to reach {moment}")
        assert proc.poll() is None, "the demo ended before the moment came"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert _teammates(demo_tmp) == []
    assert _sockets(tmpdir_env) == []
    assert list(demo_tmp.iterdir()) == []


def test_ctrl_c_while_a_member_is_being_spawned_stops_that_member_too(
        tmpdir_env: dict[str, str], leftovers: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C lands right after tmux started the teammate, before spawn returned (a window too short to hit
    with a signal from outside, so the KeyboardInterrupt is raised there; the pane and process are real)."""
    from click.testing import CliRunner

    from swarm.backends.base import Handle, LaunchSpec
    from swarm.backends.tmux_backend import TmuxBackend
    from swarm.cli.main import cli

    real_start = TmuxBackend.start

    def interrupted(self: TmuxBackend, spec: LaunchSpec) -> Handle:
        real_start(self, spec)
        raise KeyboardInterrupt

    monkeypatch.setattr(TmuxBackend, "start", interrupted)
    for key, value in tmpdir_env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr("tempfile.tempdir", None)  # TMPDIR is read again
    result = CliRunner().invoke(cli, ["demo", "--backend", "tmux"], catch_exceptions=False)
    assert result.exit_code == 130
    demo_tmp = Path(tmpdir_env["TMPDIR"])
    assert _teammates(demo_tmp) == []
    assert _sockets(tmpdir_env) == []
    assert list(demo_tmp.iterdir()) == []
