"""Fixtures shared by every test: an isolated swarm home and environment."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

import tests.fakes.pg_cluster as pg_cluster
from swarm.core.home import Home
from tests.fakes import FakeAnthropicServer
from tests.fakes.mcp_servers import HttpMcpServer
from tests.zygote import ForkedServer, Zygote


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
                "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "SWARM_TEAM", "SWARM_STORE",
                "SWARM_TMUX_SOCKET", "TMUX", "TMUX_PANE", "SWARM_FORK_SUBAGENT", "SWARM_SUBAGENT_MODEL",
                "CLAUDE_CODE_SUBAGENT_MODEL", "SWARM_MODEL_HAIKU", "SWARM_MODEL_SONNET", "SWARM_MODEL_OPUS",
                "ANTHROPIC_DEFAULT_HAIKU_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL", "ANTHROPIC_DEFAULT_OPUS_MODEL"):
        monkeypatch.delenv(var, raising=False)


_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def pytest_configure(config: pytest.Config) -> None:
    """A suite started in the background of a shell script (``.ci/run > log &``) inherits SIGINT ignored, and so
    would every process its tests start: a test's Ctrl-C (``interrupt_process``, ``--follow`` ended by SIGINT)
    would reach nothing. The test process takes Python's own handler back, so its children start with the default."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    _cache_compiled_modules()


def _cache_compiled_modules() -> None:
    """Python's default, which some CI images turn off (``PYTHONDONTWRITEBYTECODE``): a module compiled once is
    cached in ``__pycache__``. Without it every one of the run's Python processes (xdist workers, each `swarm`
    command, each teammate, each worker script) compiled again what it imported: collecting the suite took
    13-15 s of CPU per worker instead of 4.5, a teammate's start ~0.8 s instead of ~0.6. Set here, before
    xdist starts its workers, so they and every process a test starts inherit it (the README command and
    ``.ci/run`` alike: one place)."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.dont_write_bytecode = False


def _signal_state() -> tuple[set[str], set[str]]:
    ignored = {s.name for s in _STOP_SIGNALS if signal.getsignal(s) == signal.SIG_IGN}
    blocked = {s.name for s in _STOP_SIGNALS if s in signal.pthread_sigmask(signal.SIG_BLOCK, [])}
    return ignored, blocked


@pytest.fixture(autouse=True)
def _signals_left_as_found() -> Iterator[None]:
    """A test leaves no stop signal ignored or blocked that was not before it: every process a later test starts
    would inherit it (a ``sleep`` that a Ctrl-C no longer stops)."""
    ignored, blocked = _signal_state()
    yield
    now_ignored, now_blocked = _signal_state()
    if now_ignored - ignored or now_blocked - blocked:
        for name in now_ignored - ignored:
            sig = signal.Signals[name]
            signal.signal(sig, signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.Signals[n] for n in now_blocked - blocked])
        pytest.fail(f"the test left {sorted(now_ignored - ignored)} ignored and {sorted(now_blocked - blocked)} "
                    "blocked in the test process")


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


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """The URL of a PostgreSQL database for the whole run: ``$SWARM_TEST_POSTGRES`` (``.ci/run`` starts one),
    else a throwaway cluster this session starts (and stops). A test isolates itself in a schema of its own
    (``pg_cluster.fresh_schema``, as ``team_store`` does)."""
    import os

    pytest.importorskip("psycopg", reason="the postgres extra is not installed")
    given = os.environ.get("SWARM_TEST_POSTGRES")
    if given:
        yield given
        return
    try:
        directory, url = pg_cluster.start()
    except (RuntimeError, OSError) as exc:
        pytest.skip(f"no PostgreSQL to test against: {exc}")
    try:
        yield url
    finally:
        pg_cluster.stop(directory)


both_stores = pytest.mark.parametrize("team_store", ["files", "postgresql"], indirect=True)
"""Run a test once with its team in files and once in PostgreSQL (it takes ``team_store``)."""


@pytest.fixture
def team_store(request: pytest.FixtureRequest) -> str | None:
    """The store a test's team is created in: None for files (the default), else the URL of a schema of its own
    in the session's PostgreSQL (``@both_stores`` runs a test with each)."""
    if getattr(request, "param", "files") == "files":
        return None
    return pg_cluster.fresh_schema(request.getfixturevalue("postgres_url"))


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Home:
    """A fresh swarm home under tmp_path, also exported as SWARM_HOME."""
    root = tmp_path / "home"
    monkeypatch.setenv("SWARM_HOME", str(root))
    return Home(root)


@pytest.fixture(scope="session")
def zygote() -> Iterator[Zygote]:
    """The process this test worker's CLI servers are forked from (``tests.zygote``)."""
    forker = Zygote()
    try:
        yield forker
    finally:
        forker.close()


@pytest.fixture
def served(home: Home, zygote: Zygote, monkeypatch: pytest.MonkeyPatch) -> Iterator[ForkedServer]:
    """``home``'s CLI server (``tests.zygote``) and ``SWARM_CLI_SERVER=1``: the teammates a test starts are forked
    from it, as a person's are, rather than each a new interpreter."""
    server = ForkedServer(zygote, home.root)
    monkeypatch.setenv("SWARM_CLI_SERVER", "1")
    try:
        yield server
    finally:
        server.stop()


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


class OpenLog:
    """The paths this process opens (``open`` audit events: ``open()``, ``os.open`` and the C-level ones),
    recorded while a ``with`` block of ``recording()`` runs; no function is patched."""

    def __init__(self) -> None:
        self.paths: list[str] | None = None
        sys.addaudithook(self._hook)  # hooks stay for the process's life: one per session

    def _hook(self, event: str, args: tuple[object, ...]) -> None:
        if event == "open" and self.paths is not None and isinstance(args[0], (str, bytes, os.PathLike)):
            self.paths.append(os.fsdecode(args[0]))

    @contextlib.contextmanager
    def recording(self) -> Iterator[list[str]]:
        self.paths = seen = []
        try:
            yield seen
        finally:
            self.paths = None


@pytest.fixture(scope="session")
def open_log() -> OpenLog:
    """Counts what this process opens, e.g. reads of ``/proc/locks`` (see ``OpenLog``)."""
    return OpenLog()


@pytest.fixture
def os_calls(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How often this process calls ``os.fsync``, ``os.stat`` and ``os.pread`` while the test runs: by name,
    and by name and file name where the first argument is a path (opens: ``open_log``)."""
    counted: Counter[str] = Counter()

    def counting(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            counted[name] += 1
            if args and isinstance(args[0], (str, os.PathLike)):
                counted[f"{name} {os.path.basename(os.fspath(args[0]))}"] += 1
            return real(*args, **kwargs)
        return call

    for name in ("fsync", "stat", "pread"):
        monkeypatch.setattr(os, name, counting(name, getattr(os, name)))
    return counted
