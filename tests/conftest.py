"""Fixtures shared by every test: an isolated swarm home and environment."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from swarm.core.home import Home
from tests.fakes import FakeAnthropicServer


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """No test reads this machine's home, API key or tmux server."""
    monkeypatch.setenv("SWARM_HOME", str(tmp_path_factory.mktemp("swarm-home-default")))
    # every tmux server a test starts keeps its socket under a tmp dir, not /tmp/tmux-<uid>
    monkeypatch.setenv("TMUX_TMPDIR", str(tmp_path_factory.mktemp("tmux")))
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_MODEL", "SWARM_TEAM",
                "SWARM_TMUX_SOCKET", "TMUX", "TMUX_PANE"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Home:
    """A fresh swarm home under tmp_path, also exported as SWARM_HOME."""
    root = tmp_path / "home"
    monkeypatch.setenv("SWARM_HOME", str(root))
    return Home(root)


@pytest.fixture
def anthropic_server() -> Iterator[FakeAnthropicServer]:
    """A started fake Messages API on 127.0.0.1; always stopped."""
    server = FakeAnthropicServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def api(anthropic_server: FakeAnthropicServer) -> FakeAnthropicServer:
    """Short name for ``anthropic_server``."""
    return anthropic_server
