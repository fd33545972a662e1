"""Where a team's shared state lives: files under the home (the default) or a PostgreSQL database.

A team picks its store once, at creation (``swarm team create NAME --store
postgresql://…``, ``[team] store = …`` in a team file, ``SWARM_STORE`` for new
teams). A PostgreSQL team is recorded in the home by one small file,
``<home>/stores/<team>.url`` (mode 0600: the URL may carry a password), and
from then on ``TeamStore``, ``Mailbox`` and ``TaskStore`` of that team read
and write the database (``swarm.core.store.postgres``) with the same
semantics the file store has; a team with no record is a file team, on disk
exactly as before. Nothing here imports the database driver: a file team
never loads it.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from swarm.core.home import DIR_MODE, FILE_MODE, Home, ensure_dir
from swarm.core.names import validate_name
from swarm.errors import UsageError

if TYPE_CHECKING:
    from swarm.core.store.base import Inboxes, PermissionRecord, TaskList, TeamRecord
    from swarm.core.store.postgres.database import Database

SCHEMES = ("postgresql://", "postgres://")
FILES = "files"
"""The store value that means today's files under the home (the default)."""


def store_record(home: Home, team: str) -> os.PathLike[str]:
    """The file that says ``team`` keeps its state in a database (absent: files)."""
    return home.root / "stores" / f"{validate_name(team, 'team name')}.url"


def locate(home: Home, team: str) -> str | None:
    """The database URL of ``team``, or None for a file team.

    On every construction of a team's stores, so cheap for a home with no database team: one ``stat`` of
    ``<home>/stores`` that fails (about a microsecond); with one, an ``open`` of the team's record.
    """
    directory = f"{home.root}/stores"
    if not os.path.isdir(directory):
        return None
    try:
        with open(store_record(home, team), encoding="utf-8") as handle:
            url = handle.read().strip()
    except (FileNotFoundError, NotADirectoryError):
        return None
    return url or None


def check_store(value: str | None) -> str | None:
    """A store as given by a person (None or ``files``: files); UsageError for anything else."""
    if value is None or value.strip() in ("", FILES):
        return None
    url = value.strip()
    if not url.startswith(SCHEMES):
        raise UsageError(f"store must be 'files' or a postgresql://… URL, not {redacted(url)!r}")
    return url


def record(home: Home, team: str, url: str) -> None:
    """Record that ``team`` lives in the database at ``url`` (readable by this user only)."""
    path = store_record(home, team)
    ensure_dir(home.root / "stores")
    os.chmod(home.root / "stores", DIR_MODE)
    temp = f"{os.fspath(path)}.tmp-{os.getpid()}"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    try:
        os.write(fd, (url + "\n").encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temp, path)


def forget(home: Home, team: str) -> None:
    """Drop ``team``'s record (after the team was deleted from its database)."""
    try:
        os.unlink(store_record(home, team))
    except FileNotFoundError:
        pass


def recorded_teams(home: Home) -> dict[str, str]:
    """Every database team recorded in the home: ``{team: url}``."""
    directory = home.root / "stores"
    if not directory.is_dir():
        return {}
    found = {}
    for entry in sorted(directory.iterdir()):
        if entry.name.endswith(".url"):
            url = locate(home, entry.name.removesuffix(".url"))
            if url:
                found[entry.name.removesuffix(".url")] = url
    return found


def database(home: Home, url: str) -> Database:
    """This process's connection to the database at ``url`` (made on first use, kept on the home)."""
    from swarm.core.store.postgres.database import Databases

    return home.kept(Databases).get(url)


def redacted(url: str) -> str:
    """``url`` with any password replaced by ``***`` (what errors and logs may show)."""
    from swarm.core.store.redact import redact_url

    return redact_url(url)


def team_row(home: Home, team: str) -> TeamRecord | None:
    """``team``'s row in its database, or None for a file team."""
    url = locate(home, team)
    if url is None:
        return None
    from swarm.core.store.postgres.teams import TeamRow

    return TeamRow(database(home, url), team)


def inbox_rows(home: Home, team: str) -> Inboxes | None:
    """``team``'s inboxes in its database, or None for a file team."""
    url = locate(home, team)
    if url is None:
        return None
    from swarm.core.store.postgres.inbox import InboxRows
    from swarm.core.store.postgres.relay import relay_dir

    return InboxRows(database(home, url), team, relay_dir(home.run_dir))


def task_rows(home: Home, team: str) -> TaskList | None:
    """``team``'s task list in its database, or None for a file team (and for a session's own list)."""
    url = locate(home, team)
    if url is None:
        return None
    from swarm.core.store.postgres.tasks import TaskRows

    return TaskRows(database(home, url), team)


def permission_rows(home: Home, team: str) -> PermissionRecord | None:
    """``team``'s permission record in its database, or None for a file team."""
    url = locate(home, team)
    if url is None:
        return None
    from swarm.core.store.postgres.permissions import PermissionRows

    return PermissionRows(database(home, url), team)
