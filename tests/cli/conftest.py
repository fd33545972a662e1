from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
from click.testing import CliRunner, Result

from swarm.cli.entry import server_pid
from swarm.cli.main import cli
from swarm.core.home import Home

SWARM_EXE = Path(sys.executable).parent / "swarm"


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


@pytest.fixture
def run_cli() -> Callable[..., Result]:
    """Invoke the CLI in-process (click's runner) with the test's environment."""
    runner = CliRunner()

    def invoke(*args: str, input: str | None = None) -> Result:
        return runner.invoke(cli, list(args), input=input, catch_exceptions=False)

    return invoke


@pytest.fixture
def run_exe(tmp_path: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run the installed ``swarm`` executable in a subprocess."""
    if not SWARM_EXE.exists():
        pytest.fail(f"installed swarm executable missing at {SWARM_EXE}; pip install the project first")
    cwd = tmp_path / "cwd"
    cwd.mkdir(exist_ok=True)

    def run(*args: str, input: str | None = None, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(SWARM_EXE), *args], capture_output=True, text=True, input=input,
                              cwd=cwd, env=dict(os.environ), timeout=timeout)

    return run


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """An empty git repository (on ``main``) in the test's tmp dir."""
    from tests.runtime.worktrees.conftest import git

    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    return path
