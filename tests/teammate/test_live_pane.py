"""A teammate's tmux pane is its live view, and the person can type to it (private tmux server, real processes).

The streamed text, a tool line and a pending permission request show in the
pane while they happen (capture-pane); the log file gets log lines only; a
line typed in the pane is the person's message (it may run a person-only
skill); Ctrl-C in the pane interrupts that teammate's turn only. The attacker
is the model: its text carries an OSC 52 (clipboard write) and a title
sequence, which the pane shows escaped.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import psutil

from swarm.core.frames import IdleNotification, entry_frame
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.permlog import PermissionLog
from swarm.core.protocol import Member
from swarm.core.teams import TeamStore
from swarm.runtime import permission_desk
from swarm.runtime.spawn import SpawnRequest, spawn
from tests.backends.helpers import retry_until
from tests.fakes import FakeAnthropicServer, ScriptedReply, message_json, text_reply
from tests.teammate.conftest import idle_results
from tests.teammate.test_person_only_skills import DEPLOYER, _deploy_skill

OSC52 = "\x1b]52;c;ZXZpbA==\x07"
TITLE = "\x1b]0;pwned\x07"
STREAMED = f"Reading the failing test first {OSC52}\nthen tracing the parser {TITLE}\nand checking the fix."

SLOW = r"""
[[rules]]
name = "slow"
match = 'slow job (?P<tok>\w+)'
[[rules.steps]]
tool_calls = [{ name = "Bash", input = { command = "sleep 30" } }]
[[rules.steps]]
text = "slow job {tok} done"
"""


def _pane(socket: str, pane: str) -> str:
    return subprocess.run(["tmux", "-L", socket, "capture-pane", "-p", "-J", "-S", "-", "-t", pane],
                          capture_output=True, text=True, check=False).stdout


def _keys(socket: str, pane: str, *keys: str) -> None:
    subprocess.run(["tmux", "-L", socket, "send-keys", "-t", pane, *keys], check=True)


def _idle_reasons(home: Home, team: str, name: str) -> list[str]:
    frames = [entry_frame(e) for e in Mailbox(home, team).read("team-lead")]
    return [f.idle_reason for f in frames if isinstance(f, IdleNotification) and f.sender == name]


def test_the_pane_streams_text_shows_the_tool_line_and_the_pending_request_and_the_log_has_none_of_it(
        home: Home, team: str, workdir: Path, tmux_socket: str, api: FakeAnthropicServer) -> None:
    env = {**os.environ, "ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": api.base_url}
    streamed = message_json([{"type": "text", "text": STREAMED},
                             {"type": "tool_use", "id": "toolu_live_1", "name": "Bash",
                              "input": {"command": "echo from-the-tool"}}], stop_reason="tool_use")
    api.enqueue(ScriptedReply(200, streamed, pace=0.12), text_reply("All fixed."))
    member = spawn(home, SpawnRequest(team=team, name="alice", prompt="fix the parser", cwd=workdir,
                                      backend="tmux", tmux_socket=tmux_socket), env)
    pane = member.tmux_pane_id
    assert pane

    # mid-stream: the first line is on screen, the message is not complete yet (no tool line)
    retry_until(lambda: "Reading the failing test first" in _pane(tmux_socket, pane), 20, what="streamed text")
    early = _pane(tmux_socket, pane)
    assert "and checking the fix." not in early and "[1] Bash" not in early, early

    retry_until(lambda: "? waiting for team-lead: permission request" in _pane(tmux_socket, pane), 20,
                what="the pending request in the pane")
    shown = _pane(tmux_socket, pane)
    assert "⇐ team-lead fix the parser" in shown
    assert "● Reading the failing test first \\x1b]52;c;ZXZpbA==\\x07" in shown, shown  # escaped, not acted on
    assert "then tracing the parser \\x1b]0;pwned\\x07" in shown
    assert "[1] Bash run: echo from-the-tool …" in shown
    assert shown.count("Reading the failing test first") == 1  # the streamed rows gave way to the message

    [request] = PermissionLog(home, team).pending()
    permission_desk.approve(home, team, request.request_id, by="person")
    retry_until(lambda: "All fixed." in _pane(tmux_socket, pane), 20, what="the answer")
    shown = _pane(tmux_socket, pane)
    assert "[1] Bash run: echo from-the-tool → ok: from-the-tool" in shown
    assert f"✓ approved request {request.request_id}" in shown and "◆ answer" in shown

    log = home.log_path(team, "alice").read_text()
    assert "joined team" in log  # log lines go to the log file...
    for noise in ("Reading the failing", "[1] Bash", "waiting for team-lead", "◆ answer", "⇐"):
        assert noise not in log, log  # ...and nothing of the view does
    assert "joined team" not in shown  # nor do log lines go over the view


def test_a_line_typed_in_the_pane_is_the_persons_message_and_ctrl_c_interrupts_only_that_teammate(
        home: Home, team: str, workdir: Path, tmp_path: Path, tmux_socket: str,
        start: Callable[..., Member]) -> None:
    _deploy_skill(workdir)
    book = tmp_path / "both.toml"
    book.write_text(SLOW + DEPLOYER.replace('swarm = "swarm"', 'swarm = "true"'))
    alice = start("alice", "hello", backend="tmux", book=book, allowed_tools=["Bash(sleep *)"])
    bob = start("bob", "slow job bob", backend="tmux", book=book, allowed_tools=["Bash(sleep *)"])
    assert alice.tmux_pane_id and bob.tmux_pane_id
    retry_until(lambda: len(idle_results(home, team, "alice")) == 1, 20, what="alice's first turn")

    # a person-only skill runs only on the person's own words: the typed line is that
    _keys(tmux_socket, alice.tmux_pane_id, "/deploy typed", "Enter")
    retry_until(lambda: (workdir / "deployed-typed.txt").exists(), 20, what="the typed /deploy to run")
    retry_until(lambda: "deployed typed" in idle_results(home, team, "alice"), 20, what="the answer")
    shown = _pane(tmux_socket, alice.tmux_pane_id)
    assert "> /deploy typed" in shown and "◆ answer" in shown

    # Ctrl-C in alice's pane stops her turn (its command is killed), not alice, and not bob
    _keys(tmux_socket, alice.tmux_pane_id, "slow job alice", "Enter")
    retry_until(lambda: "[" in _pane(tmux_socket, alice.tmux_pane_id).split("> slow job alice")[-1]
                and "sleep 30" in _pane(tmux_socket, alice.tmux_pane_id), 20, what="alice's slow command")
    _keys(tmux_socket, alice.tmux_pane_id, "C-c")
    retry_until(lambda: "interrupted" in _idle_reasons(home, team, "alice"), 20, what="alice's turn to stop")
    assert "✗ interrupted" in _pane(tmux_socket, alice.tmux_pane_id)
    team_now = TeamStore(home).get(team)
    for name, pid in (("alice", alice.pid), ("bob", bob.pid)):
        member = team_now.member(name)
        assert member is not None and member.is_active and pid and psutil.pid_exists(pid), name
    assert TeamStore(home).get(team).member("bob").status == "busy"  # bob's command runs on
    assert _idle_reasons(home, team, "bob") == []

    # Ctrl-C while she waits for an answer: the person denies the request, and the turn ends
    _keys(tmux_socket, alice.tmux_pane_id, "relay to bob", "Enter")
    retry_until(lambda: len(PermissionLog(home, team).pending()) == 1, 20, what="alice's request")
    _keys(tmux_socket, alice.tmux_pane_id, "C-c")
    retry_until(lambda: _idle_reasons(home, team, "alice").count("interrupted") == 2, 20, what="the second stop")
    decisions = [e for e in PermissionLog(home, team).events() if e.event == "decision"]
    assert [(d.decision, d.by) for d in decisions] == [("deny", "person")]
    assert "✗ denied request" in _pane(tmux_socket, alice.tmux_pane_id)

    _keys(tmux_socket, alice.tmux_pane_id, "C-c")  # Ctrl-C with no turn running: nothing happens to alice
    # alice still answers: the pane is still hers to type to
    _keys(tmux_socket, alice.tmux_pane_id, "/deploy again", "Enter")
    retry_until(lambda: (workdir / "deployed-again.txt").exists(), 20, what="alice after Ctrl-C")
    assert TeamStore(home).get(team).member("alice").is_active
