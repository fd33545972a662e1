"""CLI servers for the tests' homes, forked from one warm process per test worker instead of each a new interpreter.

A person's teammates are forked from their home's CLI server (``swarm.cli.forkserver``), which imports the CLI, a
teammate's modules and, for a real model, the ``anthropic`` SDK once. The tests turn the server off
(``SWARM_CLI_SERVER=0``) so that nothing outlives a test; so each teammate a test started was a new interpreter:
~0.7 s of CPU with the scripted model, ~3 s with the SDK. A test that asks for ``served`` gets its home's server
instead, started here cheaply:

- The **zygote** is one process per test worker, started at its first use: a new interpreter that imports what a
  server's warm-up imports (``tests.forked.preload``), then reads home paths on stdin. For each it forks a child
  and answers the child's pid.
- The child is the home's server: it runs ``swarm.cli.forkserver.serve`` unchanged, in a session of its own, with
  nothing of the zygote's but its imports. Its warm-up finds everything loaded.
- **Its command line names its home**, as a real server's does (``python -m swarm.cli.forkserver HOME``). The
  zygote is started with ``swarm.cli.forkserver`` and a placeholder argument of slashes, and the child writes
  its home over the placeholder, padded with slashes (the same path). ``teammate_processes`` finds the
  teammates forked from it by that, so a test's "nothing left running" still means something.

The zygote is a clean process, not the test process: nothing a test patched reaches a server or a teammate.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

import psutil

PLACEHOLDER = "/" * 400
"""The zygote's last argument: a child's home path is written over it (``_named_after``)."""
IDLE = 3600.0
"""A test's server never ends by itself: ``ForkedServer.stop`` stops it."""
REPO = Path(__file__).resolve().parents[1]


class Zygote:
    """The test worker's zygote process (see the module's text)."""

    def __init__(self) -> None:
        code = f"import sys; sys.path.insert(0, {str(REPO)!r}); from tests.zygote import main; main()"
        self.proc = subprocess.Popen([sys.executable, "-c", code, "swarm.cli.forkserver", PLACEHOLDER],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd="/",
                                     start_new_session=True)

    def fork_server(self, home: Path) -> int:
        """The pid of a new server for ``home``."""
        stdin, stdout = self._pipes()
        stdin.write(f"{home}\n")
        stdin.flush()
        answer = stdout.readline()
        if not answer.strip().isdigit():
            raise RuntimeError(f"the tests' zygote did not fork a server for {home}: {answer!r}")
        return int(answer)

    def close(self) -> None:
        stdin, _ = self._pipes()
        with contextlib.suppress(OSError):
            stdin.close()  # its end of input: it exits
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def _pipes(self) -> tuple[IO[str], IO[str]]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        return self.proc.stdin, self.proc.stdout


class ForkedServer:
    """``home``'s CLI server, forked by the zygote; ``stop`` ends it as SIGTERM ends any server."""

    def __init__(self, zygote: Zygote, home: Path) -> None:
        home.mkdir(parents=True, exist_ok=True)  # a server never makes its home
        self.pid = zygote.fork_server(home)

    def stop(self, timeout: float = 10.0) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGTERM)  # it stops its spare and removes its socket
        deadline = time.monotonic() + timeout
        while psutil.pid_exists(self.pid) and time.monotonic() < deadline:  # the zygote reaps it
            time.sleep(0.01)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signal.SIGKILL)


def main() -> None:
    """The zygote: import, then fork a server for each home path read on stdin; children are reaped by the kernel."""
    from tests.forked import preload

    preload()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    for line in iter(sys.stdin.readline, ""):
        home = line.strip()
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            _server(home)
        print(pid, flush=True)


def _server(home: str) -> None:
    status = 1
    try:
        os.setsid()
        _named_after(home)
        null = os.open(os.devnull, os.O_RDWR)
        for target in (0, 1, 2):
            os.dup2(null, target)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL)
        from swarm.cli.forkserver import serve

        status = serve(Path(home), IDLE)
    finally:
        os._exit(status)


def _named_after(home: str) -> None:
    """Write ``home``, padded with slashes to the placeholder's length, over the placeholder in this process's own
    argument area (what ``/proc/PID/cmdline`` shows)."""
    with open("/proc/self/stat", "rb") as stat:
        fields = stat.read().rsplit(b")", 1)[1].split()  # field 3 (state) on; arg_start and arg_end are 48, 49
    start, end = int(fields[45]), int(fields[46])
    area = ctypes.string_at(start, end - start)
    placeholder = PLACEHOLDER.encode() + b"\0"
    if not area.endswith(placeholder) or len(home.encode()) >= len(PLACEHOLDER):
        raise RuntimeError(f"cannot name this server after {home}: no room in its command line")
    ctypes.memmove(start + len(area) - len(placeholder), home.encode().ljust(len(PLACEHOLDER), b"/"), len(PLACEHOLDER))
