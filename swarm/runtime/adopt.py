"""``swarm team adopt``: a new lead process takes over a team kept in PostgreSQL (the old lead's machine died).

The team, its inboxes, tasks, waiting permission requests and its teammates'
entries are all in the database; what the old lead's home kept of its own is
the record of the store, the lead key and the lead's process. Adopting
records the store in this home, installs the lead key — the old lead's
(``--lead-key FILE``, a copy of its ``<home>/teams/<team>/lead.key``), so that
running teammates and hosts keep verifying the lead, or else a new one (then
running teammates take this lead's messages as unverified text and hosts must
trust the new key) — and forgets the old lead's process: its pid is another
machine's.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from swarm.core.home import Home
from swarm.core.names import validate_name
from swarm.core.protocol import TeamFile
from swarm.core.signing import LeadKey, install_lead_key, lead_key, rotate_lead_key
from swarm.core.store import check_store, database, locate, record, redacted
from swarm.core.store.postgres.teams import TeamRow
from swarm.core.teams import TeamStore
from swarm.errors import NotFoundError, UsageError


class Adopted(BaseModel):
    team: str
    members: list[str]
    """The team's teammates, as the database has them."""
    key: str
    """The lead's public key now (``swarm host key``)."""
    same_key: bool
    """The old lead's key was installed: running teammates and hosts go on verifying the lead."""


def adopt(home: Home, team: str, store: str, key_file: Path | None) -> Adopted:
    validate_name(team, "team name")
    url = check_store(store)
    if url is None:
        raise UsageError("--store must be the postgresql://… URL of the database the team is in")
    here = locate(home, team)
    if here is not None and here != url:
        raise UsageError(f"this home already keeps team {team!r} in {redacted(here)}; adopt it into another home")
    if here is None and TeamStore(home).exists(team):
        raise UsageError(f"this home has a team {team!r} of its own in files; adopt into another home")
    key = None
    if key_file is not None:
        try:
            key = LeadKey.loads(key_file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise UsageError(f"--lead-key {key_file}: not a swarm lead key file ({exc})") from None
    if not TeamRow(database(home, url), team).exists():
        raise NotFoundError(f"no team {team!r} in {redacted(url)}; `swarm team list` on the old lead's machine "
                            "names them")
    record(home, team, url)

    def forget_lead(current: TeamFile) -> None:
        current.lead_pid = current.lead_proc_start = None

    TeamStore(home).modify(team, forget_lead)
    if key is not None:
        install_lead_key(home, team, key)
    elif here is None:
        rotate_lead_key(home, team)
    members = [m.name for m in TeamStore(home).get(team).members if m.name != "team-lead"]
    return Adopted(team=team, members=members, key=lead_key(home, team).verify_arg, same_key=key is not None)
