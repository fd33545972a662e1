"""Fixtures shared by every test: an isolated swarm home and environment."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from swarm.core.home import Home
from tests.fakes import FakeAnthropicServer
from tests.fakes.mcp_servers import HttpMcpServer


def trust_tmp_dirs(config: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Make the Claude Code config dir ``config`` trust the session's tmp dirs (Claude Code's record)."""
    base = str(tmp_path_factory.getbasetemp().resolve())
    (config / ".claude.json").write_text(json.dumps({"projects": {base: {"hasTrustDialogAccepted": True}}}))


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """No test reads this machine's home, API key or tmux server."""
    monkeypatch.setenv("SWARM_HOME", str(tmp_path_factory.mktemp("swarm-home-default")))
    # every tmux server a test starts keeps its socket under a tmp dir, not /tmp/tmux-<uid>
    monkeypatch.setenv("TMUX_TMPDIR", str(tmp_path_factory.mktemp("tmux")))
    # user-level agent definitions, skills and CLAUDE.md come from here, never from this machine's ~/.claude;
    # its .claude.json trusts every tmp dir, so project configuration applies in tests not about trust
    # (tests/cli/test_trust.py starts from a config that trusts nothing)
    config = tmp_path_factory.mktemp("claude-config")
    trust_tmp_dirs(config, tmp_path_factory)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    # a `swarm` a test runs never starts a CLI server that would outlive it (tests/cli/test_forkserver.py: on)
    monkeypatch.setenv("SWARM_CLI_SERVER", "0")
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "ANTHROPIC_MODEL",
                "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "SWARM_TEAM",
                "SWARM_TMUX_SOCKET", "TMUX", "TMUX_PANE", "SWARM_FORK_SUBAGENT", "SWARM_SUBAGENT_MODEL",
                "CLAUDE_CODE_SUBAGENT_MODEL", "SWARM_MODEL_HAIKU", "SWARM_MODEL_SONNET", "SWARM_MODEL_OPUS",
                "ANTHROPIC_DEFAULT_HAIKU_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL", "ANTHROPIC_DEFAULT_OPUS_MODEL"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(autouse=True)
def _no_cli_server_outlives_its_test(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A test that runs `swarm` with an environment of its own (no SWARM_CLI_SERVER=0) may start a CLI server
    in one of its tmp homes; it is stopped when the test ends, as every process a test starts."""
    yield
    base = str(tmp_path_factory.getbasetemp())
    servers = []
    for proc in psutil.process_iter(["cmdline"]):
        cmd = proc.info["cmdline"] or []
        if "swarm.cli.forkserver" in cmd and cmd[-1].startswith(base):
            servers.append(proc)
            with contextlib.suppress(psutil.Error):
                proc.terminate()
    psutil.wait_procs(servers, timeout=10)


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


@pytest.fixture(scope="session")
def mcp_http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpMcpServer]:
    """One streamable-HTTP MCP server (the SDK's server API) for the session, on a free loopback port."""
    server = HttpMcpServer(tmp_path_factory.mktemp("mcp-http") / "calls.log").start()
    try:
        yield server
    finally:
        server.stop()
