"""The interactive session on a real terminal: ``swarm run`` in a pane of a private tmux server.

The test types with ``send-keys`` and reads the screen with ``capture-pane``
(scrollback included); the lead's model is the real anthropic SDK talking to
the local fake Messages API. Teammates the lead starts open as panes of the
same window (the session runs inside tmux) and are stopped by the session's
own shutdown, or by the fixture's teardown if a test failed first.
"""

from __future__ import annotations

import os
import shlex
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from libtmux.pane import Pane
from libtmux.server import Server

from swarm.core.home import Home
from tests.backends.helpers import kill_all_panes
from tests.cli.conftest import SWARM_EXE
from tests.fakes.anthropic_server import FakeAnthropicServer

WIDTH, HEIGHT = 160, 50
EXITED = "[session exited"


@dataclass
class Screen:
    """One terminal running ``swarm run``; what it shows and a way to type into it."""

    server: Server
    pane: Pane
    home: Home

    def type(self, text: str) -> None:
        """Type ``text`` and press Enter."""
        self.server.cmd("send-keys", "-t", self.pane.pane_id, "-l", text)
        self.server.cmd("send-keys", "-t", self.pane.pane_id, "Enter")

    def key(self, *keys: str) -> None:
        """Press keys by tmux name (``C-c``, ``C-o``)."""
        self.server.cmd("send-keys", "-t", self.pane.pane_id, *keys)

    def text(self, escapes: bool = False) -> str:
        """The screen and its scrollback (``escapes``: with the colour and style sequences)."""
        flags = ["-e"] if escapes else []
        result = self.server.cmd("capture-pane", "-p", "-J", *flags, "-S", "-3000", "-t", self.pane.pane_id)
        return "\n".join(result.stdout)

    def wait_for(self, needle: str, timeout: float = 30.0, after: int = 0) -> str:
        """Wait until ``needle`` is on screen (past character ``after``); returns the screen."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.text()
            if needle in screen[after:]:
                return screen
            if time.monotonic() > deadline:
                pytest.fail(f"{needle!r} did not appear within {timeout:g}s; the screen:\n{screen}")
            time.sleep(0.05)

    def ready(self, timeout: float = 30.0) -> None:
        """Wait for an empty prompt (keys typed before it are read by a terminal not yet in raw mode)."""
        deadline = time.monotonic() + timeout
        while True:
            lines = [line for line in self.text().splitlines() if line.strip()]
            if lines and lines[-1].rstrip() == "›":
                return
            if time.monotonic() > deadline:
                pytest.fail(f"no empty prompt within {timeout:g}s; the screen:\n{self.text()}")
            time.sleep(0.05)

    def panes(self) -> list[str]:
        return list(self.server.cmd("list-panes", "-a", "-F", "#{pane_id}").stdout)

    def focused(self) -> str:
        """The active pane of the session's window."""
        rows = self.server.cmd("list-panes", "-t", self.pane.pane_id, "-F", "#{pane_active} #{pane_id}").stdout
        return next(row.split()[1] for row in rows if row.startswith("1 "))


@pytest.fixture
def fake_api() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer() as server:
        yield server


@pytest.fixture
def start_chat(server: Server, tmp_path: Path, fake_api: FakeAnthropicServer) -> Iterator:
    """``start_chat(*args, cwd=...)`` runs ``swarm run ARGS`` in a fresh pane and returns its ``Screen``."""
    started: list[Screen] = []
    home = Home(tmp_path / "home")
    user_home = tmp_path / "user"
    user_home.mkdir()

    def start(*args: str, cwd: Path | None = None, extra_env: dict[str, str] | None = None) -> Screen:
        where = cwd or tmp_path
        env = {**(extra_env or {}), "SWARM_HOME": str(home.root), "HOME": str(user_home), "ANTHROPIC_API_KEY": "test-key",
               "ANTHROPIC_BASE_URL": fake_api.base_url, "PATH": os.environ["PATH"], "TERM": "xterm-256color",
               "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
        command = (f"cd {shlex.quote(str(where))} && {shlex.quote(str(SWARM_EXE))} run "
                   f"{' '.join(shlex.quote(a) for a in args)}; echo '{EXITED}' $?; sleep 600")
        if not started:
            session = server.new_session(session_name="chat", window_command=command, x=WIDTH, y=HEIGHT,
                                         environment=env)
            pane = session.active_window.active_pane
        else:
            window = server.sessions[0].new_window(window_shell=command, environment=env)
            pane = window.active_pane
        assert pane is not None
        screen = Screen(server, pane, home)
        started.append(screen)
        return screen

    try:
        yield start
    finally:
        kill_all_panes(server)
