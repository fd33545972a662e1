"""One process's view of its home's team files: each read again only when it changed on disk.

Most of what a process does reads the team (a send's recipients, a
permission check, the lead's status and liveness checks, the coordinator's
settling), and most of the time neither the team file nor the members'
activity records beside it changed since the process last read them.
``TeamView`` keeps, per file, the document last read and the identity of the
file it came from (inode, size, mtime, ctime: one ``stat``), and opens the
file again only when a ``stat`` shows another identity. There is one view per
``Home`` object (``Home.team_view``, made on first use), so every
``TeamStore``, ``Mailbox`` and ``Roster`` a process makes from its home shares
it; nothing is passed besides the home they already take.

No stale view. A swarm write replaces the file (``os.replace``: another inode,
new times) or, for an activity record, rewrites it in place, and an in-place
rewrite (swarm's, or Claude Code's of ``config.json``) moves its ctime, which
no process can set back. Neither is enough alone, though: the filesystem hands
the inode number the write before last freed to the next write (two atomic
replacements alternate between two numbers), and the kernel stamps file times
from a clock that advances once a tick (1-10 ms), so several writes can carry
the same times and two versions of the same size can share all four fields. A
version is therefore kept only once it is *stable*: that clock
(``FILE_CLOCK``) had passed its ctime when the check began. Every later write
is stamped at least that clock, so it carries a later ctime. A file changed
within the current tick is read on every call until it settles, a few
milliseconds (git's "racily clean" rule). A filesystem whose times are coarser
(whole seconds: FAT, ext3's small inodes) is told by its times and waited out
accordingly (``_granularity``).

Read-modify-write never goes through the view: ``TeamStore.modify`` and the
other writers read the file under its lock. A write through ``TeamStore``
drops the file it wrote from the view (``forget``).

What the view hands out: ``current`` is the shared object itself, for the
frequent readers that only look (it must not be changed: the next call
returns it again); ``read_file`` and ``get`` give each caller its own
``TeamFile``, built from the kept document (no open, no JSON parse).
"""

from __future__ import annotations

import difflib
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from swarm.core.document_codecs import ActivityCodec, TeamCodec
from swarm.core.jsonfile import LockedJsonFile
from swarm.core.protocol import Activity, TeamFile
from swarm.errors import CorruptFileError, NotFoundError

if TYPE_CHECKING:
    from swarm.core.home import Home

FILE_CLOCK: int | None = getattr(time, "CLOCK_REALTIME_COARSE", 5 if sys.platform.startswith("linux") else None)
"""The clock the kernel stamps file times from: Linux's ``CLOCK_REALTIME_COARSE`` (5; Python does not name it).
No write is stamped earlier than it reads at the time of the write."""
SETTLE = 0.05
"""Where ``FILE_CLOCK`` cannot be read: seconds a version's ctime must lie behind the precise clock to count
as stable (more than a tick)."""


def team_not_found(teams_dir: Path, team: str) -> NotFoundError:
    """The error for a team that does not exist: what to run, and the team meant when the name is a typo of one."""
    names = [entry.name for entry in teams_dir.iterdir() if (entry / "config.json").exists()] \
        if teams_dir.is_dir() else []
    close = difflib.get_close_matches(team, names, n=1)
    meant = f"did you mean {close[0]!r}? " if close else ""
    return NotFoundError(f"team {team!r} not found; {meant}`swarm team list` shows the teams, "
                         f"`swarm team create {team}` makes it")


class Signature(NamedTuple):
    """What tells one version of a file from another without opening it."""

    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int


class _Kept(NamedTuple):
    signature: Signature | None
    value: Any
    """The decoded document (shared, never changed)."""
    document: Any
    """Its JSON form, for private copies."""


class TeamView:
    """The team files and activity records of one home as this process last read them (module docstring)."""

    def __init__(self, home: Home) -> None:
        self.home = home
        self._kept: dict[Path, _Kept] = {}
        self._configs: dict[str, Path] = {}
        """Each team's file path, built once: a send reads the team (``_team``) and a ``Path`` is built by parsing."""
        self._team_codec = TeamCodec()
        self._activity_codec = ActivityCodec()

    # -- the team file -----------------------------------------------------

    def current(self, team: str) -> TeamFile:
        """The team file as on disk, shared: do not change it (NotFoundError / CorruptFileError as ``read_file``)."""
        found, _ = self._team(team)
        return found

    def read_file(self, team: str) -> TeamFile:
        """The team file as on disk, without the activity overlay: the caller's own copy.

        NotFoundError if there is no such team; CorruptFileError if its file
        does not parse (left in place) or was moved aside as corrupt.
        """
        found, kept = self._team(team)
        if kept is None:
            return found  # read now and not kept: nobody else has it
        copy = self._team_codec.decode(kept.document, self.home.config_path(team))
        assert copy is not None  # a kept document is an object
        return copy

    def get(self, team: str) -> TeamFile:
        """The team file with each running member's activity (busy/idle, tokens) laid over it: the caller's own."""
        return lay_activity(self.read_file(team), lambda name: self.activity(team, name))

    def _team(self, team: str) -> tuple[TeamFile, _Kept | None]:
        """``team``'s file as on disk, and what the view keeps of it if that is what was returned (shared)."""
        path = self._configs.get(team)
        if path is None:
            path = self._configs[team] = self.home.config_path(team)  # validates the name
        kept, signature, steady = self._check(path)
        if kept is not None:
            return kept.value, kept
        found = LockedJsonFile(path, self._team_codec).read()
        if found is None:
            raise self._unreadable(team, path)
        if not steady:
            return found, None
        kept = self._kept[path] = _Kept(signature, found, self._team_codec.encode(found))
        return found, kept

    @staticmethod
    def _unreadable(team: str, config: Path) -> Exception:
        """Why ``team``'s file gave nothing: it does not parse, was moved aside, or there is no such team."""
        broken = sorted(config.parent.glob(f"{config.name}.corrupt-*")) if config.parent.is_dir() else []
        if config.is_file():  # it stayed unparsable through the re-read window; readers leave it in place
            return CorruptFileError(f"team {team!r}: {config} does not parse; repair it (or wait for the program "
                                    f"rewriting it), or `swarm team delete {team}`")
        if broken:
            return CorruptFileError(f"team {team!r} has no usable config.json: it did not parse and was moved "
                                    f"to {broken[-1]}; repair and move it back, or `swarm team delete {team}`")
        return team_not_found(config.parent.parent, team)

    # -- activity ------------------------------------------------------------

    def activity(self, team: str, name: str) -> Activity | None:
        """What teammate ``name`` last recorded doing (shared: do not change it); None if nothing usable."""
        path = self.home.activity_path(team, name)
        kept, signature, steady = self._check(path)
        if kept is not None:
            return kept.value  # type: ignore[no-any-return]
        if signature is None or signature.size == 0:
            return None  # none yet, or emptied by a power loss (``set_activity`` never writes it empty)
        found = LockedJsonFile(path, self._activity_codec).read()
        if steady:
            self._kept[path] = _Kept(signature, found, None)
        return found

    # -- keeping -------------------------------------------------------------

    def forget(self, path: Path) -> None:
        """Drop what is kept of ``path`` (after a write to it through this process)."""
        self._kept.pop(path, None)

    def _check(self, path: Path) -> tuple[_Kept | None, Signature | None, bool]:
        """What is kept of ``path`` if the file is still that version; else the file's identity and whether it is stable.

        The identity is taken before the caller reads the file: the version
        then read is this one or a later one, and a later one has another
        identity, so it is read again next time.
        """
        began = _file_time_now()
        try:
            st = os.stat(path)
        except OSError:  # gone, or unusable: the read says why
            self._kept.pop(path, None)
            return None, None, False
        signature = _signature(st)
        kept = self._kept.get(path)
        if kept is not None:
            if kept.signature == signature:
                return kept, signature, True
            self._kept.pop(path, None)
        return None, signature, _stable(signature.ctime_ns, began)


def lay_activity(found: TeamFile, activity_of: Callable[[str], Activity | None]) -> TeamFile:
    """``found`` with each running member's recorded activity (busy/idle, tokens) laid over it, in place."""
    for member in found.members:
        if member.status not in ("idle", "busy") or not member.is_active:
            continue  # starting, or gone: the team file knows best
        activity = activity_of(member.name)
        if activity is not None and activity.last_activity >= (member.last_activity or 0):
            member.status, member.last_activity = activity.status, activity.last_activity
            member.tokens, member.cache_read_tokens = activity.tokens, activity.cache_read_tokens
            member.cache_creation_tokens = activity.cache_creation_tokens
    return found


def stable(path: Path) -> bool:
    """Whether the version of ``path`` on disk now has stable (a read of it now is kept; module docstring)."""
    began = _file_time_now()
    try:
        st = os.stat(path)
    except OSError:
        return False
    return _stable(_signature(st).ctime_ns, began)


def _signature(st: os.stat_result) -> Signature:
    return Signature(st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _file_time_now() -> int:
    """Now (ns), as no later than the time of any write from now on."""
    if FILE_CLOCK is not None:
        try:
            return time.clock_gettime_ns(FILE_CLOCK)
        except OSError:
            pass
    return time.time_ns() - int(SETTLE * 1e9)


def _stable(ctime_ns: int, began: int) -> bool:
    """Whether every write after ``began`` (``_file_time_now``) must stamp a later ctime than ``ctime_ns``.

    It is stamped at least the file clock's ``began``, cut to the filesystem's
    step: later than ``ctime_ns`` (itself a whole step) once ``began`` is a
    step past it.
    """
    return ctime_ns + _granularity(ctime_ns) <= began


def _granularity(ns: int) -> int:
    """The filesystem's time step as guessed from one of its times (ns), or more.

    Nanosecond times (ext4, xfs, btrfs, tmpfs) are whole milliseconds once in a
    million: 1 ms of margin. Coarser ones always are whole steps: ten times the
    largest power of ten that divides ``ns`` covers the step (10 ms for whole
    milliseconds, 100 ms for exFAT's 10 ms), up to 2 s for whole seconds
    (FAT's two-second steps, ext3's small inodes).
    """
    step = 1_000_000
    while step < 1_000_000_000 and ns % (step * 10) == 0:
        step *= 10
    if ns % step:
        return 1_000_000
    return min(step * 10, 2_000_000_000)
