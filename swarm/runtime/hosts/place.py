"""The lead's side: place a teammate on a host through a signed spawn request (``swarm spawn --host/--labels``).

The lead writes the teammate's entry (``host`` named, or ``""`` while a labels request
waits), sends the first task to its inbox signed as always, and inserts the signed
request (``request.PlacedSpawn``); a host takes it, checks it and starts the teammate
(``serve``). ``place`` returns once the host started it or said why not.
"""

from __future__ import annotations

import time
from pathlib import Path

from pydantic import BaseModel

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
from swarm.runtime.hosts.code import check_remote, push_base, pushed, team_remote
from swarm.runtime.hosts.request import PlacedSpawn, sign
from swarm.runtime.restart_policy import DEFAULT_MAX_RESTARTS, RestartPolicy, save_policy

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


class Placement(BaseModel):
    """How a teammate was placed, kept in its restart record (``RestartRecord.placed``) to place it again."""

    prompt: str
    host: str | None
    labels: list[str]
    prompt_author: Author
    agent_type: str
    model: str | None
    permission_mode: str
    backend: str
    playbook: str | None
    repo: str | None
    base: str | None
    cwd: str | None


def place(home: Home, team: str, name: str, prompt: str, *, host: str | None, labels: list[str],
          prompt_author: Author = "person", agent_type: str = "general-purpose", model: str | None = None,
          permission_mode: str = "default", backend: str = "auto", playbook: Path | None = None,
          repo: str | None = None, base: str | None = None, cwd: Path | None = None,
          timeout: float = PLACE_TIMEOUT, restart: RestartPolicy = "no", max_restarts: int = DEFAULT_MAX_RESTARTS,
          again: bool = False) -> Member:
    """Have a host start teammate ``name``; its entry once the host started it.

    ``repo``: the git remote the code travels through; None: the team's (``code.team_remote``).
    ``restart``/``max_restarts``: its restart policy (``runtime.restart``: a placement that ends ``dead`` is
    placed again). ``again``: placed again by that policy: its record is kept, and it starts from the branch it
    pushed when it has one (not the base, which would overwrite that branch).
    """
    lead_cwd = cwd or Path.cwd()
    how = Placement(prompt=prompt, host=host, labels=labels, prompt_author=prompt_author, agent_type=agent_type,
                    model=model, permission_mode=permission_mode, backend=backend,
                    playbook=str(playbook) if playbook else None, repo=repo, base=base,
                    cwd=str(lead_cwd))
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
    repo = check_remote(repo) if repo is not None else team_remote(home, team, lead_cwd)
    if base is not None and repo is None:
        raise UsageError("--base with --host needs a git remote for the commit to travel through: --repo URL, "
                         f"`swarm team create {team} --repo URL`, or an origin in the lead's repository")
    sha = pushed(repo, team, name, lead_cwd) if again and repo is not None else None
    if sha is None and repo is not None:
        sha = push_base(lead_cwd, repo, team, base)
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
            if not again:
                save_policy(home, team, name, restart, max_restarts, {}, placed=how.model_dump(mode="json"))
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


def place_again(home: Home, team: str, name: str, placed: dict[str, object]) -> Member:
    """Place teammate ``name`` again as its restart record says it was placed (a new epoch; same host or labels)."""
    how = Placement.model_validate(placed)
    return place(home, team, name, how.prompt, host=how.host, labels=how.labels, prompt_author=how.prompt_author,
                 agent_type=how.agent_type, model=how.model, permission_mode=how.permission_mode, backend=how.backend,
                 playbook=Path(how.playbook) if how.playbook else None, repo=how.repo, base=how.base,
                 cwd=Path(how.cwd) if how.cwd else None, again=True)
