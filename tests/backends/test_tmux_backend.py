"""TmuxBackend against a real tmux server on a private socket."""

from __future__ import annotations

import os
import shutil
import stat
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from libtmux.server import Server

from swarm.backends.procs import is_pid_alive
from swarm.backends.tmux_backend import TmuxBackend
from swarm.backends.tmux_client import TmuxCommandFailed, escape_arg
from tests.backends.helpers import (
    GRACE,
    TEAM,
    Launcher,
    pane_field,
    retry_until,
    tmux_lines,
)

SESSION = f"swarm-{TEAM}"


def session_names(server: Server) -> list[str]:
    result = server.cmd("list-sessions", "-F", "#{session_name}")
    return list(result.stdout) if result.returncode == 0 else []


def pane_option(server: Server, pane_id: str, option: str) -> str:
    return tmux_lines(server, "show-options", "-p", "-v", "-t", pane_id, option)[0]


def test_start_outside_tmux_creates_team_session(
    server: Server, tmux_backend: TmuxBackend, launcher: Launcher
) -> None:
    spec = launcher.spec("alice", "--flag", env={"SWARM_AGENT": "alice@crew"}, keys=("SWARM_AGENT",), color="cyan")
    handle = launcher.start(tmux_backend, spec)
    record = launcher.record("alice")

    assert handle.backend == "tmux" and handle.pane_id.startswith("%")
    assert handle.extra["session"] == SESSION
    assert handle.extra["socket"] == tmux_backend.socket_path
    assert session_names(server) == [SESSION]
    assert handle.pid == int(pane_field(server, handle.pane_id, "#{pane_pid}")) == record["pids"][0]
    assert record["argv"] == ["--flag"] and record["env"] == {"SWARM_AGENT": "alice@crew"}
    assert record["cwd"] == str(launcher.tmp_path)
    assert pane_field(server, handle.pane_id, "#{pane_title}") == "alice"
    assert pane_option(server, handle.pane_id, "pane-border-style") == "fg=cyan"
    assert pane_option(server, handle.pane_id, "remain-on-exit") == "off"
    window = pane_field(server, handle.pane_id, "#{window_id}")
    assert tmux_lines(server, "show-options", "-w", "-v", "-t", window, "pane-border-status") == ["top"]
    assert tmux_backend.is_alive(handle)
    assert tmux_backend.describe(handle) == f"tmux pane {handle.pane_id} (pid {handle.pid})"


def test_two_starts_share_one_window(server: Server, tmux_backend: TmuxBackend, launcher: Launcher) -> None:
    first = launcher.start(tmux_backend, launcher.spec("alice", env={"ONLY_ALICE": "1"}, keys=("ONLY_ALICE",)))
    second = launcher.start(tmux_backend, launcher.spec("bob", keys=("ONLY_ALICE",)))
    assert launcher.record("alice")["env"] == {"ONLY_ALICE": "1"}
    assert launcher.record("bob")["env"] == {"ONLY_ALICE": None}  # not inherited via the session

    assert session_names(server) == [SESSION]
    assert sorted(tmux_backend.list_panes(TEAM)) == sorted([first.pane_id, second.pane_id])
    windows = {pane_field(server, h.pane_id, "#{window_id}") for h in (first, second)}
    assert len(windows) == 1
    assert len(tmux_lines(server, "list-panes", "-t", windows.pop())) == 2
    assert pane_field(server, second.pane_id, "#{pane_title}") == "bob"


HOSTILE = [
    "$(touch {marker})",
    "`touch {marker}`",
    "#(touch {marker})",
    "#{{pane_id}}",
    "it's \"quoted\"",
    "a; touch {marker}",
    "ends with;",
    ";",
    "x\\;",
    "line one\nline two",
    "",
    "--",
    "-e",
    "  spaced  ",
    "héllo ✓",
]


def test_hostile_argv_env_and_cwd_arrive_byte_exact(
    server: Server, tmux_backend: TmuxBackend, launcher: Launcher, tmp_path: Path
) -> None:
    marker = tmp_path / "pwned"
    argv = [arg.format(marker=marker) for arg in HOSTILE]
    cwd = tmp_path / "dir #(touch pwned) #{pane_id};"
    cwd.mkdir()
    env = {"HOSTILE": f"$(touch {marker}) #(touch {marker}) ;", "TRAILING": "x;"}
    launcher.start(tmux_backend, launcher.spec("alice", *argv, env=env, keys=tuple(env), cwd=cwd))
    record = launcher.record("alice")

    assert record["argv"] == argv
    assert record["env"] == env
    assert record["cwd"] == str(cwd)
    assert not marker.exists() and not (cwd / "pwned").exists()


def test_lone_program_is_not_run_by_a_shell(
    server: Server, tmux_backend: TmuxBackend, launcher: Launcher, probe: Path, tmp_path: Path
) -> None:
    # With exactly one argument tmux would run "$SHELL -c <arg>"; the backend must not let it.
    program = tmp_path / "prog $(touch pwned)"
    shutil.copy(probe, program)
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    handle = launcher.start(tmux_backend, launcher.spec("alice", argv=[str(program)]))
    record = launcher.record("alice")
    assert record["argv"] == [] and record["pids"][0] == handle.pid
    assert not (tmp_path / "pwned").exists()


def test_stop_kills_tree_and_removes_pane(server: Server, tmux_backend: TmuxBackend, launcher: Launcher) -> None:
    handle = launcher.start(tmux_backend, launcher.spec("alice", tree=True))
    pids = launcher.record("alice")["pids"]
    assert len(pids) == 3 and all(is_pid_alive(pid) for pid in pids)

    tmux_backend.stop(handle, grace=GRACE)
    assert not any(is_pid_alive(pid) for pid in pids)
    assert tmux_backend.list_panes(TEAM) == []
    assert SESSION not in session_names(server)  # its last pane went, so did the session
    assert not tmux_backend.is_alive(handle)
    tmux_backend.stop(handle, grace=GRACE)  # safe twice, even with the server gone


def test_stop_one_of_two_keeps_the_other(server: Server, tmux_backend: TmuxBackend, launcher: Launcher) -> None:
    first = launcher.start(tmux_backend, launcher.spec("alice"))
    second = launcher.start(tmux_backend, launcher.spec("bob"))
    tmux_backend.stop(first, grace=GRACE)
    assert tmux_backend.list_panes(TEAM) == [second.pane_id]
    assert tmux_backend.is_alive(second) and not tmux_backend.is_alive(first)


def test_a_handle_naming_its_server_by_socket_name_is_found_there(
        server: Server, tmux_backend: TmuxBackend, launcher: Launcher, tmux_env: dict[str, str]) -> None:
    """A socket name in a handle is the server ``-L`` names, not a file of that name in the current directory."""
    handle = launcher.start(tmux_backend, launcher.spec("alice"))
    assert server.socket_name is not None and "/" not in server.socket_name
    named = replace(handle, extra={"socket": server.socket_name})
    elsewhere = TmuxBackend("another-server", tmux_env)  # asked about a handle on another server
    assert elsewhere.is_alive(named) and tmux_backend.is_alive(named)
    elsewhere.stop(named, grace=GRACE)
    assert tmux_backend.list_panes(TEAM) == [] and not tmux_backend.is_alive(handle)


def test_is_alive_false_after_kill_pane(server: Server, tmux_backend: TmuxBackend, launcher: Launcher) -> None:
    keeper = launcher.start(tmux_backend, launcher.spec("keeper"))  # keeps the server up
    handle = launcher.start(tmux_backend, launcher.spec("alice"))
    launcher.record("alice")
    tmux_lines(server, "kill-pane", "-t", handle.pane_id)
    retry_until(lambda: not tmux_backend.is_alive(handle), what="is_alive to turn false")
    assert tmux_backend.is_alive(keeper)
    tmux_backend.stop(handle, grace=GRACE)  # pane already gone: fine


def test_caller_inside_tmux_gets_its_window_split(
    server: Server, launcher: Launcher, tmux_env: dict[str, str]
) -> None:
    row = tmux_lines(
        server, "new-session", "-d", "-s", "lead", "-x", "160", "-y", "40",
        "-P", "-F", "#{pane_id} #{pid} #{socket_path}", "--", "sleep", "60",
    )[0]
    lead_pane, server_pid, socket_path = row.split(" ", 2)
    env = {**tmux_env, "TMUX": f"{socket_path},{server_pid},0", "TMUX_PANE": lead_pane}
    backend = TmuxBackend(None, env)  # no socket given: the caller's server, from $TMUX

    handle = launcher.start(backend, launcher.spec("alice", color="colour208"))
    other = launcher.start(backend, launcher.spec("bob"))
    launcher.record("alice")
    assert handle.extra["session"] == "lead"
    assert SESSION not in session_names(server)
    panes = tmux_lines(server, "list-panes", "-t", lead_pane, "-F", "#{pane_id} #{pane_left} #{pane_height}")
    geometry = {pane_id: (int(left), int(height)) for pane_id, left, height in (p.split() for p in panes)}
    assert set(geometry) == {lead_pane, handle.pane_id, other.pane_id}
    # main-vertical: the lead is the full-height pane on the left, teammates stack on the right
    lead_left, lead_height = geometry[lead_pane]
    assert lead_left == 0
    assert geometry[handle.pane_id][0] == geometry[other.pane_id][0] > 0
    assert lead_height > max(geometry[handle.pane_id][1], geometry[other.pane_id][1])
    assert sorted(backend.list_panes(TEAM)) == sorted([handle.pane_id, other.pane_id])
    backend.stop(other, grace=GRACE)
    backend.stop(handle, grace=GRACE)
    assert tmux_lines(server, "list-panes", "-t", lead_pane, "-F", "#{pane_id}") == [lead_pane]


def test_kill_session_cleans_up_everything(server: Server, tmux_backend: TmuxBackend, launcher: Launcher) -> None:
    launcher.start(tmux_backend, launcher.spec("alice", tree=True))
    launcher.start(tmux_backend, launcher.spec("bob"))
    pids = launcher.record("alice")["pids"] + launcher.record("bob")["pids"]
    tmux_backend.kill_session(TEAM, grace=GRACE)
    assert not any(is_pid_alive(pid) for pid in pids)
    assert tmux_backend.list_panes(TEAM) == [] and SESSION not in session_names(server)
    tmux_backend.kill_session(TEAM)  # nothing left: still fine


def test_missing_cwd_and_program_fail_before_tmux(tmux_backend: TmuxBackend, launcher: Launcher, tmp_path: Path) -> None:
    from swarm.errors import BackendError

    with pytest.raises(BackendError, match="does not exist"):
        tmux_backend.start(launcher.spec("alice", cwd=tmp_path / "missing"))
    with pytest.raises(BackendError, match="not found on PATH"):
        tmux_backend.start(launcher.spec("alice", argv=["no-such-program-xyz", "a"]))


def test_program_that_exits_at_once_is_reported(tmux_backend: TmuxBackend, launcher: Launcher) -> None:
    from swarm.errors import BackendError

    spec = launcher.spec("alice", argv=[sys.executable, "-c", "pass"])
    try:
        handle = launcher.start(tmux_backend, spec)
    except BackendError as exc:  # the pane vanished while it was being decorated
        assert "exited right after it started" in str(exc)
    else:  # or it was still there: then it is gone shortly after
        retry_until(lambda: not tmux_backend.is_alive(handle), what="quick exit")


@pytest.mark.parametrize(
    ("raw", "escaped"),
    [("plain", "plain"), ("a;", "a\\;"), (";", "\\;"), ("x\\;", "x\\\\;"), ("a;b", "a;b")],
)
def test_escape_arg(raw: str, escaped: str) -> None:
    assert escape_arg(raw) == escaped


def test_socket_path_is_used_for_handles(tmux_backend: TmuxBackend, server: Server) -> None:
    assert os.path.basename(tmux_backend.socket_path) == server.socket_name


@pytest.mark.parametrize("stderr", ["no such pane: %0", "can't find pane: %3", "no server running on /tmp/x",
                                    "no such session: swarm-crew"])
def test_tmux_saying_its_target_is_gone_is_recognised_however_it_words_it(stderr: str) -> None:
    assert TmuxCommandFailed("set-option", [stderr]).target_gone
    assert not TmuxCommandFailed("set-option", ["invalid option: @nope"]).target_gone
