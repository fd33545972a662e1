from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
from click.testing import CliRunner, Result

from swarm.cli.entry import server_pid
from swarm.cli.main import cli
from swarm.core.home import Home
from tests.backends.helpers import retry_until
from tests.forked import SWARM_EXE, run_swarm


def live_cli_server(home: Home) -> int | None:
    """The pid of the home's CLI server if it runs (a zombie waiting to be reaped does not), else None."""
    pid = server_pid(home.cli_lock_path)
    if pid is None:
        return None
    try:
        proc = psutil.Process(pid)
        alive = proc.status() != psutil.STATUS_ZOMBIE and "swarm.cli.forkserver" in proc.cmdline()
    except psutil.Error:
        return None
    return pid if alive else None


def children_named(parent: psutil.Process, comm: bytes) -> list[psutil.Process]:
    """``parent``'s live children whose name is ``comm`` (one that ends while they are read is not among them)."""
    found = []
    for child in parent.children():
        try:
            if child.name() == comm.decode() and child.status() != psutil.STATUS_ZOMBIE:
                found.append(child)
        except psutil.NoSuchProcess:
            continue
    return found


@pytest.fixture
def run_cli() -> Callable[..., Result]:
    """Invoke the CLI in-process (click's runner) with the test's environment."""
    runner = CliRunner()

    def invoke(*args: str, input: str | None = None) -> Result:
        return runner.invoke(cli, list(args), input=input, catch_exceptions=False)

    return invoke


@pytest.fixture
def run_exe(tmp_path: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run ``swarm ARGS`` as a process of its own, in ``tmp_path/cwd`` (forked from this one: ``run_swarm``)."""
    cwd = tmp_path / "cwd"
    cwd.mkdir(exist_ok=True)

    def run(*args: str, input: str | None = None, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        return run_swarm(args, input=input, cwd=cwd, timeout=timeout)

    return run


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """An empty git repository (on ``main``) in the test's tmp dir."""
    from tests.runtime.worktrees.conftest import git

    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    return path


HOSTILE = ("hi\x1b]52;c;cm0gLXJmIH4K\x07\x1b]0;pwned\x07\x1b[2J\x9d0;c1 title\x9c\x9b2J\x7f\u202eevil"
           "\x08\x08\rover")
"""What a hostile teammate writes to reach the person's terminal: an OSC 52 clipboard write, a title change, a
screen clear, the same as one-byte C1 controls (OSC, CSI), DEL, a bidi override, backspaces and a carriage
return that would overwrite the line."""
HOSTILE_SHOWN = "hi\\x1b]52;c;cm0gLXJmIH4K\\x07\\x1b]0;pwned\\x07\\x1b[2J\\x9d0;c1 title"
"""How its start reads once escaped for the terminal."""


def on_a_terminal(args: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None,
                  stdin: int | None = subprocess.DEVNULL, timeout: float = 60) -> str:
    """Run ``swarm ARGS`` with stdout and stderr on a pty and return everything it wrote there, as written."""
    import pty
    import select
    import time

    master, slave = pty.openpty()
    proc = subprocess.Popen([str(SWARM_EXE), *args], stdin=stdin, stdout=slave, stderr=slave, cwd=cwd,
                            env=env if env is not None else dict(os.environ), start_new_session=True)
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if select.select([master], [], [], 0.2)[0]:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # every writer closed the pty
                    break
                if not chunk:
                    break
                seen += chunk
            elif proc.poll() is not None:
                break
        else:
            pytest.fail(f"swarm {' '.join(args)} did not finish within {timeout:g}s; it wrote:\n{seen!r}")
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
    return seen.decode()


def terminal_controls(output: str) -> list[str]:
    """The characters in ``output`` a terminal would act on (or hide text with): every C0 and C1 control but
    the newline and tab (a pty writes ``\\r\\n`` for a newline), DEL, and bidi controls."""
    text = output.replace("\r\n", "\n")
    bidi = set("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
    return [c for c in text if (ord(c) < 0x20 and c not in "\n\t") or 0x7f <= ord(c) <= 0x9f or c in bidi]


@pytest.fixture
def short_home() -> Iterator[Home]:
    """A home under a short /tmp path (a unix socket path is limited to ~107 bytes); its server is stopped."""
    root = Path(tempfile.mkdtemp(prefix="swhl-", dir="/tmp"))
    home = Home(root / "home")
    try:
        yield home
    finally:
        pid = live_cli_server(home)
        if pid is not None:
            with contextlib.suppress(psutil.NoSuchProcess):
                proc = psutil.Process(pid)
                stop_server(proc)
                psutil.wait_procs([proc], timeout=10)
        shutil.rmtree(root, ignore_errors=True)


def stop_server(proc: psutil.Process) -> None:
    """SIGKILL a CLI server's children (teammates, its spare), then SIGTERM it; any of them may be gone already
    (a child reaped between the listing and its signal)."""
    try:
        children = proc.children(recursive=True)
    except psutil.NoSuchProcess:
        children = []
    for child in children:
        with contextlib.suppress(psutil.NoSuchProcess):
            child.kill()
    with contextlib.suppress(psutil.NoSuchProcess):
        proc.terminate()


@dataclass(frozen=True)
class Signalled:
    """How a ``swarm`` run ended after a signal: its output, exit status, and seconds from the signal to its exit."""

    out: str
    err: str
    returncode: int
    took: float


def run_and_signal(args: list[str], cwd: Path, env: Mapping[str, str], ready: Callable[[], bool], signum: int, *,
                   what: str, timeout: float = 30) -> Signalled:
    """Run ``swarm ARGS``, send it ``signum`` once ``ready()`` (waited for, as ``what``), and wait for its end."""
    proc = subprocess.Popen([str(SWARM_EXE), *args], cwd=cwd, env=dict(env), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        retry_until(ready, 30, what=what)
        began = time.monotonic()
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=timeout)
        return Signalled(out, err, proc.returncode, time.monotonic() - began)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
