"""The foreground `swarm up` shows what its teammates wrote escaped: nothing they write drives the terminal.

A teammate in plan mode submits a plan, messages the lead and ends its turn,
each text laden with escape sequences (an OSC 52 clipboard write, a title
change, a screen clear, their one-byte C1 forms). ``swarm up`` runs on a real
pty; the person approves the plan there and stops the team. Every byte it
wrote is read back: no control a teammate wrote is among them, and each text
is still there, escaped.
"""

from __future__ import annotations

import os
import pty
import signal
import subprocess

from tests.cli.conftest import terminal_controls
from tests.runtime.up.helpers import SWARM_EXE, Up
from tests.runtime.up.test_interactive import Terminal

EVIL = r"\u001b]52;c;cm0gLXJmIH4K\u0007\u001b]0;pwned\u0007\u001b[2J\u009d0;c1 title\u009c\u202eevil\rover"
"""``HOSTILE`` as a TOML string's escapes."""
SHOWN = "\\x1b]52;c;cm0gLXJmIH4K\\x07\\x1b]0;pwned\\x07\\x1b[2J\\x9d0;c1 title\\x9c\\u202eevil\\rover"

TEAM = """
[team]
name = "moles"

[lead.policy]
plans = "ask"

[[members]]
name = "mole"
prompt = "dig"
playbook = "mole.toml"
backend = "subprocess"
plan_mode_required = true
"""

PLAYBOOK = f"""
[[rules]]
match = 'dig'
[[rules.steps]]
tool_calls = [{{ name = "ExitPlanMode", input = {{ plan = "PLAN {EVIL}\\nstep two {EVIL}" }} }}]
[[rules.steps]]
tool_calls = [{{ name = "SendMessage", input = {{ to = "team-lead", message = "MSG {EVIL}", summary = "s" }} }}]
[[rules.steps]]
text = "DONE {EVIL}"
"""


def test_foreground_up_shows_a_teammates_escapes_escaped(up: Up) -> None:
    (up.tmp / "mole.toml").write_text(PLAYBOOK)
    (up.tmp / "team.toml").write_text(TEAM)
    master, slave = pty.openpty()
    proc = subprocess.Popen([str(SWARM_EXE), "up", str(up.tmp / "team.toml")], stdin=slave, stdout=slave,
                            stderr=slave, cwd=up.repo, env=up.env, start_new_session=True)
    up.procs.append(proc)  # type: ignore[arg-type]
    os.close(slave)
    terminal = Terminal(master)
    try:
        terminal.expect("approve the plan?")
        terminal.type("y\n")
        terminal.expect("idle: DONE")
        os.killpg(proc.pid, signal.SIGINT)
        terminal.expect("permission decisions")
        assert proc.wait(timeout=30) == 0
    finally:
        os.close(master)
    seen = terminal.seen
    assert f"PLAN {SHOWN}" in seen and f"step two {SHOWN}" in seen, seen  # the plan whole, each line escaped
    assert f"[mole → lead] MSG {SHOWN}" in seen, seen
    assert "[mole] idle: DONE \\x1b]52;c;" in seen, seen
    assert terminal_controls(seen) == [], seen
