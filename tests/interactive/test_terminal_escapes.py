"""The interactive session shows what the models wrote escaped: nothing they write drives the terminal.

``swarm run`` reads its prompts from a pipe (plain lines) while its output is a
real terminal — ``echo ... | swarm run`` at a shell. The lead (an offline
playbook) starts a teammate; both write escape sequences (an OSC 52 clipboard
write, a title change, a screen clear, their one-byte C1 forms, a bidi
override, a carriage return). Every byte the session wrote to the pty is read
back. The styled view (prompt_toolkit, stdout a terminal) is checked on its
own output.
"""

from __future__ import annotations

import contextlib
import io
import os
import pty
import re
import select
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from prompt_toolkit.application import create_app_session
from prompt_toolkit.output.vt100 import Vt100_Output

from swarm.backends.procs import kill_tree
from swarm.core.home import Home
from swarm.interactive.view import View
from swarm.models.messages import Message, TextBlock
from swarm.runtime.lead_inbox import LeadMessage
from tests.cli.conftest import HOSTILE, HOSTILE_SHOWN, SWARM_EXE, terminal_controls
from tests.teammate.conftest import teammate_pids

EVIL = r"\u001b]52;c;cm0gLXJmIH4K\u0007\u001b]0;pwned\u0007\u001b[2J\u009d0;c1 title\u009c\u202eevil\rover"
"""``HOSTILE``'s kind, as a TOML string's escapes."""
SHOWN = "\\x1b]52;c;cm0gLXJmIH4K\\x07\\x1b]0;pwned\\x07\\x1b[2J\\x9d0;c1 title\\x9c\\u202eevil\\rover"

LEAD = f"""
[default]
text = "Noted"

[[rules]]
on = "prompt"
match = 'go dig'
[[rules.steps]]
tool_calls = [{{ name = "TeamCreate", input = {{ team_name = "moles" }} }}]
[[rules.steps]]
tool_calls = [{{ name = "Agent", input = {{ description = "d", name = "mole", team_name = "moles", prompt = "dig" }} }}]
[[rules.steps]]
text = "LEAD {EVIL}"
"""

MOLE = f"""
[[rules]]
match = 'dig'
[[rules.steps]]
tool_calls = [{{ name = "SendMessage", input = {{ to = "team-lead", message = "MSG {EVIL}", summary = "s" }} }}]
[[rules.steps]]
text = "DONE {EVIL}"
"""


@pytest.fixture
def moles(home: Home) -> Iterator[Home]:
    """The session's home; whatever a failed run left running under it is stopped at teardown."""
    yield home
    for pid in teammate_pids(home):
        with contextlib.suppress(OSError):
            kill_tree(pid, 1.0)


def _read(master: int, seen: bytearray, until: bytes, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while until not in seen:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            pytest.fail(f"never saw {until!r}; the terminal showed:\n{seen.decode(errors='replace')}")
        if select.select([master], [], [], remaining)[0]:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # every writer closed the pty
                chunk = b""
            if not chunk:
                pytest.fail(f"the pty closed before {until!r}; it showed:\n{seen.decode(errors='replace')}")
            seen += chunk


def test_plain_lines_on_a_terminal_show_the_models_escapes_escaped(moles: Home, tmp_path: Path) -> None:
    (tmp_path / "lead.toml").write_text(LEAD)
    (tmp_path / "mole.toml").write_text(MOLE)
    master, slave = pty.openpty()
    proc = subprocess.Popen([str(SWARM_EXE), "run", "--playbook", str(tmp_path / "lead.toml"), "--backend",
                             "subprocess", "--teammate-playbook", f"mole={tmp_path / 'mole.toml'}"],
                            stdin=subprocess.PIPE, stdout=slave, stderr=slave, cwd=tmp_path,
                            env=dict(os.environ), start_new_session=True)
    os.close(slave)
    seen = bytearray()
    try:
        assert proc.stdin is not None
        proc.stdin.write(b"go dig\n")
        proc.stdin.flush()
        _read(master, seen, b"idle: DONE", 60)  # the mole's message came before its idle notice
        proc.stdin.close()  # end of input: the session shuts its team down and ends
        with contextlib.suppress(AssertionError, pytest.fail.Exception):
            _read(master, seen, b"\x00never", 60)  # read until the pty closes
        assert proc.wait(timeout=60) == 0
    finally:
        os.close(master)
        if proc.poll() is None:
            kill_tree(proc.pid, 1.0)
    shown = seen.decode()
    assert f"LEAD {SHOWN}" in shown and f"MSG {SHOWN[:60]}" in shown and "idle: DONE \\x1b]52;c;" in shown, shown
    assert terminal_controls(shown) == [], shown


def test_the_styled_view_writes_no_control_a_model_wrote() -> None:
    out = io.StringIO()
    output = Vt100_Output(out, lambda: (24, 160), term="xterm-256color")  # type: ignore[arg-type]
    view = View(Path.cwd(), plain=False)
    with create_app_session(output=output):
        view.message(Message(role="assistant", content=[TextBlock(text=f"answer {HOSTILE}\nline two")]))
        view.teammate(LeadMessage(sender="mole", kind="message", text=HOSTILE, summary=None, timestamp=""), f"said {HOSTILE}")
        view.question(f"mole asks {HOSTILE}", f"plan {HOSTILE}")
    written = out.getvalue()
    unstyled = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", written)  # prompt_toolkit's own sequences
    assert terminal_controls(unstyled) == [], written
    assert f"answer {HOSTILE_SHOWN}" in written and "line two" in written
    assert f"said {HOSTILE_SHOWN}" in written and f"plan {HOSTILE_SHOWN}" in written
