"""The core CLI, in-process and as the installed executable."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from tests.backends.helpers import retry_until
from tests.cli.conftest import SWARM_EXE

Exe = Callable[..., subprocess.CompletedProcess[str]]


def test_team_lifecycle_in_process(home: Home, run_cli: Callable[..., Result]) -> None:
    assert run_cli("team", "create", "alpha", "--description", "first").exit_code == 0
    listed = run_cli("team", "list", "--json")
    assert [t["name"] for t in json.loads(listed.output)] == ["alpha"]
    shown = json.loads(run_cli("team", "show", "alpha", "--json").output)
    assert shown["description"] == "first"
    assert run_cli("team", "delete", "alpha").exit_code == 0
    assert json.loads(run_cli("team", "list", "--json").output) == []


def test_send_and_inbox_in_process(home: Home, run_cli: Callable[..., Result]) -> None:
    run_cli("team", "create", "t")
    sent = run_cli("send", "team-lead", "hello there", "--team", "t", "--summary", "hi", "--json")
    assert sent.exit_code == 0
    [entry] = json.loads(sent.output)
    assert entry["to"] == "team-lead" and entry["msg_id"]
    shown = json.loads(run_cli("inbox", "team-lead", "--team", "t", "--json").output)
    assert [e["text"] for e in shown] == ["hello there"]
    taken = json.loads(run_cli("inbox", "team-lead", "--team", "t", "--take", "--json").output)
    assert [e["msg_id"] for e in taken] == [entry["msg_id"]]
    assert json.loads(run_cli("inbox", "team-lead", "--team", "t", "--json").output) == []


def test_swarm_team_env_default(home: Home, run_cli: Callable[..., Result],
                                monkeypatch: pytest.MonkeyPatch) -> None:
    run_cli("team", "create", "envteam")
    monkeypatch.setenv("SWARM_TEAM", "envteam")
    assert run_cli("send", "team-lead", "via env").exit_code == 0
    assert "via env" in run_cli("inbox", "team-lead").output


def test_send_reads_stdin(home: Home, run_cli: Callable[..., Result]) -> None:
    run_cli("team", "create", "t")
    assert run_cli("send", "team-lead", "-", "--team", "t", input="line1\nline2\n").exit_code == 0
    assert Home(home.root).inbox_path("t", "team-lead").read_text().count("line1\\nline2") == 1


def test_executable_round_trip(home: Home, tmp_path: Path) -> None:
    """The installed executable itself, each command a new interpreter (the other tests fork theirs)."""
    def exe(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(SWARM_EXE), *args], capture_output=True, text=True, cwd=tmp_path, timeout=60)

    assert exe("team", "create", "t").returncode == 0
    assert exe("send", "*", "broadcast", "--team", "t").stdout.strip() == "no recipients: the team has no other members"
    assert exe("send", "team-lead", "x", "--team", "t").returncode == 0
    out = exe("inbox", "team-lead", "--team", "t", "--unread", "--json")
    assert [e["text"] for e in json.loads(out.stdout)] == ["x"]
    assert exe("--version").stdout.startswith("swarm, version")


BAD_INPUT: list[tuple[list[str], int, str]] = [
    (["team", "create", "../x"], 2, "contains '.'"),
    (["team", "create", "a/b"], 2, "contains '/'"),
    (["team", "create", ""], 2, "must not be empty"),
    (["team", "create", "x" * 65], 2, "65 characters"),
    (["team", "create", "a\nb"], 2, "U+000A"),
    (["team", "create", "caf\u00e9"], 2, "U+00E9"),
    (["team", "show", "ghost"], 1, "team 'ghost' not found"),
    (["send", "ghost", "hi", "--team", "t"], 1, "no member 'ghost'"),
    (["send", "team-lead", "hi", "--team", "t", "--from", "mallory"], 1, "sender 'mallory' is not a member"),
    (["send", "team-lead", "hi", "--team", "nope"], 1, "team 'nope' not found; `swarm team list`"),  # no guess
    (["send", "team-lead", "hi", "--team", "tt"], 1, "team 'tt' not found; did you mean 't'?"),
    (["task", "add", "x", "--team", "tt"], 1, "team 'tt' not found; did you mean 't'?"),
    (["send", "../lead", "hi", "--team", "t"], 2, "contains '.'"),
    (["inbox", "ghost", "--team", "t"], 1, "no member 'ghost'"),
    (["send", "team-lead", "hi"], 2, "Missing option '--team'"),
    (["tem", "list"], 2, "No such command 'tem'"),
]


@pytest.mark.parametrize(("args", "code", "message"), BAD_INPUT, ids=[" ".join(a)[:30] for a, _, _ in BAD_INPUT])
def test_bad_input_one_line_error_and_nothing_outside_home(home: Home, run_exe: Exe, tmp_path: Path,
                                                           args: list[str], code: int, message: str) -> None:
    assert run_exe("team", "create", "t").returncode == 0
    before = _snapshot(tmp_path)
    result = run_exe(*args)
    assert result.returncode == code
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("swarm: error: "), result.stderr
    assert message in lines[0]
    after = _snapshot(tmp_path)
    assert after == before, f"files created: {sorted(after - before)}"
    outside = [p for p in after if not p.is_relative_to(home.root)]
    assert outside == [tmp_path / "cwd"]


def test_nul_in_name_refused(home: Home, run_cli: Callable[..., Result]) -> None:
    # argv cannot carry NUL, so this goes through the in-process runner
    result = run_cli("team", "create", "a\x00b")
    assert result.exit_code == 2
    assert "NUL" in result.output
    assert not home.teams_dir.exists() or list(home.teams_dir.iterdir()) == []


def test_oversized_message(home: Home, run_exe: Exe) -> None:
    run_exe("team", "create", "t")
    result = run_exe("send", "team-lead", "-", "--team", "t", input="x" * 300_000)
    assert result.returncode == 2
    assert "the limit is 262144" in result.stderr
    assert json.loads(run_exe("inbox", "team-lead", "--team", "t", "--json").stdout) == []


def test_inbox_follow_prints_arrivals_and_stops_on_sigint(home: Home, run_exe: Exe, tmp_path: Path) -> None:
    run_exe("team", "create", "t")
    proc = subprocess.Popen([str(SWARM_EXE), "inbox", "team-lead", "--team", "t", "--follow", "--take", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    try:
        run_exe("send", "team-lead", "first", "--team", "t")
        line = proc.stdout.readline() if proc.stdout else ""
        assert json.loads(line)["text"] == "first"
        # --take prunes just after the entry was written out; Ctrl-C before that would only leave it queued
        retry_until(lambda: Mailbox(home, "t").read("team-lead") == [], 10, what="the shown entry to be taken")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert json.loads(run_exe("inbox", "team-lead", "--team", "t", "--json").stdout) == []


def _snapshot(root: Path) -> set[Path]:
    return {p for p in root.rglob("*")}


def test_status_and_the_other_teammate_commands_load_none_of_the_agent_stack() -> None:
    """``swarm status`` is the command people and scripts run most; the agent stack ``swarm spawn`` needs (the
    workspace's trust check, the tools) is its own module's, ~0.15 s of imports status would pay for nothing."""
    probe = ("import sys, swarm.cli.teammates; "
             "print(sorted(m for m in sys.modules if m == 'swarm.agent.workspace' or m.startswith('swarm.agent.tools')))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.strip() == "[]"
