"""`swarm team adopt`: the lead's machine is gone; a new home takes the team over from the database, with the old
lead key, and leads the teammate still running on its host (talks to it, shuts it down)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable

from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.signing import key_path
from swarm.core.store import locate
from swarm.runtime.hosts.place import place
from swarm.runtime.shutdown import shutdown
from swarm.runtime.spawn import wait_joined
from swarm.runtime.status import team_status
from tests.backends.helpers import retry_until
from tests.forked import run_swarm
from tests.runtime.hosts.conftest import SECRET, HostProc, Site
from tests.teammate.conftest import PLAYBOOK


def _adopt(home: Home, *args: str) -> subprocess.CompletedProcess[str]:
    return run_swarm(["team", "adopt", *args], timeout=60, env={**os.environ, "SWARM_HOME": str(home.root)})


def test_a_new_lead_adopts_the_team_and_leads_its_remote_teammate(site: Site,
                                                                  start_host: Callable[..., HostProc]) -> None:
    start_host("h1")
    book = site.tmp / "book.toml"
    book.write_text(PLAYBOOK)
    place(site.lead, site.team, "ann", "ping first", host="h1", labels=[], playbook=book)
    wait_joined(site.lead, site.team, ["ann"])
    old_key = site.tmp / "old-lead.key"
    old_key.write_text(key_path(site.lead, site.team).read_text())  # what the person saved from the old machine

    new = Home(site.tmp / "lead2")
    missing = _adopt(new, "nosuch", "--store", site.url)
    assert missing.returncode != 0 and "no team 'nosuch'" in missing.stderr and SECRET not in missing.stderr
    assert locate(new, "nosuch") is None  # nothing recorded for a team that is not there

    done = _adopt(new, site.team, "--store", site.url, "--lead-key", str(old_key))
    assert done.returncode == 0, done.stderr
    assert "teammates ann" in done.stdout and SECRET not in done.stdout + done.stderr
    rows = {r.name: r for r in team_status(new, site.team)}
    assert rows["ann"].host == "h1" and rows["ann"].state in ("idle", "busy")

    Mailbox(new, site.team).send("ann", "ping adopted", sender="team-lead")
    retry_until(lambda: "pong adopted from ann" in [e.text for e in Mailbox(new, site.team).read("team-lead")], 20,
                what="the pong to the new lead")
    [outcome] = shutdown(new, site.team, ["ann"], dict(os.environ), timeout=15)
    assert outcome.result == "approved"  # a signed shutdown request the teammate verified with the old key


def test_adopted_with_a_new_key_the_teammate_does_not_obey_the_new_lead(site: Site,
                                                                        start_host: Callable[..., HostProc]) -> None:
    start_host("h1")
    book = site.tmp / "book.toml"
    book.write_text(PLAYBOOK)
    place(site.lead, site.team, "ann", "ping first", host="h1", labels=[], playbook=book)
    wait_joined(site.lead, site.team, ["ann"])
    new = Home(site.tmp / "lead2")
    done = _adopt(new, site.team, "--store", site.url)
    assert done.returncode == 0 and "a new lead key" in done.stdout
    # its shutdown request is signed with a key the teammate does not know: not obeyed; the host stops it by force
    [outcome] = shutdown(new, site.team, ["ann"], dict(os.environ), timeout=3)
    assert outcome.result == "killed"
