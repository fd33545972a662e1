"""The foreground `swarm up` asks the person at the terminal (a real pty) and acts on the answer."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import time

import pytest

from swarm.core.home import Home
from swarm.core.permlog import PermissionLog
from swarm.core.teams import TeamStore
from tests.agent.permissions.test_what_the_lead_sees import LIE, ask_as_claude, claude_member
from tests.runtime.up.helpers import SWARM_EXE, Up

pytestmark = pytest.mark.usefixtures("served")  # teammates forked from the home's CLI server (tests.zygote)

TEAM = """
[team]
name = "asky"

[[members]]
name = "worker"
prompt = "please run the build"
playbook = "worker.toml"
backend = "subprocess"
"""

PLAYBOOK = r"""
[[rules]]
match = 'run the build'
[[rules.steps]]
tool_calls = [{ name = "Bash", input = { command = "touch built.txt", description = "build it" } }]
[[rules.steps]]
text = "built"
"""


class Terminal:
    """The pty the foreground `swarm up` runs on."""

    def __init__(self, master: int) -> None:
        self.master = master
        self.seen = ""

    def expect(self, needle: str, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while needle not in self.seen:
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"never saw {needle!r}; terminal showed:\n{self.seen}"
            ready, _, _ = select.select([self.master], [], [], remaining)
            if ready:
                try:
                    self.seen += os.read(self.master, 4096).decode(errors="replace")
                except OSError:  # the other side closed
                    break
        assert needle in self.seen, f"never saw {needle!r}; terminal showed:\n{self.seen}"

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())


def test_person_answers_always_and_the_rule_sticks(up: Up) -> None:
    (up.tmp / "worker.toml").write_text(PLAYBOOK)
    team_file = up.tmp / "team.toml"
    team_file.write_text(TEAM)
    master, slave = pty.openpty()
    proc = subprocess.Popen([str(SWARM_EXE), "up", str(team_file)], stdin=slave, stdout=slave, stderr=slave,
                            cwd=up.repo, env=up.env, start_new_session=True)
    up.procs.append(proc)  # type: ignore[arg-type]
    os.close(slave)
    terminal = Terminal(master)
    try:
        terminal.expect("approve? (y)es / (n)o / (a)lways")
        assert "worker wants to run: touch built.txt — the model says: build it" in terminal.seen
        terminal.type("a\n")
        terminal.expect("[worker] idle: built")
        assert (up.repo / "built.txt").exists()
        os.killpg(proc.pid, signal.SIGINT)
        terminal.expect("worker: approved")
        terminal.expect("1 permission decisions (0 by the lead policy, 1 by you")
        assert proc.wait(timeout=30) == 0
    finally:
        os.close(master)
    home = Home(up.home)
    [decision] = [e for e in PermissionLog(home, "asky").events() if e.event == "decision"]
    assert (decision.decision, decision.by, decision.rule_added) == ("allow", "lead", "Bash(touch:*)")
    member = TeamStore(home).get("asky").member("worker")
    assert member is not None and member.allowed_tools == ["Bash(touch:*)"] and not member.is_active


CC_TEAM = """
[team]
name = "asky"

[[members]]
name = "worker"
prompt = "hello"
playbook = "worker.toml"
backend = "subprocess"
"""


def test_the_swarm_up_prompt_shows_the_real_command(up: Up) -> None:
    (up.tmp / "worker.toml").write_text('[[rules]]\nmatch = "hello"\ntext = "hi"\n')
    (up.tmp / "team.toml").write_text(CC_TEAM)
    master, slave = pty.openpty()
    proc = subprocess.Popen([str(SWARM_EXE), "up", str(up.tmp / "team.toml")], stdin=slave, stdout=slave,
                            stderr=slave, cwd=up.repo, env=up.env, start_new_session=True)
    up.procs.append(proc)  # type: ignore[arg-type]
    os.close(slave)
    terminal = Terminal(master)
    try:
        terminal.expect("[worker] idle")
        claude_member(Home(up.home), "asky", up.repo)
        ask_as_claude(Home(up.home), "asky", "perm-3-touch", "touch owned.txt")
        terminal.expect("approve? (y)es / (n)o / (a)lways")
        assert "cc wants to run: touch owned.txt [perm-3-touch]" in terminal.seen
        assert LIE not in terminal.seen
        terminal.type("n\n")
        terminal.expect("denied cc's Bash (perm-3-touch)")
        os.killpg(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=60) == 0
    finally:
        os.close(master)
