"""Helpers for the backend tests: the probe teammate, a launcher, tmux queries.

The "teammate" is ``probe.py``, a small Python program written into the test's
tmp dir. It records its argv, chosen environment variables, cwd and pids as
JSON (written atomically to ``$PROBE_OUT``), prints a line to stdout and one to
stderr, and sleeps. With ``PROBE_TREE=1`` it first starts a child that ignores
SIGTERM, which starts a grandchild that ignores SIGTERM *and* leaves for its
own session, so only SIGKILL after the grace period, aimed at every collected
pid, can end the tree.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from libtmux.server import Server

from swarm.backends.base import Backend, Handle, LaunchSpec
from swarm.backends.procs import kill_tree
from swarm.errors import SwarmError

TEAM = "crew"
GRACE = 0.3

PROBE = f"""#!{sys.executable}
import json, os, signal, subprocess, sys, time

GRAND = '''
import os, signal, time
os.setsid()
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("ready", flush=True)
time.sleep(60)
'''
CHILD = '''
import signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
grand = subprocess.Popen([sys.executable, "-c", sys.argv[1]], stdout=subprocess.PIPE, text=True)
grand.stdout.readline()
print(grand.pid, flush=True)
time.sleep(60)
'''

keys = [k for k in os.environ.get("PROBE_KEYS", "").split(",") if k]
record = {{
    "argv": sys.argv[1:],
    "env": {{k: os.environ.get(k) for k in keys}},
    "cwd": os.getcwd(),
    "pids": [os.getpid()],
}}
print("probe says hello on stdout", flush=True)
print("probe says hello on stderr", file=sys.stderr, flush=True)
if os.environ.get("PROBE_TREE"):
    child = subprocess.Popen([sys.executable, "-c", CHILD, GRAND], stdout=subprocess.PIPE, text=True)
    record["pids"] += [child.pid, int(child.stdout.readline())]
out = os.environ["PROBE_OUT"]
with open(out + ".tmp", "w", encoding="utf-8") as fh:
    json.dump(record, fh)
os.replace(out + ".tmp", out)
time.sleep(60)
"""


def retry_until(check: Callable[[], bool], timeout: float = 5.0, interval: float = 0.02, what: str = "") -> None:
    """Poll ``check`` until it is true; fail the test after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what or check}")
        time.sleep(interval)


@dataclass
class Launcher:
    """Starts teammates and remembers every handle and pid for teardown."""

    tmp_path: Path
    probe: Path
    started: list[tuple[Backend, Handle]] = field(default_factory=list)
    pids: list[int] = field(default_factory=list)

    def spec(self, name: str, *args: str, tree: bool = False, keys: tuple[str, ...] = (), **kw: Any) -> LaunchSpec:
        """A spec running the probe as ``name``; its record goes to ``<tmp>/<name>.json``."""
        env = {"PROBE_OUT": str(self.out(name)), "PROBE_KEYS": ",".join(keys), **kw.pop("env", {})}
        if tree:
            env["PROBE_TREE"] = "1"
        defaults: dict[str, Any] = {
            "argv": [sys.executable, str(self.probe), *args],
            "env": env,
            "cwd": self.tmp_path,
            "team": TEAM,
            "name": name,
            "log_path": self.tmp_path / "logs" / f"{name}.log",
        }
        return LaunchSpec(**{**defaults, **kw})

    def out(self, name: str) -> Path:
        return self.tmp_path / f"{name}.json"

    def start(self, backend: Backend, spec: LaunchSpec) -> Handle:
        handle = backend.start(spec)
        self.started.append((backend, handle))
        if handle.pid is not None:
            self.pids.append(handle.pid)
        return handle

    def record(self, name: str, timeout: float = 10.0) -> dict[str, Any]:
        """Wait for the probe's JSON record; its pids are stopped at teardown."""
        path = self.out(name)
        retry_until(path.exists, timeout, what=f"{path.name} to be written")
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        self.pids.extend(data["pids"])
        return data

    def cleanup(self) -> None:
        # Errors are suppressed on purpose: a failing stop here must not replace
        # the assertion that failed the test; kill_tree on the pids still runs.
        for backend, handle in reversed(self.started):
            with contextlib.suppress(SwarmError, OSError):
                backend.stop(handle, grace=0.1)
        for pid in self.pids:
            with contextlib.suppress(OSError):
                kill_tree(pid, 0.1)


def kill_all_panes(server: Server) -> None:
    """Kill every pane's process tree before the server goes (SIGHUP would miss some)."""
    # The server may already be gone (its last pane closed); nothing to do then.
    result = server.cmd("list-panes", "-a", "-F", "#{pane_pid}")
    for line in result.stdout if result.returncode == 0 else []:
        with contextlib.suppress(ValueError, OSError):
            kill_tree(int(line), 0.1)


def tmux_lines(server: Server, *args: str) -> list[str]:
    """stdout of a tmux command on the test server; fail on error."""
    result = server.cmd(*args)
    assert result.returncode == 0, result.stderr
    return list(result.stdout)


def pane_field(server: Server, pane_id: str, fmt: str) -> str:
    rows = tmux_lines(server, "list-panes", "-a", "-F", f"#{{pane_id}} {fmt}")
    for row in rows:
        found, _, value = row.partition(" ")
        if found == pane_id:
            return value
    raise AssertionError(f"pane {pane_id} not found in {rows}")
