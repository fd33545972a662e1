"""The lead's side: place a teammate on a host through a signed spawn request (``swarm spawn --host/--labels``).

The lead writes the teammate's entry (``host`` named, or ``""`` while a labels request
waits), sends the first task to its inbox signed as always, and inserts the signed
request (``request.PlacedSpawn``); a host takes it, checks it and starts the teammate
(``serve``). ``place`` returns once the host started it or said why not.
"""

from __future__ import annotations

import time
from pathlib import Path

from swarm.core.clock import now_ms
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.members import mark_gone
from swarm.core.names import LEAD_NAME, RESERVED_NAMES, agent_id, validate_name
from swarm.core.protocol import Author, Member
from swarm.core.signing import lead_key
from swarm.core.store import database, locate
from swarm.core.store.postgres.hosts import HostRows
from swarm.core.teams import TeamStore
from swarm.errors import BackendError, UsageError
from swarm.runtime.hosts.code import push_base
from swarm.runtime.hosts.request import PlacedSpawn, sign

PLACE_TIMEOUT = 30.0
"""Seconds a request waits for a host to take and start it."""
POLL = 0.05


def host_rows(home: Home, team: str) -> HostRows:
    """The hosts of ``team``'s database; UsageError for a file team (hosts share the team through the database)."""
    url = locate(home, team)
    if url is None:
        raise UsageError(f"team {team!r} keeps its state in files on this machine; a teammate on another host "
                         f"needs a PostgreSQL team (`swarm team create {team} --store postgresql://…`)")
    return HostRows(database(home, url))


def place(home: Home, team: str, name: str, prompt: str, *, host: str | None, labels: list[str],
          prompt_author: Author = "person", agent_type: str = "general-purpose", model: str | None = None,
          permission_mode: str = "default", backend: str = "auto", playbook: Path | None = None,
          repo: str | None = None, base: str | None = None, cwd: Path | None = None,
          timeout: float = PLACE_TIMEOUT) -> Member:
    """Have a host start teammate ``name``; its entry once the host started it."""
    validate_name(name, "agent name")
    if name in RESERVED_NAMES:
        raise UsageError(f"{name!r} is reserved; pick another name for the teammate")
    if host is None and not labels:
        raise UsageError("say where: --host NAME, or --labels a,b for any host that has them")
    if host is not None:
        validate_name(host, "host name")
    if not prompt.strip():
        raise UsageError("the initial prompt is empty; say what the teammate should do with --prompt")
    rows = host_rows(home, team)
    if base is not None and repo is None:
        raise UsageError("--base with --host needs --repo: the commit travels through a git remote")
    sha = push_base(cwd or Path.cwd(), repo, team, base) if repo is not None else None
    teams = TeamStore(home)
    before = teams.get(team).member(name)
    epoch = (before.epoch or 0) + 1 if before is not None else 1
    teams.add_member(team, Member(agent_id=agent_id(name, team), name=name, agent_type=agent_type, prompt=prompt,
                                  joined_at=now_ms(), backend_type="remote", is_active=False, status="starting",
                                  mode=permission_mode, subscriptions=[], host=host or "", epoch=epoch, model=model))
    key = lead_key(home, team)
    Mailbox(home, team).send(name, prompt, sender=LEAD_NAME, author=prompt_author, summary="initial task")
    doc = PlacedSpawn(team=team, name=name, host=host, labels=labels, epoch=epoch, agent_type=agent_type,
                      model=model, permission_mode=permission_mode, backend=backend, prompt=prompt,
                      playbook_text=playbook.read_text(encoding="utf-8") if playbook else None,
                      lead_verify_key=key.verify_arg, repo=repo, base=sha)
    row_id = rows.submit(team, name, host, labels, doc.model_dump(mode="json"), sign(doc, key))
    where = f"host {host}" if host else f"a host with labels {','.join(labels)}"
    deadline = time.monotonic() + timeout
    while True:
        row = rows.request(row_id)
        if row is not None and row.status == "started":
            member = teams.get(team).member(name)
            assert member is not None
            return member
        if row is not None and row.status in ("refused", "ended"):
            mark_gone(home, team, name, "killed")
            raise BackendError(f"{where} refused to start {name}: {row.reason or 'no reason given'}")
        if time.monotonic() > deadline and rows.withdraw(row_id, "no host took it in time"):
            mark_gone(home, team, name, "killed")
            if row is not None and row.status == "untrusted":  # the host's person has not trusted this key yet
                raise BackendError(f"{row.reason or 'the host does not trust this lead key'}; {name} not started")
            raise BackendError(f"no {where} took {name} within {timeout:g}s; is `swarm host serve` running there "
                               f"(`swarm hosts --team {team}`)?")
        time.sleep(POLL)
