"""SubprocessBackend and the process helpers, with real processes only."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from swarm.backends.procs import is_pid_alive, kill_tree, process_create_time
from swarm.backends.subprocess_backend import SubprocessBackend
from swarm.errors import BackendError
from tests.backends.helpers import GRACE, Launcher, retry_until


def own_zombies() -> list[int]:
    return [c.pid for c in psutil.Process().children() if c.status() == psutil.STATUS_ZOMBIE]


def all_dead(pids: list[int]) -> bool:
    return not any(is_pid_alive(pid) for pid in pids)


@pytest.fixture
def backend() -> SubprocessBackend:
    return SubprocessBackend({**os.environ, "SWARM_TEST_SECRET": "do-not-inherit"})


def test_start_appends_output_to_private_log(backend: SubprocessBackend, launcher: Launcher) -> None:
    spec = launcher.spec("alice")
    assert not spec.log_path.parent.exists()
    handle = launcher.start(backend, spec)
    assert (handle.backend, handle.pane_id) == ("subprocess", "")
    assert handle.pid is not None and backend.is_alive(handle)
    retry_until(lambda: spec.log_path.exists() and "on stderr" in spec.log_path.read_text(), what="log output")
    text = spec.log_path.read_text()
    assert "probe says hello on stdout" in text and "probe says hello on stderr" in text
    assert stat_mode(spec.log_path) == 0o600
    assert stat_mode(spec.log_path.parent) == 0o700
    assert backend.describe(handle) == f"subprocess (pid {handle.pid})"


def stat_mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def test_env_is_minimal_base_plus_spec(backend: SubprocessBackend, launcher: Launcher) -> None:
    keys = ("SWARM_AGENT", "SWARM_TEST_SECRET", "PATH", "HOME")
    launcher.start(backend, launcher.spec("alice", "one", "two words", env={"SWARM_AGENT": "alice@crew"}, keys=keys))
    record = launcher.record("alice")
    assert record["argv"] == ["one", "two words"]
    assert record["env"]["SWARM_AGENT"] == "alice@crew"
    assert record["env"]["SWARM_TEST_SECRET"] is None
    assert record["env"]["PATH"] == os.environ["PATH"]
    assert record["env"]["HOME"] == os.environ.get("HOME")


def test_stop_kills_whole_tree_and_is_idempotent(backend: SubprocessBackend, launcher: Launcher) -> None:
    handle = launcher.start(backend, launcher.spec("alice", tree=True))
    pids = launcher.record("alice")["pids"]
    assert len(pids) == 3 and all(is_pid_alive(pid) for pid in pids)
    began = time.monotonic()
    backend.stop(handle, grace=GRACE)
    assert time.monotonic() - began >= GRACE  # two of them ignore SIGTERM: SIGKILL was needed
    assert all_dead(pids)
    assert not backend.is_alive(handle)
    backend.stop(handle, grace=GRACE)  # a second stop is harmless
    assert handle.pid not in own_zombies()


def test_is_alive_false_after_kill9_and_no_zombie(backend: SubprocessBackend, launcher: Launcher) -> None:
    handle = launcher.start(backend, launcher.spec("alice"))
    assert handle.pid is not None
    launcher.record("alice")
    os.kill(handle.pid, signal.SIGKILL)
    retry_until(lambda: not backend.is_alive(handle), what="is_alive to turn false")
    assert handle.pid not in own_zombies()
    assert handle.pid not in [c.pid for c in psutil.Process().children()]


def test_handle_from_another_backend_instance(backend: SubprocessBackend, launcher: Launcher) -> None:
    handle = launcher.start(backend, launcher.spec("alice", tree=True))
    pids = launcher.record("alice")["pids"]
    other = SubprocessBackend(os.environ)  # as if read back from the team file
    assert other.is_alive(handle)
    other.stop(handle, grace=GRACE)
    assert all_dead(pids)
    assert not other.is_alive(handle)
    backend.stop(handle, grace=GRACE)  # the original owner reaps without complaint
    assert handle.pid not in own_zombies()


def test_missing_executable_is_one_line_error(backend: SubprocessBackend, launcher: Launcher) -> None:
    spec = launcher.spec("alice", argv=["definitely-not-a-program-xyz", "arg"])
    with pytest.raises(BackendError) as info:
        backend.start(spec)
    assert "definitely-not-a-program-xyz" in str(info.value) and "\n" not in str(info.value)


def test_bad_cwd_is_one_line_error(backend: SubprocessBackend, launcher: Launcher, tmp_path: Path) -> None:
    spec = launcher.spec("alice", cwd=tmp_path / "missing")
    with pytest.raises(BackendError, match="does not exist") as info:
        backend.start(spec)
    assert "\n" not in str(info.value)


# -- procs ---------------------------------------------------------------------


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def test_is_pid_alive_checks_create_time(sleeper: subprocess.Popen[bytes]) -> None:
    created = process_create_time(sleeper.pid)
    assert created is not None
    assert is_pid_alive(sleeper.pid) and is_pid_alive(sleeper.pid, created)
    assert not is_pid_alive(sleeper.pid, created - 100.0)  # same pid, other process


def test_zombie_counts_as_dead_and_kill_tree_tolerates_gone(sleeper: subprocess.Popen[bytes]) -> None:
    os.kill(sleeper.pid, signal.SIGKILL)
    retry_until(lambda: psutil.Process(sleeper.pid).status() == psutil.STATUS_ZOMBIE, what="zombie")
    assert not is_pid_alive(sleeper.pid)
    kill_tree(sleeper.pid, 0.1)  # zombie: nothing to signal, and no error
    sleeper.wait()
    assert process_create_time(sleeper.pid) is None
    kill_tree(sleeper.pid, 0.1)  # gone entirely
