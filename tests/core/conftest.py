"""Fixtures for the core tests: a team with one recipient, and real worker processes.

Workers are children in their own session, with ``SWARM_HOME`` pointing at
the test's home: forked from the test process when they run the prologue
(``tests.forked.ForkedProcess``: swarm already imported), else
``sys.executable -c <code>``. Every worker a test starts is
SIGKILLed (whole process group) and reaped when the test ends, pass or fail.
A worker talks to the test through stdout lines (``say("ready")``) and reads
commands from stdin (``sys.stdin.readline()``), so the test waits on events
with a deadline instead of sleeping.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from swarm.core.home import Home
from swarm.core.protocol import Member, build_models
from swarm.core.teams import TeamStore
from tests.forked import ForkedProcess

TEAM = "crew"
RECIPIENT = "bob"
REPO_ROOT = Path(__file__).resolve().parents[2]

PROLOGUE = f"""
import json, os, sys, time
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.protocol import build_models
build_models()  # before 'ready': the timed part is the traffic, not building the models on first use
home = Home.from_env()
mb = Mailbox(home, {TEAM!r})
INBOX = home.inbox_path({TEAM!r}, {RECIPIENT!r})

def say(word):
    print(word, flush=True)

def open_log(path):
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

def record(fd, *items):
    # one write() per batch, then fsync: a SIGKILL leaves whole lines or nothing
    if items:
        os.write(fd, "".join(json.dumps(i) + "\\n" for i in items).encode())
        os.fsync(fd)
"""


class Worker:
    """One child process; stdout is read line by line with a deadline."""

    def __init__(self, name: str, proc: subprocess.Popen[bytes] | ForkedProcess, stderr_path: Path) -> None:
        self.name = name
        self.proc = proc
        self.stderr_path = stderr_path
        self._buffer = b""

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stderr(self) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")[-4000:]
        except FileNotFoundError:
            return ""

    def _fail(self, what: str) -> None:
        pytest.fail(f"worker {self.name} (pid {self.pid}, rc {self.proc.poll()}): {what}\n"
                    f"--- stderr ---\n{self.stderr()}")

    def expect(self, line: str, timeout: float = 20.0) -> None:
        """Block until the worker prints ``line`` (skipping other lines); fail on exit or deadline."""
        deadline = time.monotonic() + timeout
        while self.line(deadline - time.monotonic(), waiting_for=line) != line:
            pass

    def line(self, timeout: float = 20.0, waiting_for: str | None = None) -> str:
        """The next line the worker prints; fail on exit or deadline."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        what = repr(waiting_for) if waiting_for is not None else "a line"
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._fail(f"did not print {what} within {timeout:g}s")
            ready, _, _ = select.select([fd], [], [], remaining)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    self._fail(f"exited before printing {what}")
                self._buffer += chunk
        got, self._buffer = self._buffer.split(b"\n", 1)
        return got.decode(errors="replace")

    def tell(self, line: str = "go") -> None:
        """Write a line to the worker's stdin; a worker that already exited is
        left to the next ``expect``/``join`` to report."""
        assert self.proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            self.proc.stdin.write(line.encode() + b"\n")
            self.proc.stdin.flush()

    def join(self, timeout: float) -> int:
        """Wait for a normal exit; fail (with the worker's stderr) on deadline."""
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self._fail(f"still running after {timeout:g}s")
            raise  # unreachable: pytest.fail raises

    def kill(self) -> None:
        """SIGKILL the worker's process group and reap it; safe to call twice."""
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):  # a broken pipe to a dead child is expected
                    stream.close()


class Workers:
    """Starts workers and remembers them so the fixture can stop them all."""

    def __init__(self, home: Home, logs: Path) -> None:
        self.home = home
        self.logs = logs
        self.started: list[Worker] = []
        self.env = dict(os.environ, SWARM_HOME=str(home.root), PYTHONUNBUFFERED="1",
                        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])))

    def start(self, name: str, body: str, *args: object, prologue: bool = True) -> Worker:
        """Run ``body`` (after ``PROLOGUE`` unless ``prologue=False``) with ``args`` in sys.argv[1:]. With the
        prologue the worker is forked from this process, which has swarm imported and its models built (``forked``);
        without it, a fresh interpreter."""
        self.logs.mkdir(parents=True, exist_ok=True)
        stderr_path = self.logs / f"{name}-{len(self.started)}.stderr"
        if prologue:
            build_models()  # once here rather than in each child
            forked = ForkedProcess(PROLOGUE + body, list(map(str, args)), self.env, self.logs, stderr_path)
            worker = Worker(name, forked, stderr_path)
            self.started.append(worker)
            return worker
        code = body
        with stderr_path.open("wb") as err:
            proc = subprocess.Popen(
                [sys.executable, "-c", code, *map(str, args)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                env=self.env, cwd=self.logs, start_new_session=True,
            )
        worker = Worker(name, proc, stderr_path)
        self.started.append(worker)
        return worker

    def stop_all(self) -> None:
        for worker in self.started:
            # Teardown must not mask the test's own failure: a worker that is
            # already gone is fine, anything else is reported by the test itself.
            with contextlib.suppress(Exception):
                worker.kill()


@pytest.fixture
def team(home: Home, team_store: str | None) -> Home:
    """``home`` with team ``crew`` (team-lead + ``bob``), in files or in ``team_store``'s database; returns the home."""
    store = TeamStore(home)
    store.create(TEAM, cwd=str(home.root), store=team_store)
    store.add_member(TEAM, Member(agent_id=f"{RECIPIENT}@{TEAM}", name=RECIPIENT))
    return home


@pytest.fixture
def inbox(team: Home) -> Path:
    """Path of bob's inbox in team ``crew``."""
    return team.inbox_path(TEAM, RECIPIENT)


@pytest.fixture
def workers(team: Home, tmp_path: Path) -> Iterator[Workers]:
    pool = Workers(team, tmp_path / "workers")
    try:
        yield pool
    finally:
        pool.stop_all()


@pytest.fixture
def wait_for() -> Callable[..., None]:
    """``wait_for(predicate, timeout, what)``: poll until true, fail at the deadline."""

    def wait(predicate: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() >= deadline:
                pytest.fail(f"timed out after {timeout:g}s waiting for {what}")
            time.sleep(0.005)

    return wait


@pytest.fixture(scope="session")
def proper_lockfile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A temp dir with ``proper-lockfile@4`` (Claude Code's lock) installed from npm; Node scripts go beside it.

    Skipped, with the reason, without node and npm or when the registry cannot be reached.
    """
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are needed to run the real proper-lockfile (Claude Code's lock)")
    where = tmp_path_factory.mktemp("proper-lockfile")
    try:
        done = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--silent", "proper-lockfile@4"],
                              cwd=where, capture_output=True, text=True, timeout=180, check=False)
    except subprocess.TimeoutExpired:
        pytest.skip("npm install proper-lockfile@4 took over 180 s (registry unreachable?)")
    if done.returncode != 0:
        pytest.skip(f"npm install proper-lockfile@4 failed (registry unreachable?): {done.stderr.strip()[-300:]}")
    return where
