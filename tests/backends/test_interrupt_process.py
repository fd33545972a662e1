"""``interrupt_process``: the one SIGINT swarm sends a teammate (as its pane's Ctrl-C), never to a reused pid."""

from __future__ import annotations

import signal
import subprocess

from swarm.backends.procs import interrupt_process, process_create_time


def test_sigint_reaches_the_recorded_process_and_never_a_pid_that_started_at_another_time() -> None:
    proc = subprocess.Popen(["sleep", "30"])
    try:
        started = process_create_time(proc.pid)
        assert started is not None
        assert interrupt_process(proc.pid, started + 5.0) is False  # a reused pid: not the teammate, not signalled
        assert proc.poll() is None
        assert interrupt_process(proc.pid, started) is True
        assert proc.wait(timeout=5) == -signal.SIGINT
        assert interrupt_process(proc.pid, started) is False  # gone (reaped): nothing to reach
    finally:
        proc.kill()
        proc.wait()
