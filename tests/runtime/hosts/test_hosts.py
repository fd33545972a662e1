"""A teammate on a host: `swarm host serve` in a home of its own takes the lead's signed spawn request, starts the
teammate there, which talks to the lead through the PostgreSQL inboxes and shuts down when asked; and the
attacker's requests (unsigned, signed by an untrusted key, forged, tampered, stale, replayed) never start a process
(an untrusted key's waits: test_host_trust.py)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from swarm.core.frames import IdleNotification, TeammateTerminated, parse_frame
from swarm.core.mailbox import Mailbox
from swarm.core.protocol import TeamFile
from swarm.core.signing import LeadKey, lead_key
from swarm.core.teams import TeamStore
from swarm.runtime.hosts.place import place
from swarm.runtime.hosts.request import PlacedSpawn, sign
from swarm.runtime.shutdown import shutdown
from swarm.runtime.spawn import wait_joined
from swarm.runtime.status import team_status
from swarm.teammate.lead_watch import LEAD_CHECK
from tests.backends.helpers import retry_until
from tests.runtime.hosts.conftest import HostProc, Site
from tests.teammate.conftest import PLAYBOOK, STUBBORN


def _texts(site: Site) -> list[str]:
    return [e.text for e in Mailbox(site.lead, site.team).read("team-lead") if isinstance(parse_frame(e.text), str)]


def _playbook(site: Site) -> Path:
    path = site.tmp / "lead-playbook.toml"
    path.write_text(PLAYBOOK)
    return path


def test_a_teammate_on_a_host_answers_the_lead_and_shuts_down(site: Site,
                                                             start_host: Callable[..., HostProc]) -> None:
    host = start_host("h1", "--labels", "gpu,big", "--max-teammates", "2")
    member = place(site.lead, site.team, "ann", "ping first", host="h1", labels=[], playbook=_playbook(site))
    assert member.host == "h1" and member.pid is not None
    wait_joined(site.lead, site.team, ["ann"])
    retry_until(lambda: "pong first from ann" in _texts(site), 20, what="the first pong")
    Mailbox(site.lead, site.team).send("ann", "ping second", sender="team-lead")
    retry_until(lambda: "pong second from ann" in _texts(site), 20, what="the second pong")

    # the teammate runs in the host's home: its process, log and work directory are there, none in the lead's
    [proc] = [p for p in host.teammate_procs() if p.pid == member.pid]
    assert proc.environ()["SWARM_HOME"] == str(host.home.root)
    assert host.home.log_path(site.team, "ann").is_file()
    assert not site.lead.log_path(site.team, "ann").exists()
    assert proc.cwd() == str(host.home.root / "work" / site.team / "ann")
    rows = {r.name: r for r in team_status(site.lead, site.team)}
    assert rows["ann"].host == "h1" and rows["ann"].state in ("idle", "busy")  # not judged by a pid on this machine
    [listed] = site.rows.hosts()
    assert (listed.name, listed.labels, listed.max_teammates) == ("h1", ["big", "gpu"], 2)
    retry_until(lambda: site.rows.hosts()[0].running == 1, 5, what="load 1/2")

    [outcome] = shutdown(site.lead, site.team, ["ann"], dict(os.environ), timeout=15)
    assert outcome.result == "approved"
    retry_until(lambda: not proc.is_running() or proc.status() == "zombie", 10, what="the teammate's exit")
    retry_until(lambda: site.rows.request(1) is not None and site.rows.request(1).status == "ended", 10,  # type: ignore[union-attr]
                what="the host records the end")
    ann = TeamStore(site.lead).get(site.team).member("ann")
    assert ann is not None and ann.is_active is False and ann.status == "stopped"
    retry_until(lambda: site.rows.hosts()[0].running == 0, 5, what="load 0/2")
    assert any(isinstance(parse_frame(e.text), IdleNotification) for e in Mailbox(site.lead, site.team).read("team-lead"))


def test_placing_by_labels_picks_a_host_that_has_them(site: Site, start_host: Callable[..., HostProc]) -> None:
    start_host("small", "--labels", "cpu")
    start_host("big", "--labels", "cpu,gpu")
    member = place(site.lead, site.team, "bob", "ping one", host=None, labels=["gpu"], playbook=_playbook(site))
    assert member.host == "big"
    retry_until(lambda: "pong one from bob" in _texts(site), 20, what="bob's pong")


def _refusal(site: Site, row_id: int) -> str:
    retry_until(lambda: site.rows.request(row_id) is not None and site.rows.request(row_id).status == "refused",  # type: ignore[union-attr]
                10, what=f"request {row_id} refused")
    found = site.rows.request(row_id)
    assert found is not None and found.reason is not None
    return found.reason


def _submit(site: Site, doc: PlacedSpawn, signature: str) -> int:
    return site.rows.submit(site.team, doc.name, doc.host, doc.labels, doc.model_dump(mode="json"), signature)


def test_unsigned_forged_tampered_stale_and_replayed_requests_never_start_a_process(
        site: Site, start_host: Callable[..., HostProc]) -> None:
    host = start_host("h1")
    trusted = lead_key(site.lead, site.team)
    stranger = LeadKey(Ed25519PrivateKey.generate(), trusted.created_ms)
    evil = "touch pwned; ping x"

    def doc(**changes: object) -> PlacedSpawn:
        return PlacedSpawn(team=site.team, name="mal", host="h1", prompt=evil, playbook_text=PLAYBOOK,
                           lead_verify_key=trusted.verify_arg).model_copy(update=changes)

    unsigned = _submit(site, doc(), "")
    strangers = doc(lead_verify_key=stranger.verify_arg)
    own_key = _submit(site, strangers, sign(strangers, stranger))
    forged = _submit(site, doc(), sign(doc(), stranger))
    good = doc()
    tampered = site.rows.submit(site.team, "mal", "h1", [], {**good.model_dump(mode="json"), "prompt": "rm -rf ~"},
                                sign(good, trusted))
    stale = doc(created_ms=good.created_ms - 3_600_000)
    old = _submit(site, stale, sign(stale, trusted))
    elsewhere = doc(host="h2")
    misdirected = site.rows.submit(site.team, "mal", "h1", [], elsewhere.model_dump(mode="json"),
                                   sign(elsewhere, trusted))
    assert _refusal(site, unsigned) == "bad signature"
    assert _refusal(site, forged) == "bad signature"
    assert _refusal(site, tampered) == "bad signature"
    assert _refusal(site, old).startswith("stale request")
    assert _refusal(site, misdirected) == "the request's row does not match its signed document"

    # a real placement, then its exact row inserted again: refused as a replay
    member = place(site.lead, site.team, "ann", "ping first", host="h1", labels=[], playbook=_playbook(site))
    wait_joined(site.lead, site.team, ["ann"])
    real = site.rows.request(7)  # after the 6 above
    assert real is not None and real.name == "ann" and real.status == "started"
    replay = site.rows.submit(site.team, real.name, real.host, real.labels, real.doc, real.signature)
    assert _refusal(site, replay) == "replayed request (its id was accepted before)"

    waiting = site.rows.request(own_key)  # an untrusted key is not refused: its request waits for the host's person
    assert waiting is not None and waiting.status == "untrusted" and "does not trust this lead's key" in (waiting.reason
                                                                                                         or "")
    assert host.live_pids() == [member.pid]  # ann's, nothing else
    assert TeamStore(site.lead).get(site.team).member("mal") is None
    assert not (host.home.root / "work" / site.team / "mal").exists()
    assert not list(site.tmp.rglob("pwned"))
    assert "refused spawn request" in host.log.read_text()


def test_a_teammate_that_ignores_shutdown_is_stopped_by_its_host(site: Site,
                                                                 start_host: Callable[..., HostProc]) -> None:
    host = start_host("h1")
    book = site.tmp / "stubborn.toml"
    book.write_text(STUBBORN + PLAYBOOK)
    member = place(site.lead, site.team, "mule", "ping first", host="h1", labels=[], playbook=book,
                   permission_mode="bypassPermissions")
    wait_joined(site.lead, site.team, ["mule"])
    retry_until(lambda: "pong first from mule" in _texts(site), 20, what="the first pong")
    [proc] = [p for p in host.teammate_procs() if p.pid == member.pid]
    [outcome] = shutdown(site.lead, site.team, ["mule"], dict(os.environ), timeout=1.5)
    assert outcome.result == "killed"  # the lead asked, the host did it
    retry_until(lambda: not proc.is_running() or proc.status() == "zombie", 10, what="the process gone")
    retry_until(lambda: host.live_pids() == [], 5, what="nothing of it left, its `sleep 60` neither")
    mule = TeamStore(site.lead).get(site.team).member("mule")
    assert mule is not None and mule.status == "killed" and mule.is_active is False
    notices = [parse_frame(e.text) for e in Mailbox(site.lead, site.team).read("team-lead")]
    assert len([n for n in notices if isinstance(n, TeammateTerminated) and "mule" in n.message]) == 1


def test_a_teammate_on_a_host_does_not_judge_the_leads_pid(site: Site, start_host: Callable[..., HostProc]) -> None:
    """A model lead records its pid in the team; that pid is the lead's machine's, meaningless on a host."""
    host = start_host("h1")

    def lead_elsewhere(team: TeamFile) -> None:
        team.lead_pid, team.lead_proc_start = 4_000_000, 1.0  # no such process here: "gone", were it judged

    TeamStore(site.lead).modify(site.team, lead_elsewhere)
    member = place(site.lead, site.team, "ann", "ping first", host="h1", labels=[], playbook=_playbook(site))
    retry_until(lambda: "pong first from ann" in _texts(site), 20, what="the first pong")
    time.sleep(LEAD_CHECK + 1.0)
    assert host.live_pids() == [member.pid]
    Mailbox(site.lead, site.team).send("ann", "ping second", sender="team-lead")
    retry_until(lambda: "pong second from ann" in _texts(site), 20, what="the second pong")
