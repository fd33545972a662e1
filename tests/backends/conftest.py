"""Fixtures for the backend tests (helpers live in ``helpers.py``).

tmux tests run on a private server (libtmux's ``server`` fixture: unique
socket name, killed at teardown). Every process a test starts is stopped by
the ``launcher`` fixture and, for tmux, by ``tmux_backend``'s teardown, which
runs before the server fixture kills the server.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from libtmux.server import Server

from swarm.backends.tmux_backend import TmuxBackend
from tests.backends.helpers import PROBE, Launcher, kill_all_panes


@pytest.fixture
def probe(tmp_path: Path) -> Path:
    """The probe program, executable, with a shebang to this interpreter."""
    path = tmp_path / "probe.py"
    path.write_text(PROBE, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def launcher(tmp_path: Path, probe: Path) -> Iterator[Launcher]:
    launch = Launcher(tmp_path, probe)
    try:
        yield launch
    finally:
        launch.cleanup()


@pytest.fixture
def tmux_env() -> dict[str, str]:
    """The caller's environment for the backend: this one, outside tmux."""
    env = dict(os.environ)
    env.pop("TMUX", None)
    env.pop("TMUX_PANE", None)
    return env


@pytest.fixture
def tmux_backend(server: Server, tmux_env: dict[str, str]) -> Iterator[TmuxBackend]:
    """A backend on the private test server; every pane's tree is killed at teardown."""
    backend = TmuxBackend(server.socket_name, tmux_env)
    try:
        yield backend
    finally:
        kill_all_panes(server)


