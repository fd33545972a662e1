"""The team file: create, list, show, delete, and member changes, all locked.

Reads go through the process's view of the home (``Home.kept(TeamView)``,
``swarm.core.team_view``), which opens a file again only when it changed;
changes read the file itself under its lock, and drop what they wrote from
the view.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from swarm.core.clock import now_ms
from swarm.core.document_codecs import ActivityCodec, TeamCodec
from swarm.core.fileio import InPlaceRecord, storage_error
from swarm.core.home import Home, ensure_dir
from swarm.core.jsonfile import LockedJsonFile, encode_json
from swarm.core.names import LEAD_NAME, agent_id, valid_name, validate_name
from swarm.core.protocol import COLORS, Activity, Member, TeamFile
from swarm.core.store import forget, locate, record, recorded_teams, team_row
from swarm.core.team_view import TeamView, lay_activity, team_not_found
from swarm.core.watch import ChangeWatcher, watch_dirs
from swarm.errors import ConflictError, CorruptFileError, NotFoundError, StorageError

if TYPE_CHECKING:
    from swarm.core.store.base import TeamRecord

log = logging.getLogger(__name__)


class Survey(NamedTuple):
    """The teams of a home: those read, and ``{name: why}`` for those whose team file cannot be read
    (unparsable, a directory or FIFO in its place, a looping link, refused, moved aside as corrupt)."""

    teams: list[TeamFile]
    unreadable: dict[str, str]


class TeamStore:
    """All team files under one home."""

    def __init__(self, home: Home) -> None:
        self.home = home

    def _file(self, team: str) -> LockedJsonFile[TeamFile | None] | TeamRecord:
        """The team file, or the team's row for a team kept in a database (``swarm.core.store``)."""
        row = team_row(self.home, team)
        if row is not None:
            return row
        return LockedJsonFile(self.home.config_path(team), TeamCodec(), indent=2)

    @property
    def view(self) -> TeamView:
        """The team files as this process last read them (shared by every store of the same ``Home``)."""
        return self.home.kept(TeamView)

    # -- teams -------------------------------------------------------------

    def create(self, team: str, description: str | None = None, *, cwd: str | None = None,
               lead_session_id: str | None = None, store: str | None = None, repo: str | None = None) -> TeamFile:
        """Create ``team`` with its ``team-lead`` member; ConflictError if it exists.

        ``store``: the URL of the PostgreSQL database the team lives in (``swarm.core.store``); None: files.
        ``repo``: the git remote its code travels through to teammates on hosts (``TeamFile.repo``).
        """
        validate_name(team, "team name")
        if store is not None:
            if LockedJsonFile(self.home.config_path(team), TeamCodec()).exists():
                raise ConflictError(f"team {team!r} already exists here as files; pick another name")
            had = locate(self.home, team)
            record(self.home, team, store)
            try:
                return self._create(team, description, cwd=cwd, lead_session_id=lead_session_id, repo=repo)
            except BaseException:
                if had is None:
                    forget(self.home, team)  # no team was made: leave no record of one
                raise
        return self._create(team, description, cwd=cwd, lead_session_id=lead_session_id, repo=repo)

    def _create(self, team: str, description: str | None, *, cwd: str | None,
                lead_session_id: str | None, repo: str | None) -> TeamFile:
        if self._file(team).exists():
            raise ConflictError(f"team {team!r} already exists; pick another name or `swarm team delete {team}`")
        ensure_dir(self.home.inboxes_dir(team))
        stamp = now_ms()
        lead = Member(agent_id=agent_id(LEAD_NAME, team), name=LEAD_NAME, agent_type=LEAD_NAME,
                      joined_at=stamp, tmux_pane_id="leader", cwd=cwd or os.getcwd(),
                      subscriptions=[], is_active=True)
        fresh = TeamFile(name=team, created_at=stamp, lead_agent_id=lead.agent_id, members=[lead])
        if description:
            fresh.description = description
        if lead_session_id:
            fresh.lead_session_id = lead_session_id
        if repo:
            fresh.repo = repo

        def put(current: TeamFile | None) -> tuple[TeamFile, TeamFile]:
            if current is not None:
                raise ConflictError(f"team {team!r} already exists")
            return fresh, fresh

        try:
            return self._file(team).transform(put)
        finally:
            self.view.forget(self.home.config_path(team))

    def list(self) -> list[TeamFile]:
        """Every team in the home whose team file can be read, by name (``survey`` also says which cannot)."""
        return self.survey().teams

    def survey(self) -> Survey:
        """Every team in the home, by name, read or with why it cannot be."""
        teams: list[TeamFile] = []
        unreadable: dict[str, str] = {}
        entries = sorted(self.home.teams_dir.iterdir()) if self.home.teams_dir.is_dir() else []
        for entry in entries:
            if not valid_name(entry.name):  # Claude Code's `<team>.deleted-<uuid>` tombstones, stray files
                log.debug("skipped a teams/ entry that is not a team", extra={"entry": entry.name})
                continue
            config = entry / "config.json"
            if not entry.is_dir() or not (config.exists() or config.is_symlink()
                                          or any(entry.glob("config.json.corrupt-*"))):
                continue
            try:
                teams.append(self.get(entry.name))
            except (CorruptFileError, StorageError) as exc:
                unreadable[entry.name] = str(exc)
            except NotFoundError:  # deleted meanwhile
                continue
        for name in recorded_teams(self.home):
            try:
                teams.append(self.get(name))
            except (CorruptFileError, StorageError) as exc:
                unreadable[name] = str(exc)
            except NotFoundError:
                continue
        teams.sort(key=lambda t: t.name)
        return Survey(teams, unreadable)

    def get(self, team: str) -> TeamFile:
        """The team file with each running member's activity (busy/idle, tokens) laid over it.

        The caller's own copy; read from disk only when the file (or an
        activity record) changed since this process last read it.
        """
        row = team_row(self.home, team)
        if row is not None:
            found = row.require()
            activities = row.activities()
            return lay_activity(found, activities.get)
        return self.view.get(team)

    def current(self, team: str) -> TeamFile:
        """The team file as last read (shared: do not change it); see ``Roster``."""
        row = team_row(self.home, team)
        return row.require() if row is not None else self.view.current(team)

    def watcher(self, team: str) -> ChangeWatcher:
        """Wakes when the team (who is active) or a member's activity (busy, idle) changes; close it when done."""
        row = team_row(self.home, team)
        if row is not None:
            return row.watcher()
        directory = self.home.team_dir(team)
        return watch_dirs(ensure_dir(directory / "activity"), directory)

    def roster(self, team: str) -> Roster:
        """A reader of ``team``'s file that reads it again only when it changed (see ``Roster``)."""
        return Roster(self, team)

    def read_file(self, team: str) -> TeamFile:
        """The team file as on disk, without the activity overlay (the caller's own copy).

        NotFoundError if there is no such team; CorruptFileError if its file
        does not parse (left in place) or was moved aside as corrupt.
        """
        row = team_row(self.home, team)
        return row.require() if row is not None else self.view.read_file(team)

    def exists(self, team: str) -> bool:
        return self._file(team).exists()

    # -- activity (beside the team file) -------------------------------------

    def set_activity(self, team: str, name: str, activity: Activity) -> None:
        """Record what teammate ``name`` is doing.

        Without the lock or a read first: the teammate is the file's one
        writer, and it writes the whole record. Rewritten in place and not
        fsynced (``fileio.InPlaceRecord``: it is on the path from a message to
        the turn, twice a turn); readers tell a half-done write by its ``seq``
        (``ActivityCodec``), and a power loss only loses a stale busy/idle.
        """
        row = team_row(self.home, team)
        if row is not None:
            row.set_activity(name, activity)
            return
        record = self.home.kept(ActivityRecords).of(team, name)
        data = encode_json(ActivityCodec().slot(activity, time.time_ns()))
        try:
            try:
                record.write(data)
            except FileNotFoundError:  # the first record: its directory is made once
                ensure_dir(record.path.parent)
                record.write(data)
        except OSError as exc:
            raise storage_error(exc, record.path, "write") from exc
        finally:
            self.view.forget(record.path)

    def delete(self, team: str, *, force: bool = False) -> TeamFile:
        """Remove the team directory (inboxes, logs, transcripts) and its tasks.

        Refused while a member other than the lead is active, unless ``force``.
        The directory is first renamed aside (atomic) so no reader sees half a team.
        """
        def check(current: TeamFile) -> TeamFile:
            active = [m.name for m in current.members if m.present() and m.name != LEAD_NAME]
            if active and not force:
                raise ConflictError(
                    f"team {team!r} has active members ({', '.join(active)}); "
                    f"shut them down first or pass --force"
                )
            return current

        removed = self.modify(team, check)
        row = team_row(self.home, team)
        if row is not None:
            row.delete()
            forget(self.home, team)
            shutil.rmtree(self.home.team_dir(team), ignore_errors=True)  # its logs and transcripts here
            return removed
        tomb = self.home.teams_dir / f".deleted-{team}-{now_ms()}"
        os.replace(self.home.team_dir(team), tomb)
        self.view.forget(self.home.config_path(team))
        shutil.rmtree(tomb, ignore_errors=True)
        shutil.rmtree(self.home.tasks_dir(team), ignore_errors=True)
        return removed

    # -- members -------------------------------------------------------------

    def add_member(self, team: str, member: Member, *, replace_inactive: bool = True,
                   also: Callable[[TeamFile], None] | None = None) -> Member:
        """Add ``member``; a live member of that name is a ConflictError.

        An inactive member of the same name is replaced when ``replace_inactive``.
        A color is assigned when the member has none. ``also`` changes the team
        file in the same locked rewrite (one read, encode and fsync of a file
        that grows with the team, not two).
        """
        validate_name(member.name, "agent name")

        def add(current: TeamFile) -> Member:
            if also is not None:
                also(current)
            existing = current.member(member.name)
            if existing is not None:
                if existing.present() or not replace_inactive or member.name == LEAD_NAME:
                    raise ConflictError(
                        f"team {team!r} already has a member named {member.name!r}; pick another name"
                    )
                current.members.remove(existing)
            if member.color is None:
                member.color = _free_color(current)
            current.members.append(member)
            return member

        return self.modify(team, add)

    def update_member(self, team: str, name: str, **changes: Any) -> Member:
        """Set fields (python names, e.g. ``is_active=False``) on member ``name``."""
        def apply(current: TeamFile) -> Member:
            member = _require_member(current, team, name)
            for key, value in changes.items():
                setattr(member, key, value)
            return member

        return self.modify(team, apply)

    def remove_member(self, team: str, name: str) -> Member:
        if name == LEAD_NAME:
            raise ConflictError("the team-lead member cannot be removed; delete the team instead")

        def drop(current: TeamFile) -> Member:
            member = _require_member(current, team, name)
            current.members.remove(member)
            return member

        return self.modify(team, drop)

    def modify(self, team: str, change: Callable[[TeamFile], Any]) -> Any:
        """Run ``change`` on the team file under its lock (NotFoundError if missing)."""
        def guarded(current: TeamFile | None) -> Any:
            if current is None:
                raise team_not_found(self.home.teams_dir, team)
            return change(current)

        try:
            return self._file(team).update(guarded)
        finally:
            self.view.forget(self.home.config_path(team))


class Roster:
    """One team's file as this process last read it, read again only when the file on disk is another.

    For the frequent readers that need membership, names and rules but not
    activity: every send (recipients) and every tool call's permission check.
    The shared object of the process's view (``swarm.core.team_view``): the
    activity overlay of ``TeamStore.get`` is not applied (it lives in other
    files), and callers must not change the returned object: the next call
    returns it again.
    """

    def __init__(self, store: TeamStore, team: str) -> None:
        self._store = store
        self._team = team

    def current(self) -> TeamFile:
        return self._store.current(self._team)


def _require_member(team_file: TeamFile, team: str, name: str) -> Member:
    member = team_file.member(name)
    if member is None:
        names = ", ".join(m.name for m in team_file.members)
        raise NotFoundError(f"no member {name!r} in team {team!r}; members: {names}")
    return member


def _free_color(team_file: TeamFile) -> str:
    used = {m.color for m in team_file.members}
    free = [c for c in COLORS if c not in used]
    return free[0] if free else COLORS[len(team_file.members) % len(COLORS)]


ACTIVITY_ROOM = 256
"""Bytes an activity file is made with: room for any record (about 150 bytes at most), so it is never grown."""


class ActivityRecords:
    """The activity files this process writes, each kept open (one per ``Home``: ``Home.kept``)."""

    def __init__(self, home: Home) -> None:
        self.home = home
        self._records: dict[tuple[str, str], InPlaceRecord] = {}

    def of(self, team: str, name: str) -> InPlaceRecord:
        found = self._records.get((team, name))
        if found is None:
            found = self._records[(team, name)] = InPlaceRecord(self.home.activity_path(team, name),
                                                                room=ACTIVITY_ROOM)
        return found
