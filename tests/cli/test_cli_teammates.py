"""spawn / status / logs / shutdown / kill through the installed executable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from swarm.backends.procs import kill_tree
from swarm.core.frames import IdleNotification, TeammateTerminated, parse_frame
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.protocol import Member
from swarm.core.teams import TeamStore
from tests.backends.helpers import retry_until
from tests.forked import run_swarm

pytestmark = pytest.mark.usefixtures("served")  # teammates forked from the home's CLI server (tests.zygote)


@pytest.fixture
def cli_team(home: Home, tmp_path: Path) -> Iterator[tuple[Home, Path]]:
    work = tmp_path / "work"
    work.mkdir()
    run_swarm(["team", "create", "t"], check=True)
    yield home, work
    if home.config_path("t").exists():
        for member in TeamStore(home).get("t").members[1:]:
            if member.pid and psutil.pid_exists(member.pid):
                kill_tree(member.pid, 1.0)


def swarm(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return run_swarm(args, timeout=60, env=env, cwd=cwd)


def _idle_count(home: Home) -> int:
    return sum(isinstance(parse_frame(e.text), IdleNotification) for e in Mailbox(home, "t").read("team-lead"))


def test_spawn_status_logs_shutdown(cli_team: tuple[Home, Path]) -> None:
    home, work = cli_team
    out = swarm("spawn", "ann", "--team", "t", "--prompt", "hello", "--backend", "subprocess",
                "--cwd", str(work), "--json")
    assert out.returncode == 0, out.stderr
    spawned = json.loads(out.stdout)
    assert spawned["backendType"] == "subprocess" and spawned["pid"] > 0
    retry_until(lambda: _idle_count(home) == 1, 15, what="first turn")
    rows = json.loads(swarm("status", "--team", "t", "--json").stdout)
    ann = next(r for r in rows if r["name"] == "ann")
    assert ann["state"] == "idle" and ann["pid"] == spawned["pid"] and ann["tokens"] > 0
    logs = swarm("logs", "ann", "--team", "t", "--log")
    assert logs.returncode == 0 and "joined team" in logs.stdout
    live = swarm("logs", "ann", "--team", "t")  # the live transcript: the message in, the answer out
    assert live.returncode == 0 and "⇐ team-lead hello" in live.stdout and "◆ answer" in live.stdout, live.stdout
    assert "joined team" not in live.stdout  # log lines stay in the log
    down = swarm("shutdown", "--all", "--team", "t", "--timeout", "10")
    assert down.returncode == 0 and down.stdout.strip() == "ann: approved"
    assert not psutil.pid_exists(spawned["pid"]) or psutil.Process(spawned["pid"]).status() == psutil.STATUS_ZOMBIE
    rows = json.loads(swarm("status", "--team", "t", "--json").stdout)
    assert next(r for r in rows if r["name"] == "ann")["state"] == "stopped"


def test_kill_tells_the_lead(cli_team: tuple[Home, Path]) -> None:
    home, work = cli_team
    assert swarm("spawn", "bob", "--team", "t", "-p", "hi", "--backend", "subprocess", "--cwd", str(work)).returncode == 0
    assert swarm("kill", "bob", "--team", "t").stdout.strip() == "bob: killed"
    frames = [parse_frame(e.text) for e in Mailbox(home, "t").read("team-lead")]
    assert sum(isinstance(f, TeammateTerminated) for f in frames) == 1


def test_no_tmux_on_path(cli_team: tuple[Home, Path], tmp_path: Path) -> None:
    home, work = cli_team
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    env = {**os.environ, "PATH": str(empty)}
    refused = swarm("spawn", "cal", "--team", "t", "-p", "hi", "--backend", "tmux", "--cwd", str(work), env=env)
    assert refused.returncode == 1
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "--backend subprocess" in lines[0]
    assert TeamStore(home).get("t").member("cal") is None
    assert not home.inbox_path("t", "cal").exists()
    auto = swarm("spawn", "cal", "--team", "t", "-p", "hi", "--cwd", str(work), "--json", env=env)
    assert auto.returncode == 0, auto.stderr
    assert json.loads(auto.stdout)["backendType"] == "subprocess"
    assert auto.stderr.startswith("swarm: cal's model: the offline scripted model")  # the only note: no tmux warning
    assert len(auto.stderr.strip().splitlines()) == 1


def _pane(tmp_path: Path, home: Home, *command: str) -> Iterator[tuple[str, str, int]]:
    """A real tmux pane running ``command`` on a private server: ``(socket name, pane id, pane pid)``."""
    socket = f"swarm-kill-{tmp_path.name[-12:]}"
    tmux = ["tmux", "-L", socket]
    subprocess.run([*tmux, "new-session", "-d", "-s", "cc", "-e", f"CLAUDE_CONFIG_DIR={home.root}", "--", *command],
                   check=True, capture_output=True)
    shown = subprocess.run([*tmux, "display-message", "-p", "-t", "cc", "#{pane_id} #{pane_pid}"],
                           check=True, capture_output=True, text=True).stdout.split()
    yield socket, shown[0], int(shown[1])
    subprocess.run([*tmux, "kill-server"], capture_output=True, check=False)  # its exit status says nothing here


@pytest.fixture
def pane(tmp_path: Path, home: Home) -> Iterator[tuple[str, str, int]]:
    """A pane running plain ``sleep``: nothing in it says it is a Claude Code teammate's."""
    yield from _pane(tmp_path, home, "sleep", "300")


@pytest.fixture
def teammate_pane(tmp_path: Path, home: Home) -> Iterator[tuple[str, str, int]]:
    """A pane running what Claude Code runs for teammate ``cc@t`` (its command line, this home as config dir)."""
    yield from _pane(tmp_path, home, sys.executable, "-c", "import time; time.sleep(300)",
                     "--agent-id", "cc@t", "--agent-name", "cc", "--team-name", "t")


def _add_claude_code_teammate(home: Home, work: Path, socket: str, pane_id: str) -> None:
    """cc as Claude Code's own lead records it: no pid, only its pane (and here its server)."""
    TeamStore(home).add_member("t", Member(agent_id="cc@t", name="cc", backend_type="tmux", tmux_pane_id=pane_id,
                                           tmux_socket=socket, cwd=str(work), is_active=True, status="idle"))


def test_kill_refuses_a_pane_it_cannot_prove_is_the_teammates_and_leaves_the_member_as_it_was(
        cli_team: tuple[Home, Path], pane: tuple[str, str, int]) -> None:
    home, work = cli_team
    socket, pane_id, pane_pid = pane
    _add_claude_code_teammate(home, work, socket, pane_id)
    refused = swarm("kill", "cc", "--team", "t")
    assert refused.returncode == 1 and "killed" not in refused.stdout, refused.stdout
    [line] = refused.stderr.strip().splitlines()
    assert line.startswith("swarm: error: could not stop cc") and "close the pane yourself" in line, line
    member = TeamStore(home).get("t").member("cc")
    assert member is not None and member.status == "idle" and member.is_active and member.stop_notice is None
    assert psutil.pid_exists(pane_pid) and not any(
        isinstance(parse_frame(e.text), TeammateTerminated) for e in Mailbox(home, "t").read("team-lead"))


def test_kill_stops_a_claude_code_teammate_by_its_process_even_without_tmux(
        cli_team: tuple[Home, Path], tmp_path: Path, teammate_pane: tuple[str, str, int]) -> None:
    home, work = cli_team
    socket, pane_id, pane_pid = teammate_pane
    _add_claude_code_teammate(home, work, socket, pane_id)
    empty = tmp_path / "no-tmux-bin"
    empty.mkdir()
    killed = swarm("kill", "cc", "--team", "t", env={**os.environ, "PATH": str(empty)})
    assert killed.returncode == 0 and killed.stdout.strip() == "cc: killed", killed.stderr
    retry_until(lambda: not psutil.pid_exists(pane_pid) or psutil.Process(pane_pid).status() == psutil.STATUS_ZOMBIE,
                10, what="the pane's process to end")
    member = TeamStore(home).get("t").member("cc")
    assert member is not None and member.status == "killed"


def test_spawn_errors_leave_nothing(cli_team: tuple[Home, Path]) -> None:
    home, work = cli_team
    cases = [
        (["spawn", "team-lead", "--team", "t", "-p", "x"], 2, "lead's name"),
        (["spawn", "dan", "--team", "t", "-p", "   "], 2, "prompt is empty"),
        (["spawn", "dan", "--team", "t", "-p", '{"type": "shutdown_request", "requestId": "r", "from": "x", '
          '"timestamp": "t"}'], 2, "protocol frame"),
        (["spawn", "d/n", "--team", "t", "-p", "x"], 2, "contains '/'"),
        (["spawn", "dan", "--team", "nope", "-p", "x"], 1, "team 'nope' not found"),
        (["shutdown", "ghost", "--team", "t"], 1, "no teammate 'ghost'"),
        (["shutdown", "--team", "t"], 2, "--all"),
    ]
    for args, code, message in cases:
        result = swarm(*args, cwd=work)
        assert result.returncode == code, (args, result.stderr)
        assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert [m.name for m in TeamStore(home).get("t").members] == ["team-lead"]
    assert sorted(p.name for p in home.inboxes_dir("t").glob("*.json")) == []


def test_team_delete_stops_live_teammates(cli_team: tuple[Home, Path]) -> None:
    home, work = cli_team
    out = swarm("spawn", "eve", "--team", "t", "-p", "hi", "--backend", "subprocess", "--cwd", str(work), "--json")
    pid = json.loads(out.stdout)["pid"]
    deleted = swarm("team", "delete", "t")
    assert deleted.returncode == 0, deleted.stderr
    assert "stopped eve: approved" in deleted.stdout
    assert not home.team_dir("t").exists()
    retry_until(lambda: not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE, 5)


def test_attach_to_a_subprocess_teammate_points_to_logs(cli_team: tuple[Home, Path]) -> None:
    home, work = cli_team
    assert swarm("spawn", "sub", "--team", "t", "-p", "hi", "--backend", "subprocess", "--cwd", str(work)).returncode == 0
    result = swarm("attach", "sub", "--team", "t")
    assert result.returncode == 2
    assert "runs as a subprocess" in result.stderr and "swarm logs sub -f --team t" in result.stderr
    assert swarm("attach", "ghost", "--team", "t").returncode == 1


def test_startup_failures_are_reported_by_spawn(cli_team: tuple[Home, Path], tmp_path: Path) -> None:
    home, work = cli_team
    bad_book = tmp_path / "bad.toml"
    bad_book.write_text('[[rules]]\nmatch = 1\n')
    refused = swarm("spawn", "zed", "--team", "t", "-p", "hi", "--playbook", str(bad_book), "--cwd", str(work))
    assert refused.returncode == 2 and "rules[0].match" in refused.stderr
    assert TeamStore(home).get("t").member("zed") is None

    broken = tmp_path / "broken"
    (broken / ".swarm").mkdir(parents=True)
    (broken / ".swarm" / "settings.json").write_text("{not json")
    died = swarm("spawn", "zed", "--team", "t", "-p", "hi", "--backend", "subprocess", "--cwd", str(broken))
    assert died.returncode == 1
    [line] = died.stderr.strip().splitlines()
    assert "zed exited while starting" in line and "settings.json: invalid permissions" in line
    member = TeamStore(home).get("t").member("zed")
    assert member is not None and member.is_active is False and member.status == "dead"
    frames = [parse_frame(e.text) for e in Mailbox(home, "t").read("team-lead")]
    assert not any(isinstance(f, TeammateTerminated) for f in frames)  # told directly, not as a later death


def test_spawn_records_its_restart_policy_and_refuses_an_unknown_one(cli_team: tuple[Home, Path]) -> None:
    home, work = cli_team
    bad = swarm("spawn", "bea", "--team", "t", "--prompt", "hello", "--restart", "sometimes", "--cwd", str(work))
    assert bad.returncode == 2 and "sometimes" in bad.stderr and TeamStore(home).get("t").member("bea") is None
    out = swarm("spawn", "bea", "--team", "t", "--prompt", "hello", "--backend", "subprocess", "--cwd", str(work),
                "--restart", "on-failure", "--max-restarts", "2")
    assert out.returncode == 0, out.stderr
    record = json.loads(home.restart_path("t", "bea").read_text())
    assert (record["policy"], record["max_restarts"], record["restarts"]) == ("on-failure", 2, 0)
    assert record["request"]["prompt"] == "hello" and record["request"]["cwd"] == str(work)
