"""Processes forked from the test process instead of fresh interpreters: the same code, without the ~0.2-0.5 s of
CPU that a new interpreter spends importing swarm (and, for ``swarm``, click, pydantic and the command's modules).

Two kinds:

- ``ForkedProcess``: a worker script (``tests/core``) run under ``__main__`` with ``sys.argv`` set, as ``python -c``
  would run it; the test kills it with SIGKILL, reads its lines and writes it commands as it does a ``Popen``.
- ``run_swarm``: one ``swarm ARGS`` command, returned as ``subprocess.run(..., capture_output=True, text=True)``
  returns it. This is how the product's own CLI server runs a served command (``swarm.cli.served_command``): a
  child forked from a process that has the CLI imported takes the caller's fds, cwd, umask, environment and argv
  (``take_over``, the same function) and runs ``swarm.cli.main.main``. Tests of what happens before that (the
  ``swarm`` executable's start-up, Ctrl-C while it loads, the client of a CLI server) run the real executable.

Either child is a real process in a session of its own, with its own stdin, stdout and stderr. What the test
process imported is already there (the point); nothing else of it is used: every other descriptor is closed, the
signals, logging and warnings filters are as a new interpreter has them, and the child ends with ``os._exit`` (no
atexit handler, no buffer of the test's flushed twice).
"""

from __future__ import annotations

import functools
import logging
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, NoReturn

from swarm.cli.served_command import Request, exit_status, take_over
from swarm.core.rendezvous import current_umask, package_dir

SWARM_EXE = Path(sys.executable).parent / "swarm"
DEFAULTED = (signal.SIGTERM, signal.SIGALRM, signal.SIGCHLD, signal.SIGHUP, signal.SIGUSR1)
"""Signals whose handlers the test process may have set (pytest-timeout's SIGALRM, for one): defaults again.
SIGINT is a ``KeyboardInterrupt`` again, as in a new interpreter."""


class ForkedProcess:
    """The part of ``subprocess.Popen`` a worker uses: pid, stdin, stdout, poll, wait, returncode."""

    def __init__(self, code: str, args: list[str], env: Mapping[str, str], cwd: Path, stderr_path: Path) -> None:
        in_read, in_write = os.pipe()
        out_read, out_write = os.pipe()
        err = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        request = _request(["-c", *args], env, cwd)
        self.pid = _fork((in_read, out_write, err), request, lambda: _exec(code))
        for fd in (in_read, out_write, err):
            os.close(fd)
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


def run_swarm(args: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: Path | str | None = None,
              input: str | None = None, timeout: float = 60.0, check: bool = False) -> subprocess.CompletedProcess[str]:
    """``swarm ARGS`` in a child forked from this process, with ``env`` (default: this process's), in ``cwd``, with
    ``input`` on its stdin (default: /dev/null); what ``subprocess.run(..., capture_output=True, text=True,
    check=check)`` would return or raise. Past ``timeout`` its process group is killed and
    ``subprocess.TimeoutExpired`` raised."""
    preload()
    argv = [str(SWARM_EXE), *args]
    with tempfile.TemporaryFile() as stdin, tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        stdin.write((input or "").encode())
        stdin.seek(0)
        request = _request(argv, os.environ if env is None else env, cwd)
        pid = _fork((stdin.fileno(), out.fileno(), err.fileno()), request, _swarm_main)
        status = _reap(pid, timeout, argv)
        out.seek(0)
        err.seek(0)
        done = subprocess.CompletedProcess(argv, status, out.read().decode(), err.read().decode())
    if check:
        done.check_returncode()
    return done


@functools.cache
def preload() -> None:
    """Every command's module, a teammate's and the ``anthropic`` SDK, imported here once rather than in every
    child: what a CLI server's warm-up (``swarm.cli.forkserver._warm``) loads."""
    import importlib

    from swarm.agent.tool_catalog import preload_schemas
    from swarm.cli.main import COMMANDS
    from swarm.core.frames import build_validators
    from swarm.core.watch import preload as preload_watch
    from swarm.models.anthropic_provider import preload_sdk

    for target in COMMANDS.values():
        importlib.import_module(target.split(":")[0])
    for module in ("swarm.cli.forkserver", "swarm.teammate.__main__", "nacl.signing"):
        importlib.import_module(module)
    build_validators()
    preload_watch()
    preload_schemas()
    preload_sdk()


def _reap(pid: int, timeout: float, argv: list[str]) -> int:
    pidfd = os.pidfd_open(pid)
    try:
        if not select.select([pidfd], [], [], timeout)[0]:
            os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise subprocess.TimeoutExpired(argv, timeout)
    finally:
        os.close(pidfd)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def _request(argv: list[str], env: Mapping[str, str], cwd: Path | str | None) -> Request:
    return Request(prefix=sys.prefix, package=package_dir(), cwd=os.fsencode(cwd if cwd is not None else os.getcwd()),
                   umask=current_umask(), argv=argv, env={os.fsencode(k): os.fsencode(v) for k, v in env.items()})


def _fork(fds: tuple[int, int, int], request: Request, run: Callable[[], None]) -> int:
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    pid = os.fork()
    if pid != 0:
        return pid
    status = 1
    try:
        os.setsid()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        for signum in DEFAULTED:
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        _fresh_logging()
        warnings.resetwarnings()  # pytest's filters (errors, captures) are the test's, not the child's
        take_over(request, [])
        run()
        status = 0
    except SystemExit as exc:
        status = exit_status(exc)
    except BaseException:  # the child's bug: on its stderr, as an interpreter would print it
        traceback.print_exc()
    finally:
        _end(status)


def _end(status: int) -> NoReturn:
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(status)


def _exec(code: str) -> None:
    exec(compile(code, "<worker>", "exec"), {"__name__": "__main__"})  # noqa: S102 - the test's own code


def _swarm_main() -> None:
    from swarm.cli.main import main

    main()


def _fresh_logging() -> None:
    """Logging as in a new interpreter: no handler anywhere (a warning reaches stderr through ``lastResort``), the
    root at WARNING; pytest's capturing handlers would otherwise swallow what the child logs."""
    for logger in [logging.root, *logging.Logger.manager.loggerDict.values()]:
        if isinstance(logger, logging.Logger):
            logger.handlers.clear()
            logger.setLevel(logging.NOTSET)
            logger.propagate, logger.disabled = True, False
    logging.root.setLevel(logging.WARNING)
