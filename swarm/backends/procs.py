"""Process helpers shared by the backends.

Two halves:

- **launching**: the minimal environment a teammate inherits, and resolving
  its program and working directory up front so a typo becomes a one-line
  ``BackendError`` instead of a pane that flashes and disappears;
- **liveness**: ``is_pid_alive`` is the one check, comparing the create time
  recorded when the process started, so a reused pid never counts as ours;
- **stopping**: ``kill_tree`` is the one process killer. It collects a
  process and all its descendants *before* signalling (a dead parent no
  longer leads to its children), every process of a group or session one of
  them leads, and every process whose environment carries the owner's token
  (``PROC_TOKEN_VAR``: what a teammate started, even after the teammate was
  SIGKILLed and its children were reparented or ``setsid``'ed away). It sends
  SIGTERM, waits up to a grace period and SIGKILLs what is left. A pid whose
  create time differs from the recorded one is never signalled. It tolerates
  processes that are already gone, so calling it twice is harmless.

A teammate's token also names the temp directories its process makes for
itself (``scratch_dir``: background commands' output, its sandbox's
sockets): a teammate that could not clean up (``kill -9``) leaves them, and
whoever stops what it left (``remove_scratch``, once its processes are gone)
removes them.

Zombies count as dead everywhere here: their code no longer runs, and in a
container the reaper (PID 1) may never collect them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import signal
import stat
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import psutil

from swarm.errors import BackendError

log = logging.getLogger(__name__)

BASE_ENV_NAMES = ("PATH", "HOME", "USER", "LANG", "TERM", "TMPDIR", "SHELL")
"""Variables a teammate inherits from the caller (plus every ``LC_*``)."""

PROC_TOKEN_VAR = "SWARM_PROC_TOKEN"
"""Environment variable carrying a teammate's unique token; everything it starts inherits it."""

_TOKEN = re.compile(r"[0-9a-f]{32}")
"""A token as spawn makes one (``uuid4().hex``): nothing else names a scratch directory or is globbed for."""

CREATE_TIME_TOLERANCE = 0.01
"""Seconds two create times may differ and still name the same process."""

_POLL_INTERVAL = 0.02
_KILL_WAIT = 2.0
"""Seconds to wait for SIGKILLed processes to disappear."""


# -- launching ----------------------------------------------------------------


def launch_env(
    inherited: Mapping[str, str],
    extra: Mapping[str, str],
    *,
    exclude: Iterable[str] = (),
) -> dict[str, str]:
    """The base variables taken from ``inherited``, overlaid with ``extra``."""
    skip = set(exclude)
    env = {
        key: value
        for key, value in inherited.items()
        if (key in BASE_ENV_NAMES or key.startswith("LC_")) and key not in skip
    }
    env.update(extra)
    return env


def check_cwd(cwd: Path) -> Path:
    """``cwd`` made absolute; ``BackendError`` if it is not a directory."""
    path = Path(cwd).absolute()
    if not path.is_dir():
        raise BackendError(f"working directory {str(path)!r} does not exist or is not a directory")
    return path


def resolve_program(program: str, *, path: str | None, cwd: Path) -> str:
    """The absolute path of ``program``, looked up like ``execvp`` would.

    A name without ``/`` is searched on ``path`` (the teammate's PATH); a
    relative path is taken relative to ``cwd``, where the program will run.
    """
    if not program:
        raise BackendError("cannot start a teammate: the command is empty")
    if "/" not in program:
        found = shutil.which(program, path=path if path is not None else os.defpath)
        if found is None:
            raise BackendError(f"{program!r} was not found on PATH")
        return str(Path(found).absolute())
    candidate = Path(program) if os.path.isabs(program) else cwd / program
    if not candidate.is_file() or not os.access(candidate, os.X_OK):
        raise BackendError(f"{program!r} is not an executable file")
    return str(candidate)


# -- liveness -----------------------------------------------------------------


def process_create_time(pid: int) -> float | None:
    """When ``pid`` started (seconds since the epoch), or None if it is gone."""
    try:
        return psutil.Process(pid).create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None


def _same_start(proc: psutil.Process, create_time: float | None) -> bool:
    """``proc`` is the process that started at ``create_time`` (None: not checked)."""
    return create_time is None or abs(proc.create_time() - create_time) <= CREATE_TIME_TOLERANCE


def is_pid_alive(pid: int, create_time: float | None = None) -> bool:
    """True if ``pid`` runs and is not a zombie: the one liveness check.

    With ``create_time`` (recorded when the process was started), a process
    that started at another time is a reused pid, not ours, and counts as dead.
    """
    try:
        proc = psutil.Process(pid)
        return _same_start(proc, create_time) and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True  # it exists; we just may not look at it


def interrupt_process(pid: int, create_time: float | None) -> bool:
    """SIGINT ``pid`` — a person's Ctrl-C — if it still is the process that started at ``create_time`` (a reused
    pid is never signalled). True when sent. A swarm teammate reads it as "stop the running turn"
    (``swarm.teammate.__main__``); its launcher forwards it to a served worker's group."""
    try:
        proc = psutil.Process(pid)
        if not _same_start(proc, create_time) or proc.status() == psutil.STATUS_ZOMBIE:
            return False
        proc.send_signal(signal.SIGINT)
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False
    return True


def _is_gone(proc: psutil.Process) -> bool:
    try:
        return not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True
    except psutil.AccessDenied:
        return False


def tagged(token: str) -> list[psutil.Process]:
    """Every process whose environment carries ``PROC_TOKEN_VAR=token`` (never this one).

    The runtime gives each teammate a unique token; everything it starts
    inherits it, also what double-forks or calls ``setsid``. What escapes: a
    process that cleared or replaced its environment at exec (``env -i``),
    and processes of other users (their environment cannot be read).
    """
    found = []
    for proc in psutil.process_iter():
        if proc.pid == os.getpid():
            continue
        with contextlib.suppress(psutil.Error, OSError):
            if proc.environ().get(PROC_TOKEN_VAR) == token:
                found.append(proc)
    return found


def name_process(name: bytes) -> bytes | None:
    """Set ``/proc/self/comm`` (``ps``, ``top``): a forked process's command line is its server's. The name it had,
    or None where it cannot be set (not Linux: only ``ps`` is less clear)."""
    try:
        with open("/proc/self/comm", "r+b") as comm:
            before = comm.read().rstrip(b"\n")
            comm.seek(0)
            comm.write(name)
        return before
    except OSError:
        return None



# -- stopping -----------------------------------------------------------------


def _collect_tree(pid: int, create_time: float | None) -> list[psutil.Process]:
    """``pid`` and every descendant, read before anything is signalled.

    Empty when ``pid`` is gone, and when it now belongs to a process that
    started at another time than ``create_time`` (a reused pid is never ours).
    """
    try:
        root = psutil.Process(pid)
        if not _same_start(root, create_time):
            log.warning("refused to signal a reused pid", extra={"pid": pid, "expected_start": create_time})
            return []
    except psutil.NoSuchProcess:
        return []
    try:
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return [root]


def _led_groups(procs: Iterable[psutil.Process]) -> set[int]:
    """Process groups and sessions led by a member of the tree, never our own.

    Only groups a member *leads* are signalled: a member that merely joined
    some other group (say, the caller's) must not take that group down.
    """
    own = {os.getpgrp(), os.getsid(0), 0, 1}
    groups: set[int] = set()
    for proc in procs:
        with contextlib.suppress(OSError):
            if proc.pid not in own and proc.pid in (os.getpgid(proc.pid), os.getsid(proc.pid)):
                groups.add(proc.pid)
    return groups


def _group_members(groups: set[int]) -> list[psutil.Process]:
    """Processes in ``groups`` (as group or session) — catches orphans whose parent already died."""
    if not groups:
        return []
    members = []
    for proc in psutil.process_iter():
        with contextlib.suppress(OSError, psutil.Error):
            if os.getpgid(proc.pid) in groups or os.getsid(proc.pid) in groups:
                members.append(proc)
    return members


def _signal_all(groups: set[int], procs: Iterable[psutil.Process], sig: signal.Signals) -> None:
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)
    for proc in procs:
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            proc.send_signal(sig)  # psutil refuses if the pid was reused


def _wait_gone(procs: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    """Wait until every process is gone (or a zombie); return the survivors.

    ``psutil.wait_procs`` also reaps the ones that are our own children.
    """
    deadline = time.monotonic() + timeout
    alive = [proc for proc in procs if not _is_gone(proc)]
    while alive:
        remaining = deadline - time.monotonic()
        _, alive = psutil.wait_procs(alive, timeout=max(0.0, min(_POLL_INTERVAL, remaining)))
        alive = [proc for proc in alive if not _is_gone(proc)]
        if remaining <= 0:
            break
    return alive


def _unique(procs: Iterable[psutil.Process]) -> list[psutil.Process]:
    seen: dict[int, psutil.Process] = {}
    for proc in procs:
        if proc.pid != os.getpid():
            seen.setdefault(proc.pid, proc)
    return list(seen.values())


def _targets(pid: int | None, create_time: float | None, token: str | None,
             also: Sequence[tuple[int, float | None]] = ()) -> tuple[set[int], list[psutil.Process]]:
    tree = _collect_tree(pid, create_time) if pid is not None else []
    for other, started in also:
        tree += _collect_tree(other, started)
    marked = tagged(token) if token else []
    groups = _led_groups([*tree, *marked])
    if pid is not None and not tree and process_create_time(pid) is None:
        # the leader is gone; a group or session still numbered after it can only be its remnant
        groups.add(pid)
    groups -= {os.getpgrp(), os.getsid(0), 0, 1}
    return groups, _unique([*tree, *marked, *_group_members(groups)])


def kill_tree(pid: int | None, grace: float, create_time: float | None = None, *, token: str | None = None,
              also: Sequence[tuple[int, float | None]] = ()) -> None:
    """SIGTERM ``pid``, its descendants, their groups and sessions, and every process carrying ``token``;
    SIGKILL the survivors after ``grace`` s. The one way swarm stops processes.

    ``create_time`` is the start time recorded with ``pid``: a pid that now
    belongs to a process started at another time is not signalled (its
    token-tagged processes still are). None only for a pid the caller holds
    as its own unreaped child. ``also``: more (pid, create time) roots stopped
    the same way (a forked teammate's worker beside its launcher). Safe to
    call on what is already gone, and twice.
    """
    groups, targets = _targets(pid, create_time, token, also)
    if not targets and not groups:
        return
    _signal_all(groups, targets, signal.SIGTERM)
    survivors = _wait_gone(targets, grace)
    late = _targets(pid, create_time, token, also)[1] if token else []  # forked during the grace period
    survivors = _unique([*survivors, *(p for p in late if not _is_gone(p))])
    if survivors:
        log.info(
            "sigkilled processes that outlived the grace period",
            extra={"pid": pid, "pids": [proc.pid for proc in survivors], "grace": grace},
        )
        _signal_all(groups, survivors, signal.SIGKILL)
        survivors = _wait_gone(survivors, _KILL_WAIT)
    if survivors:
        log.warning("processes survived sigkill", extra={"pid": pid, "pids": [p.pid for p in survivors]})


def scratch_dir(kind: str) -> Path:
    """A new private temp directory for this process (removed by its maker when done), named so that whoever
    outlives a maker killed before it could (``kill -9``) can remove it: ``swarm-KIND-<token>-<random>`` in a
    teammate's process (``PROC_TOKEN_VAR``; ``remove_scratch`` once its processes are stopped), else
    ``swarm-KIND-p<pid>.<start ms>-<random>`` (a lead's: the next such directory made here removes those whose
    process is gone, ``sweep_dead_scratch``)."""
    token = os.environ.get(PROC_TOKEN_VAR, "")
    if _TOKEN.fullmatch(token):
        return Path(tempfile.mkdtemp(prefix=f"swarm-{kind}-{token}-"))
    sweep_dead_scratch()
    pid = os.getpid()
    started = process_create_time(pid)
    owner = f"p{pid}.{round(started * 1000)}-" if started is not None else ""
    return Path(tempfile.mkdtemp(prefix=f"swarm-{kind}-{owner}"))


_OWNED = re.compile(r"swarm-[a-z]+-p(\d+)\.(\d+)-[^/]+")
"""A scratch directory named after the process that made it (``scratch_dir``): its pid and start time (ms)."""


def sweep_dead_scratch() -> list[Path]:
    """Remove the scratch directories in this temp directory whose maker (named in them) is gone; the ones
    removed. Only this user's directories, never through a symlink; a reused pid is not their maker."""
    dead = (path for path in Path(tempfile.gettempdir()).glob("swarm-*-p*.*-*")
            if (owner := _OWNED.fullmatch(path.name)) is not None
            and not is_pid_alive(int(owner[1]), int(owner[2]) / 1000))
    return [path for path in dead if _remove_own_directory(path)]


def remove_scratch(token: str | None) -> list[Path]:
    """Remove the scratch directories of the teammate whose token is ``token`` (call once its processes are gone);
    the ones removed. Only this user's directories, never through a symlink."""
    if not token or not _TOKEN.fullmatch(token):
        return []
    return [path for base in dict.fromkeys((Path(tempfile.gettempdir()), Path("/tmp")))
            for path in base.glob(f"swarm-*-{token}-*") if _remove_own_directory(path)]


def _remove_own_directory(path: Path) -> bool:
    """Remove ``path`` if it is a directory of this user's (a symlink is never followed); True if removed."""
    try:
        info = path.lstat()
    except OSError:
        return False
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        return False
    shutil.rmtree(path, ignore_errors=True)
    return True
