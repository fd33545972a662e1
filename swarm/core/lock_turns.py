"""Taking turns with Claude Code on a lock (``swarm.core.flock``).

``proper-lockfile``, Claude Code's lock, never queues: a Claude Code writer
tries ``mkdir`` of the lock directory now and then (an inbox write 11 times
over about 0.65 s, at most ``CC_RETRY_GAP`` apart) and then gives up, and its
write is lost (SendMessage answers ``success: false``). swarm holders queue
on the flock and hand the directory to each other within microseconds, so
under a storm of swarm writes the directory is almost never free at the
moments Claude Code looks.

So on a lock another program uses, swarm holders take turns with it: a run
of back-to-back swarm holds is kept under ``MAX_RUN``, then the directory is
left free for ``TURN_GAP`` — longer than Claude Code's longest pause between
two tries — before the next swarm holder takes it. A Claude Code writer that
starts trying at any moment meets a gap within ``MAX_RUN`` + one hold +
``TURN_GAP``, well inside its 0.65 s. A run ends, and a new one begins, when
the directory was free that long anyway, or when another program held it.

"Another program uses it" means: within the last ``FOREIGN_MEMORY`` seconds
a holder said so (``shared``: the team includes Claude Code), or a swarm
holder found a lock directory that was not swarm's, or found the locked file
replaced since the last swarm release (a write made under someone else's
lock). It is recorded, so every swarm holder takes turns then: one that was
not told (an inbox's reader) and takes the lock every few milliseconds would
otherwise keep one run going for ever, and every holder that was told would
wait for a gap that never comes. A lock only swarm uses never waits; it pays
a ``stat`` of the locked file per take and per release.

The shared state (``Turns``) lives in the flock file right after the mark
and is read and written only by the flock's holder.
"""

from __future__ import annotations

import os
import struct
import time
from dataclasses import dataclass
from pathlib import Path

CC_RETRY_GAP = 0.1
"""Claude Code's longest pause between two tries at a lock (proper-lockfile's ``maxTimeout``)."""
TURN_GAP = 0.45
"""Seconds swarm leaves a shared lock free after ``MAX_RUN`` of back-to-back holds: over four times
``CC_RETRY_GAP``, room for a Node process that a loaded machine leaves unscheduled a while. In full
test runs on 2 busy cores, a storm refused one Claude Code write in 500 at 0.2 s and again at 0.3 s."""
MAX_RUN = 0.2
"""Seconds of back-to-back swarm holds on a shared lock before a ``TURN_GAP``."""
FOREIGN_MEMORY = 3600.0
"""Seconds after another program was last seen using a lock during which swarm takes turns on it."""

_RECORD = struct.Struct("<qqqQ")
TURNS_SIZE = _RECORD.size
"""Bytes of ``Turns`` in the flock file."""


@dataclass
class Turns:
    """How swarm holders of one lock share it with other programs."""

    foreign_ns: int = 0
    """Wall-clock ns when another program was last seen using the lock (0: never)."""
    run_ns: int = 0
    """Monotonic ns when the current run of back-to-back swarm holds began."""
    released_ns: int = 0
    """Monotonic ns of the last swarm release (0: none recorded)."""
    target_ino: int = 0
    """Inode of the locked file at that release (0: none); another one later means another program wrote it."""

    @classmethod
    def parse(cls, data: bytes) -> Turns:
        """From the flock file's bytes after the mark (empty or short from an older swarm: nothing known)."""
        return cls(*_RECORD.unpack(data)) if len(data) == TURNS_SIZE else cls()

    def pack(self) -> bytes:
        return _RECORD.pack(self.foreign_ns, self.run_ns, self.released_ns, self.target_ino)

    def saw_foreign(self) -> None:
        """Another program held the lock or wrote the file: it had its turn, so a new run begins."""
        self.foreign_ns = time.time_ns()
        self.run_ns = time.monotonic_ns()

    def told_shared(self) -> None:
        """A holder knows another program uses the lock: recorded for every holder (a new run does not begin)."""
        self.foreign_ns = time.time_ns()

    def shared(self) -> bool:
        """Another program used the lock within ``FOREIGN_MEMORY``."""
        return self.foreign_ns > 0 and 0 <= time.time_ns() - self.foreign_ns < FOREIGN_MEMORY * 1e9


def await_turn(turns: Turns, deadline: float, shared: bool) -> None:
    """Begin or continue a run of swarm holds; on a shared lock whose run is long, first leave it free a while.

    ``deadline`` is the caller's (``time.monotonic()``); ``TimeoutError`` when
    the gap would end after it, so a one-try caller counts the lock as busy.
    """
    now = time.monotonic_ns()
    free_for = now - turns.released_ns
    if not turns.released_ns or not 0 <= free_for < TURN_GAP * 1e9:
        turns.run_ns = now  # the lock was free long enough anyway (or the record is from another boot)
        return
    if not shared or now - turns.run_ns < MAX_RUN * 1e9:
        return
    resume = (turns.released_ns + TURN_GAP * 1e9) / 1e9
    if resume > deadline:
        raise TimeoutError("the lock is being left free for another program")
    time.sleep(max(0.0, resume - time.monotonic()))
    turns.run_ns = time.monotonic_ns()


def target_inode(lock: Path) -> int:
    """The inode of the file the lock ``lock`` (``<file>.lock``) guards; 0 if there is none."""
    try:
        return os.stat(os.fspath(lock).removesuffix(".lock")).st_ino  # a string: no ``Path`` parsed per lock cycle
    except OSError:
        return 0
