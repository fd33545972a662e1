"""A respawn the backend refuses takes back only what it made.

alice ran, was killed, and others queued messages for her. Respawning her
fails at the backend; the messages and her old member entry must still be
there afterwards, exactly as before the failed call.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.teams import TeamStore
from tests.forked import run_swarm

pytestmark = pytest.mark.usefixtures("served")  # teammates forked from the home's CLI server (tests.zygote)

QUEUED = ["first", "second", "third"]


def swarm(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_swarm(args, timeout=60, env=env)


@pytest.fixture
def killed_alice(home: Home, tmp_path: Path) -> Iterator[Path]:
    """Team ``t`` with alice spawned (subprocess backend), killed, and 3 messages queued for her."""
    work = tmp_path / "work"
    work.mkdir()
    assert swarm("team", "create", "t").returncode == 0
    spawned = swarm("spawn", "alice", "--team", "t", "-p", "hi", "--backend", "subprocess", "--cwd", str(work),
                    "--json")
    assert spawned.returncode == 0, spawned.stderr
    pid = json.loads(spawned.stdout)["pid"]
    try:
        assert swarm("kill", "alice", "--team", "t").returncode == 0
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
        for text in QUEUED:
            assert swarm("send", "alice", text, "--team", "t").returncode == 0
        yield work
    finally:
        if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
            psutil.Process(pid).kill()


def _log_is_a_directory(home: Home, tmp_path: Path) -> dict[str, str]:
    log = home.log_path("t", "alice")
    log.unlink(missing_ok=True)
    log.mkdir()
    return {"backend": "subprocess", **os.environ}


def _tmux_that_fails(home: Home, tmp_path: Path) -> dict[str, str]:
    """A ``tmux`` on PATH that reports a good version and then refuses to start anything."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "tmux"
    fake.write_text('#!/bin/sh\nif [ "$1" = "-V" ]; then echo "tmux 3.4"; exit 0; fi\n'
                    'echo "server exited unexpectedly" >&2\nexit 1\n')
    fake.chmod(0o755)
    return {"backend": "tmux", **os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}


@pytest.mark.parametrize("refuse", [_log_is_a_directory, _tmux_that_fails], ids=["log-is-a-directory", "tmux-fails"])
def test_failed_respawn_keeps_queued_messages_and_old_entry(
    home: Home, tmp_path: Path, killed_alice: Path, refuse: Callable[[Home, Path], dict[str, str]]
) -> None:
    before = TeamStore(home).get("t").member("alice")
    assert before is not None and not before.is_active
    env = refuse(home, tmp_path)
    backend = env.pop("backend")
    failed = swarm("spawn", "alice", "--team", "t", "-p", "try again", "--backend", backend,
                   "--cwd", str(killed_alice), env=env)
    assert failed.returncode != 0
    lines = failed.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("swarm: error: "), failed.stderr
    assert [e.text for e in Mailbox(home, "t").read("alice")] == QUEUED, "messages queued for alice were lost"
    after = TeamStore(home).get("t").member("alice")
    assert after is not None and after.wire() == before.wire(), "the old member entry was not put back"
