"""``swarm top`` in a private tmux server: live state, redrawn on changes; keys approve, open a live view, stop."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from swarm.core.home import Home
from swarm.core.permlog import PermissionLog
from swarm.core.teams import TeamStore
from swarm.models.messages import Usage
from swarm.models.team_gate import TeamGate
from tests.backends.helpers import retry_until
from tests.cli.conftest import SWARM_EXE
from tests.cli.test_cli_teammates import cli_team, swarm  # noqa: F401 (the fixture)

pytestmark = pytest.mark.usefixtures("served")  # teammates forked from the home's CLI server (tests.zygote)

PLAYBOOK = r"""
[[rules]]
name = "ask"
match = 'build it'
[[rules.steps]]
text = "building \u001b]52;c;ZXZpbA==\u0007 now"
tool_calls = [{ name = "Bash", input = { command = "echo built-by-alice" } }]
[[rules.steps]]
text = "alice built it"

[[rules]]
name = "hi"
match = 'hello'
text = "bob ready"
"""


@pytest.fixture
def top_pane(cli_team: tuple[Home, Path], tmp_path: Path) -> Iterator[tuple[Home, str]]:  # noqa: F811
    home, work = cli_team
    book = tmp_path / "book.toml"
    book.write_text(PLAYBOOK)
    for name, prompt in (("alice", "build it"), ("bob", "hello")):
        out = swarm("spawn", name, "--team", "t", "--prompt", prompt, "--backend", "subprocess",
                    "--cwd", str(work), "--playbook", str(book))
        assert out.returncode == 0, out.stderr
    retry_until(lambda: len(PermissionLog(home, "t").pending()) == 1, 20, what="alice's request")
    # spent by an earlier process of alice (the ledger keeps it across restarts): $0.30 at $3 per million
    TeamGate(home.gate_dir("t"), "alice").charge("claude-sonnet-4-6", Usage(input_tokens=100_000))
    socket = f"swarm-test-{uuid.uuid4().hex[:10]}"
    subprocess.run(["tmux", "-L", socket, "-f", "/dev/null", "new-session", "-d", "-x", "200", "-y", "40",
                    "-e", f"SWARM_HOME={home.root}", str(SWARM_EXE), "top", "--team", "t"], check=True,
                   env=dict(os.environ))
    try:
        yield home, socket
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)


def _screen(socket: str) -> str:
    return subprocess.run(["tmux", "-L", socket, "capture-pane", "-p"], capture_output=True, text=True,
                          check=False).stdout


def _row(socket: str, name: str) -> str:
    return next((line for line in _screen(socket).splitlines() if line.startswith(name + " ")), "")


def _keys(socket: str, *keys: str) -> None:
    subprocess.run(["tmux", "-L", socket, "send-keys", *keys], check=True)


def test_top_shows_live_state_and_its_keys_approve_open_a_live_view_and_stop(top_pane: tuple[Home, str]) -> None:
    home, socket = top_pane
    retry_until(lambda: "permission run: echo built-by-alice" in _row(socket, "alice"), 20, what="the table")
    alice = _row(socket, "alice")
    assert " busy " in alice and "? waiting for team-lead" in alice, _screen(socket)
    assert "$0.3000" in alice  # the ledger's figure (swarm status's), not the process's own (nothing, scripted)
    assert "— team cost: $0.3000" in _screen(socket)
    retry_until(lambda: "◆ bob ready" in _row(socket, "bob"), 20, what=f"bob row {_screen(socket)}")
    assert " idle " in _row(socket, "bob")

    _keys(socket, "a")  # alice is the first row: approve her request, as the person
    # her last words and her going idle are two writes: the table may show one before the other
    retry_until(lambda: "◆ alice built it" in _row(socket, "alice") and " idle " in _row(socket, "alice"), 20,
                what="the redraw after the answer")
    assert PermissionLog(home, "t").pending() == []
    assert " idle " in _row(socket, "alice") and "permission" not in _row(socket, "alice")

    before = _row(socket, "bob")
    swarm("send", "bob", "hello again", "--team", "t")  # another terminal's doing, seen live (its tokens grow)
    retry_until(lambda: _row(socket, "bob") != before and " idle " in _row(socket, "bob"), 20,
                what="bob's second turn")

    _keys(socket, "Enter")  # alice's live view: her events as her pane draws them, escaped
    retry_until(lambda: "alice — live" in _screen(socket), 10, what="the live view")
    shown = _screen(socket)
    assert "● building \\x1b]52;c;ZXZpbA==\\x07 now" in shown, shown
    assert "[1] Bash run: echo built-by-alice → ok: built-by-alice" in shown
    _keys(socket, "Escape")
    retry_until(lambda: _row(socket, "bob") != "", 10, what="the table again")

    _keys(socket, "Down", "s")  # stop bob
    retry_until(lambda: " stopped " in _row(socket, "bob"), 30, what="bob to stop")
    assert TeamStore(home).get("t").member("bob").is_active is False
    assert TeamStore(home).get("t").member("alice").is_active is True
    _keys(socket, "q")
    retry_until(lambda: subprocess.run(["tmux", "-L", socket, "list-sessions"], capture_output=True).returncode != 0,
                10, what="top to quit")


def test_status_watch_json_prints_a_snapshot_per_change_and_none_without(
        cli_team: tuple[Home, Path]) -> None:  # noqa: F811
    home, work = cli_team
    assert swarm("spawn", "cy", "--team", "t", "--prompt", "hello", "--backend", "subprocess",
                 "--cwd", str(work)).returncode == 0
    retry_until(lambda: TeamStore(home).get("t").member("cy").status == "idle", 20, what="cy's first turn")
    watch = subprocess.Popen([str(SWARM_EXE), "status", "--team", "t", "--watch", "--json"],
                             stdout=subprocess.PIPE, text=True, env=dict(os.environ))
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(watch.stdout or []), daemon=True)
    reader.start()
    try:
        retry_until(lambda: lines.count("[\n") == 1, 10, what="the first snapshot")
        time.sleep(1.5)
        assert lines.count("[\n") == 1  # nothing changed: nothing printed (no timer)
        assert swarm("send", "cy", "hello again", "--team", "t").returncode == 0
        retry_until(lambda: lines.count("[\n") >= 2, 10, what="a snapshot after the change")
    finally:
        watch.send_signal(signal.SIGINT)
        watch.wait(timeout=10)
