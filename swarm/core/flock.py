"""The lock every swarm file is changed under: Claude Code's lock directory, guarded by a kernel lock.

Claude Code (through ``proper-lockfile``) locks ``<file>`` by making the
directory ``<file>.lock/``: it holds the lock while the directory exists,
refreshes its mtime every few seconds, and anyone may remove a directory
whose mtime is older than 10 s (stale) and take the lock. A regular file at
that path blocks Claude Code for good, so swarm takes the same directory and
nothing else there.

A directory alone has two faults for swarm: waiting on it means polling, and
a swarm process killed while holding it would stall every writer for 10 s.
So a swarm holder takes two locks, in this order:

1. an exclusive ``flock(2)`` on ``<file>.lock.swarm`` (a regular file Claude
   Code never looks at). swarm processes and threads queue here for a few
   microseconds; the kernel drops it when its holder dies.
2. the directory ``<file>.lock/`` (``mkdir``), which excludes Claude Code.
   The flock file carries a mark (one ``pwrite`` each, no fsync: the mark
   only has to outlive the process, not the machine): ``P <time>`` just
   before the ``mkdir`` ("I am making it now"), ``H <inode> <ctime>`` (the
   directory's identity) right after it, blank again once the directory is
   removed on release.

Whoever holds the flock and finds the directory already there decides:

- the mark says a swarm holder made it (``H`` with this directory's
  identity, or ``P`` and a directory made no earlier than that time and
  never touched since — ``mtime == ctime``, which Claude Code's directories
  are not, as it sets their mtime right away): that holder died before
  releasing, since only a dead holder leaves a non-blank mark and the flock
  proves no swarm holder is alive. It is removed at once, before the new
  holder writes a mark of its own over the proof (were that holder killed
  too, the directory would otherwise pass for Claude Code's);
- a directory without our mark: Claude Code holds it. Wait with backoff
  (bounded by the caller's timeout) until it goes, or until its mtime is
  older than ``STALE_AFTER`` seconds, then remove it and take the lock, as
  ``proper-lockfile`` does. A stale dead-swarm leftover that Claude Code
  took over in the meantime has a new ctime and mtime, so it is never
  mistaken for ours;
- a regular file: the lock of a swarm from before this scheme. Its flock is
  taken (so an old swarm still mid-write finishes first), then it is
  removed and replaced by the directory.

swarm's critical sections last milliseconds, far below the 10 s stale bound,
so swarm never refreshes the directory's mtime. proper-lockfile sets a new
directory's mtime up to ``FUTURE_MTIME`` ahead of the clock, so a dead Claude
Code holder's lock turns stale up to ``STALE_AFTER + FUTURE_MTIME`` after it
was made; a wait meant to outlast it lasts ``OUTLAST_STALE``. A release
checks that the directory is still the one it made and leaves someone
else's alone.

Taking turns with Claude Code (``swarm.core.lock_turns``): on a lock another
program uses, swarm holders leave the directory free now and then, so a
Claude Code writer, which never queues, always finds a free moment among its
tries. Its record follows the mark in the flock file.

Cost: ``mkdir``/``rmdir`` of a directory cost ~110 µs a pair on ext4 (its
journal), against ~5 µs for the flock alone. So on Linux swarm keeps an empty
directory parked beside the lock (``<file>.lock.swarm.d``) and *moves* it into
place: ``utime`` (a fresh mtime, so Claude Code does not find it stale), then
``renameat2(..., RENAME_NOREPLACE)``, which fails with ``EEXIST`` exactly when
``mkdir`` would; a release renames it back. That pair costs ~30 µs. The ``P``
mark names the parked directory's inode, so a holder killed between the move
and its ``H`` mark is still recognised. Where ``renameat2`` is missing (not
Linux, an old libc) or the parked directory is gone, ``mkdir``/``rmdir`` is used.
"""

from __future__ import annotations

import errno
import fcntl
import functools
import io
import logging
import os
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from swarm.core.fileio import RENAME_NOREPLACE, renameat2
from swarm.core.home import DIR_MODE, FILE_MODE
from swarm.core.lock_turns import TURNS_SIZE, Turns, await_turn, target_inode

log = logging.getLogger(__name__)

FIRST_RETRY = 0.0001
"""Seconds before the first retry of a busy swarm lock; doubled up to ``MAX_RETRY``."""
MAX_RETRY = 0.001
FIRST_DIR_RETRY = 0.001
"""Seconds before the first retry of a lock directory someone else holds; doubled up to ``MAX_DIR_RETRY``."""
MAX_DIR_RETRY = 0.025
STALE_AFTER = 10.0
"""A lock directory whose mtime is older than this many seconds is abandoned (Claude Code's rule)."""
FUTURE_MTIME = 1.0
"""How far ahead of the clock proper-lockfile may set a new lock directory's mtime (its precision
probe rounds the time up to the next second, plus 5 ms)."""
OUTLAST_STALE = STALE_AFTER + FUTURE_MTIME + 4.0
"""Seconds of waiting that outlast the lock of a holder that died as the wait began (its directory is
stale by ``STALE_AFTER + FUTURE_MTIME``), with room for a loaded machine: swarm's default wait."""
SWARM_SUFFIX = ".swarm"
"""The flock file is ``<lock path>`` + this suffix."""
MARK_SIZE = 44
"""Bytes of the mark in the flock file: ``<kind> <number:20> <number:20>\\n``, or blanks."""
BLANK = b" " * (MARK_SIZE - 1) + b"\n"
CLOCK_SLACK_NS = 1_000_000_000
"""File timestamps come from a coarse kernel clock; a ``P`` mark's time is compared with this slack."""


class LockTimeout(Exception):
    """The lock was still held by someone else when the wait ran out."""


@dataclass(eq=False)
class Held:
    """A lock taken by ``acquire``: the flock descriptor and the directory made under it.

    The descriptor is owned by a ``FileIO``, which closes it when dropped (in C:
    no Python code that a signal handler's exception could cut short). So a
    lock dropped without ``release`` gives its flock back at once: an exception
    raised between the lock being taken and the caller's ``try`` (a signal
    handler's, as a teammate's SIGTERM or a person's Ctrl-C raise at whatever
    instant they arrive) would otherwise leave the descriptor open, and the lock
    held until the process ends, against every other process and against this
    one (its next try is another descriptor). The directory stays, under its
    mark, as a killed holder's does: the next holder removes it at once.
    """

    file: io.FileIO
    directory: Path
    mark: bytes = b""
    turns: Turns = field(default_factory=Turns)

    @property
    def fd(self) -> int:
        return self.file.fileno()


def acquire(path: Path, timeout: float, *, shared: bool = False) -> Held:
    """Take the lock ``path`` (the ``<file>.lock`` directory, see the module docstring); return what ``release`` needs.

    ``shared``: the caller knows another program (Claude Code) writes the
    file, so swarm takes turns on it before any evidence of that is seen.
    Waits at most ``timeout`` seconds, retrying with backoff; raises
    ``LockTimeout`` after that, and ``OSError`` if the lock cannot be made
    (missing parent directory, something other than a file or directory at
    ``path``). Each holder opens its own descriptor, so the lock also
    excludes other threads of this process.
    """
    deadline = time.monotonic() + timeout
    held = Held(io.FileIO(os.open(os.fspath(path) + SWARM_SUFFIX, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE),
                          "r+"), path)
    try:  # from the flock on, dropped however, the descriptor gives the flock back
        _flock(held.fd, deadline)
        held.mark, held.turns = _take_directory(held.fd, path, deadline, shared)
    except BaseException:
        held.file.close()
        raise
    return held


def release(held: Held) -> None:
    """Remove the lock directory (if it is still ours), blank the mark, record the release, give the flock back."""
    try:
        try:
            if _identity(os.lstat(held.directory)) == held.mark:
                _unmake(held.directory)
            else:
                log.warning("lock directory was taken over while held", extra={"path": str(held.directory)})
        except FileNotFoundError:
            log.warning("lock directory vanished while held", extra={"path": str(held.directory)})
        held.turns.released_ns = time.monotonic_ns()
        held.turns.target_ino = target_inode(held.directory)
        os.pwrite(held.fd, BLANK + held.turns.pack(), 0)
    finally:
        held.file.close()  # closing drops the flock


@contextmanager
def locked(path: Path, timeout: float, *, shared: bool = False) -> Iterator[None]:
    """Hold the lock ``path`` for the ``with`` body (see ``acquire``)."""
    held = acquire(path, timeout, shared=shared)
    try:
        yield
    finally:
        release(held)


def who_holds(path: Path) -> str:
    """Who holds the lock ``path`` now and what to do about it, for an error after a wait ran out.

    The flock's holder is read from ``/proc/locks`` (Linux): a swarm process,
    named by pid, and said to be stopped when it is (Ctrl-Z, SIGSTOP: a stopped
    holder keeps its lock until it is resumed or ended). With no flock holder,
    a lock directory there is another program's (Claude Code's). Where neither
    can be told, the words are general.
    """
    holder = _flock_holder(path)
    if holder is not None:
        pid, name, stopped = holder
        if pid == os.getpid():
            return f"process {pid} ({name}) holds {path.name}, another thread of this process — retry"
        if stopped:
            return (f"process {pid} ({name}) holds {path.name} and is stopped (Ctrl-Z or SIGSTOP) — "
                    f"resume it (kill -CONT {pid}) or end it (kill {pid})")
        return f"process {pid} ({name}) holds {path.name} — retry, or end it if it is stuck (kill {pid})"
    if os.path.isdir(path):  # no swarm process holds it, and it is not a dead one's (the wait would have removed it)
        return (f"another program (Claude Code) holds {path.name} — retry; a lock it left behind is taken "
                f"over once untouched for {STALE_AFTER:g}s")
    return f"another process holds {path.name} — retry, or stop the stuck process"


def _flock_holder(path: Path) -> tuple[int, str, bool] | None:
    """Pid, name and stopped-ness of the process holding the flock of the lock ``path`` (None: none seen)."""
    try:
        info = os.stat(swarm_lock_path(path))
        with open("/proc/locks", encoding="ascii", errors="replace") as table:
            lines = table.read().splitlines()
    except OSError:
        return None
    import psutil  # an error path: not imported by every command that takes a lock

    key = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
    for line in lines:
        fields = line.split()  # "1: FLOCK  ADVISORY  WRITE <pid> <major:minor:inode> 0 EOF" ("->" marks a waiter)
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == key and fields[4].isdigit():
            pid = int(fields[4])
            if pid <= 0:
                return None  # a holder in a process namespace this one cannot see
            try:
                process = psutil.Process(pid)
                return pid, process.name(), process.status() in (psutil.STATUS_STOPPED, psutil.STATUS_TRACING_STOP)
            except psutil.Error:
                return None  # it ended meanwhile
    return None


def swarm_lock_path(path: Path) -> Path:
    """The file swarm processes flock before they take the lock directory ``path``."""
    return path.with_name(path.name + SWARM_SUFFIX)


def _flock(fd: int, deadline: float) -> None:
    delay = FIRST_RETRY
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise LockTimeout from None
            time.sleep(delay)
            delay = min(delay * 2, MAX_RETRY)


def _take_directory(fd: int, path: Path, deadline: float, shared: bool) -> tuple[bytes, Turns]:
    """Make the lock directory (the flock is held); return the mark written for it and the turns."""
    record = os.pread(fd, MARK_SIZE + TURNS_SIZE, 0)
    left = record[:MARK_SIZE]  # non-blank only if the last holder died holding the lock
    turns = Turns.parse(record[MARK_SIZE:])
    if left.strip() == b"" and turns.released_ns and target_inode(path) != turns.target_ino:
        turns.saw_foreign()  # the file was replaced since the last swarm release: someone else wrote it
    if shared:
        turns.told_shared()
    try:
        await_turn(turns, deadline, turns.shared())
    except TimeoutError:
        os.pwrite(fd, turns.pack(), MARK_SIZE)  # what was learnt or told stays for the holders in between
        raise LockTimeout from None
    if left.strip():
        _remove_dead_holders(path, left)
    delay = FIRST_DIR_RETRY
    while True:
        parked = _parked_inode(path)
        os.pwrite(fd, _mark(b"P", time.time_ns(), parked or 0), 0)
        try:
            _make(path, parked)
        except FileExistsError:
            os.pwrite(fd, BLANK, 0)
            if _clear_the_way(path, turns, deadline):
                continue
            os.pwrite(fd, turns.pack(), MARK_SIZE)  # another program holds it: remember that, even if we give up
            if time.monotonic() >= deadline:
                raise LockTimeout from None
            time.sleep(delay)
            delay = min(delay * 2, MAX_DIR_RETRY)
            continue
        mark = _identity(os.lstat(path))
        os.pwrite(fd, mark + turns.pack(), 0)
        return mark, turns


def _clear_the_way(path: Path, turns: Turns, deadline: float) -> bool:
    """Remove what blocks ``path`` if it may go (stale, an old lock file); True to retry at once."""
    try:
        found = os.lstat(path)
    except FileNotFoundError:  # released meanwhile
        return True
    if stat.S_ISREG(found.st_mode):
        _retire_old_lock_file(path, deadline)
        return True
    if not stat.S_ISDIR(found.st_mode):
        raise OSError(errno.ENOTDIR, "is neither a lock directory nor an old lock file; move it aside", str(path))
    turns.saw_foreign()  # a dead swarm holder's directory was removed before the loop (_remove_dead_holders)
    if time.time() - found.st_mtime > STALE_AFTER:
        log.warning("took over a stale lock directory", extra={"path": str(path), "age_s": int(time.time() - found.st_mtime)})
        return _remove_directory(path)
    return False


def _remove_dead_holders(path: Path, left: bytes) -> None:
    """Remove the directory that ``left``, the mark of a holder that died holding, names.

    Done before this holder writes a mark of its own: that overwrites the
    only proof the directory is a dead swarm's, and if this holder were killed
    too before removing it, the directory would pass for Claude Code's and
    every writer would wait for it to turn stale.
    """
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(found.st_mode) and _made_by_dead_holder(left, found):
        log.info("removed the lock of a dead swarm process", extra={"path": str(path)})
        _remove_directory(path)


def _made_by_dead_holder(left: bytes, found: os.stat_result) -> bool:
    """Whether the mark ``left`` by the last swarm holder (now gone) names the directory ``found``."""
    if left == _identity(found):
        return True
    if not left.startswith(b"P "):
        return False
    if int(left[23:43]) != 0:  # it was moving its parked directory into place
        return found.st_ino == int(left[23:43])
    made_after = int(left[2:22]) - CLOCK_SLACK_NS
    return found.st_mtime_ns == found.st_ctime_ns and found.st_ctime_ns >= made_after


def _remove_directory(path: Path) -> bool:
    try:
        os.rmdir(path)
    except FileNotFoundError:  # someone else removed it first
        pass
    return True


def _retire_old_lock_file(path: Path, deadline: float) -> None:
    """Wait for an older swarm's flock on the regular file ``path``, then remove the file."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        _flock(fd, deadline)
        os.unlink(path)
        log.info("replaced an old lock file by a lock directory", extra={"path": str(path)})
    except FileNotFoundError:
        pass
    finally:
        os.close(fd)


def parked_path(path: Path) -> Path:
    """Where swarm keeps the empty directory it moves into place as the lock ``path``."""
    return Path(_parked(path))


def _parked(path: Path) -> str:
    """``parked_path`` as a string: a lock cycle names it three times, and a ``Path`` is built by parsing."""
    return os.fspath(path) + SWARM_SUFFIX + ".d"


def _parked_inode(path: Path) -> int | None:
    """The inode of the parked directory (made if missing), or None to use ``mkdir``."""
    if _renameat2() is None:
        return None
    parked = _parked(path)
    try:
        return os.lstat(parked).st_ino
    except FileNotFoundError:
        pass
    try:
        os.mkdir(parked, DIR_MODE)
        return os.lstat(parked).st_ino
    except OSError:
        return None


def _make(path: Path, parked: int | None) -> None:
    """Put the lock directory at ``path``: move the parked one in, or make one; FileExistsError if taken."""
    move = _renameat2()
    if parked is not None and move is not None:
        source = _parked(path)
        try:
            os.utime(source)  # a fresh mtime: Claude Code must not find our lock stale
            move(source, path)
            return
        except FileNotFoundError:  # the parked directory went (cleaned up by hand): make the lock instead
            pass
    os.mkdir(path, DIR_MODE)


def _unmake(path: Path) -> None:
    """Release the lock directory: park it again for the next holder, or remove it."""
    if _renameat2() is not None:
        try:
            os.rename(path, _parked(path))
            return
        except OSError:
            pass
    os.rmdir(path)


@functools.cache
def _renameat2() -> Callable[[str | Path, str | Path], None] | None:
    """``renameat2(..., RENAME_NOREPLACE)`` (FileExistsError when the target is taken), or None where there is none."""
    rename = renameat2()
    if rename is None:
        return None
    return functools.partial(_no_replace, rename)


def _no_replace(rename: Callable[[str | Path, str | Path, int], None], source: str | Path,
                target: str | Path) -> None:
    rename(source, target, RENAME_NOREPLACE)


def _identity(found: os.stat_result) -> bytes:
    """The ``H`` mark of a lock directory: its inode and ctime (ns)."""
    return _mark(b"H", found.st_ino, found.st_ctime_ns)


def _mark(kind: bytes, first: int, second: int) -> bytes:
    return kind + b" %020d %020d\n" % (first, second)
