"""``swarm up`` / ``swarm down`` as a user runs them: the installed executable, real processes.

Every test gets a fresh swarm home, a sample git repository (``make_sample_repo``)
and a private tmux socket (``SWARM_TMUX_SOCKET``), so the ``auto`` backend never
touches this machine's tmux server. No ``ANTHROPIC_API_KEY`` is set (the
top-level conftest removes it): members run on their playbooks, offline.

The ``up`` fixture stops everything a test started, in one ``finally``: the
``swarm`` processes it launched, every teammate process whose command line
names this home, every pane on the private socket and then the tmux server.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from swarm.backends.procs import kill_tree
from swarm.runtime.sample_repo import make_sample_repo
from tests.runtime.up.helpers import SWARM_EXE, Up, panes, teammate_pids


@pytest.fixture
def up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Up]:
    if not SWARM_EXE.exists():
        pytest.fail(f"installed swarm executable missing at {SWARM_EXE}; pip install the project first")
    home = tmp_path / "home"
    socket = f"swarm-up-{uuid.uuid4().hex[:10]}"
    monkeypatch.setenv("SWARM_HOME", str(home))
    monkeypatch.setenv("SWARM_TMUX_SOCKET", socket)
    monkeypatch.setenv("PYTHONUNBUFFERED", "1")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)  # offline: members run on their playbooks
    session = Up(home=home, socket=socket, repo=make_sample_repo(tmp_path / "repo"), tmp=tmp_path,
                 env=dict(os.environ))
    try:
        yield session
    finally:
        _cleanup(session)


def _cleanup(session: Up) -> None:
    # Errors are suppressed on purpose: a failing cleanup step must not replace
    # the assertion that failed the test, and the later steps must still run.
    for proc in session.procs:
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            if proc.poll() is None:
                kill_tree(proc.pid, 1.0)
            proc.wait(timeout=5)
    for handle in session.files:
        handle.close()
    for pid in teammate_pids(session.home):
        with contextlib.suppress(OSError):
            kill_tree(pid, 1.0)
    for pid in panes(session.socket, "#{pane_pid}"):
        with contextlib.suppress(OSError, ValueError):
            kill_tree(int(pid), 0.5)
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        subprocess.run(["tmux", "-L", session.socket, "kill-server"], capture_output=True, check=False, timeout=10)
