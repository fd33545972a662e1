"""A worker forked from the test process instead of a fresh interpreter: the same code, without the ~0.2 s of CPU
that importing swarm costs each new ``python -c``.

The child is a real process in a session of its own, with its own stdin, stdout and stderr, so a test kills it
with SIGKILL, reads its lines and writes it commands exactly as it does a ``subprocess.Popen``. What it runs is
the worker's code under ``__main__`` with ``sys.argv`` set, as ``python -c`` would; what the test process
imported is already there (the point), nothing else of it is used: every other descriptor is closed, the
signals, logging and warnings filters are as a new interpreter has them, and the child ends with ``os._exit`` (no atexit handler, no buffer of the
test's flushed twice).
"""

from __future__ import annotations

import io
import logging
import os
import signal
import subprocess
import sys
import time
import traceback
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import IO, NoReturn

DEFAULTED = (signal.SIGINT, signal.SIGTERM, signal.SIGALRM, signal.SIGCHLD, signal.SIGHUP, signal.SIGUSR1)
"""Signals whose handlers the test process may have set (pytest-timeout's SIGALRM, for one): defaults again."""


class ForkedProcess:
    """The part of ``subprocess.Popen`` a worker uses: pid, stdin, stdout, poll, wait, returncode."""

    def __init__(self, code: str, args: list[str], env: Mapping[str, str], cwd: Path, stderr_path: Path) -> None:
        in_read, in_write = os.pipe()
        out_read, out_write = os.pipe()
        err = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        pid = os.fork()
        if pid == 0:
            _child(code, args, env, cwd, (in_read, out_write, err))
        for fd in (in_read, out_write, err):
            os.close(fd)
        self.pid = pid
        self.returncode: int | None = None
        self.stdin: IO[bytes] | None = os.fdopen(in_write, "wb")
        self.stdout: IO[bytes] | None = os.fdopen(out_read, "rb")

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                return self.returncode
            if pid == self.pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(["<forked worker>"], timeout or 0.0)
            time.sleep(0.002)
        assert self.returncode is not None
        return self.returncode


def _fresh_logging() -> None:
    """Logging as in a new interpreter: no handler anywhere (a warning reaches stderr through ``lastResort``), the
    root at WARNING; pytest's capturing handlers would otherwise swallow what the worker logs."""
    for logger in [logging.root, *logging.Logger.manager.loggerDict.values()]:
        if isinstance(logger, logging.Logger):
            logger.handlers.clear()
            logger.setLevel(logging.NOTSET)
            logger.propagate, logger.disabled = True, False
    logging.root.setLevel(logging.WARNING)


def _child(code: str, args: list[str], env: Mapping[str, str], cwd: Path, fds: tuple[int, int, int]) -> NoReturn:
    status = 1
    try:
        os.setsid()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        for signum in DEFAULTED:
            signal.signal(signum, signal.SIG_DFL)
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        sys.argv = ["-c", *args]
        _fresh_logging()
        warnings.resetwarnings()  # pytest's filters (errors, captures) are the test's, not the worker's
        sys.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)))
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), write_through=True)
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), write_through=True)
        exec(compile(code, "<worker>", "exec"), {"__name__": "__main__"})  # noqa: S102 - the test's own code
        status = 0
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
    except BaseException:  # a worker's bug: on its stderr, as python -c would print it
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(status)
