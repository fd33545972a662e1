"""Trust on first use: a host started without --trust-key keeps the lead's request waiting (never running it) until
the person on the host runs `swarm host trust FINGERPRINT`; the running host picks that up and runs the request.
And the attacker's side: a key that is not trusted never runs however long it waits, a look-alike fingerprint does
not trust the real key, a forged signature under a trusted key is refused, a trust file others may write is refused."""

from __future__ import annotations

import os
import stat
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.protocol import Member
from swarm.core.signing import LeadKey, lead_key
from swarm.core.teams import TeamStore
from swarm.errors import BackendError, UsageError
from swarm.runtime.hosts.place import place
from swarm.runtime.hosts.request import MAX_AGE_MS, PlacedSpawn, sign
from swarm.runtime.hosts.trust import (
    MAX_ASKED,
    HostTrust,
    asked_keys,
    fingerprint,
    record_ask,
    resolve,
    revoke,
    trust_key,
    trust_path,
)
from tests.backends.helpers import retry_until
from tests.forked import run_swarm
from tests.runtime.hosts.conftest import HostProc, Site
from tests.teammate.conftest import PLAYBOOK


def _swarm(home: Home, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SWARM_HOME": str(home.root)}
    env.pop("SWARM_TEAM", None)
    return run_swarm(args, timeout=60, env=env)


def _status(site: Site, row_id: int) -> str | None:
    row = site.rows.request(row_id)
    return None if row is None else row.status


def _pongs(site: Site) -> list[str]:
    return [e.text for e in Mailbox(site.lead, site.team).read("team-lead") if e.text.startswith("pong")]


def _place_in_background(site: Site, name: str, timeout: float) -> tuple[threading.Thread, dict[str, object]]:
    book = site.tmp / "book.toml"
    book.write_text(PLAYBOOK)
    out: dict[str, object] = {}

    def run() -> None:
        try:
            out["member"] = place(site.lead, site.team, name, "ping first", host="h1", labels=[], playbook=book,
                                  timeout=timeout)
        except BackendError as exc:
            out["error"] = str(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def test_the_person_on_the_host_trusts_the_key_that_asked_and_the_waiting_request_runs(
        site: Site, start_host: Callable[..., HostProc]) -> None:
    host = start_host("h1", "--labels", "gpu", trust_key=False)
    print_ = fingerprint(lead_key(site.lead, site.team).verify_arg)
    thread, out = _place_in_background(site, "ann", timeout=30)
    retry_until(lambda: _status(site, 1) == "untrusted", 10, what="the request waiting for trust")
    assert host.live_pids() == []

    listed = _swarm(host.home, "host", "trust")
    assert listed.returncode == 0 and print_ in listed.stdout and " t " in listed.stdout, listed
    shown = _swarm(site.lead, "host", "key", "--team", "t", "--fingerprint")
    assert shown.stdout.strip() == print_  # what the lead's person reads out to the host's
    done = _swarm(host.home, "host", "trust", print_[: len("sha256:") + 20])
    assert done.returncode == 0 and print_ in done.stdout, done

    thread.join(30)
    member = out.get("member")
    assert isinstance(member, Member) and member.host == "h1", out
    retry_until(lambda: "pong first from ann" in _pongs(site), 20, what="ann's pong")
    assert host.live_pids() == [member.pid]

    # a request for any host with a label is taken only by a host that trusts its key: it waits for one, untaken
    other = LeadKey(Ed25519PrivateKey.generate(), 1)
    labelled = PlacedSpawn(team=site.team, name="bob", labels=["gpu"], prompt="ping x", playbook_text=PLAYBOOK,
                           lead_verify_key=other.verify_arg)
    row = site.rows.submit(site.team, "bob", None, ["gpu"], labelled.model_dump(mode="json"), sign(labelled, other))
    time.sleep(1.5)
    assert _status(site, row) == "pending" and host.live_pids() == [member.pid]
    same_key_other_time = "999." + other.verify_arg.partition(".")[2]  # trust is by key, whatever its line's time
    assert _swarm(host.home, "host", "trust", "--key", same_key_other_time).returncode == 0
    retry_until(lambda: _status(site, row) not in ("pending", "taken"), 10, what="the labels request taken")
    taken = site.rows.request(row)  # and checked (refused: no team entry placed bob; the take is what counts here)
    assert taken is not None and taken.taken_by == "h1" and taken.status == "refused"
    assert stat.S_IMODE(trust_path(host.home).stat().st_mode) == 0o600
    assert "waits: signed by lead key" in host.log.read_text()


def test_an_untrusted_key_never_runs_and_look_alikes_and_forgeries_do_not_help(
        site: Site, start_host: Callable[..., HostProc]) -> None:
    host = start_host("h1", trust_key=False)
    real = lead_key(site.lead, site.team)
    stranger = LeadKey(Ed25519PrivateKey.generate(), real.created_ms)

    def doc(key: LeadKey, **changes: object) -> PlacedSpawn:
        return PlacedSpawn(team=site.team, name="mal", host="h1", prompt="touch pwned; ping x", playbook_text=PLAYBOOK,
                           lead_verify_key=key.verify_arg).model_copy(update=changes)

    def submit(d: PlacedSpawn, signature: str) -> int:
        return site.rows.submit(site.team, d.name, d.host, d.labels, d.model_dump(mode="json"), signature)

    asking = doc(stranger)
    strange = submit(asking, sign(asking, stranger))
    # made by a key the person will trust, but going stale while it waits: trusting it later must not run it
    aging_key = LeadKey(Ed25519PrivateKey.generate(), real.created_ms)
    late = doc(aging_key, created_ms=int(time.time() * 1000) - MAX_AGE_MS + 3_000)
    stale = submit(late, sign(late, aging_key))
    retry_until(lambda: _status(site, strange) == "untrusted" and _status(site, stale) == "untrusted", 10,
                what="both waiting")

    # the lead's own request gives up after its timeout, saying what to run on the host
    thread, out = _place_in_background(site, "ann", timeout=2)
    thread.join(20)
    leads = stale + 1
    assert "host h1 does not trust this lead's key yet; on h1 run `swarm host trust sha256:" in str(out.get("error"))
    ann = TeamStore(site.lead).get(site.team).member("ann")
    assert ann is not None and ann.status == "killed" and ann.is_active is False

    # look-alikes: one hex digit off the stranger's, too short a prefix: neither trusts anything
    off = fingerprint(stranger.verify_arg)
    off = off[:-1] + ("0" if off[-1] != "0" else "1")
    bad = _swarm(host.home, "host", "trust", off)
    assert bad.returncode != 0 and "no key with fingerprint" in bad.stderr
    short = _swarm(host.home, "host", "trust", fingerprint(stranger.verify_arg)[:12])
    assert short.returncode != 0 and "at least 16 hex digits" in short.stderr
    assert not trust_path(host.home).exists()

    # the person trusts the real lead (its request withdrawn meanwhile: nothing starts) and the aging key (stale now)
    time.sleep(3.0)
    assert _swarm(host.home, "host", "trust", fingerprint(real.verify_arg)).returncode == 0
    assert _swarm(host.home, "host", "trust", "--key", aging_key.verify_arg).returncode == 0
    retry_until(lambda: _status(site, stale) == "refused", 10, what="the stale request refused once trusted")
    claimed = doc(real)
    forged = submit(claimed, sign(claimed, stranger))  # the trusted key's id, the stranger's signature
    retry_until(lambda: _status(site, forged) == "refused", 10, what="the forgery refused")
    time.sleep(1.0)
    assert _status(site, strange) == "untrusted"  # still waiting, never run
    assert _status(site, leads) == "withdrawn"  # the lead's: trusting its key later did not revive it
    assert host.live_pids() == []
    assert TeamStore(site.lead).get(site.team).member("mal") is None
    assert not list(site.tmp.rglob("pwned"))

    # a trust file others may write is refused, by the running host too: it then trusts no key
    path = trust_path(host.home)
    path.chmod(0o662)
    zed = doc(real, name="zed")
    replay = submit(zed, sign(zed, real))
    retry_until(lambda: _status(site, replay) == "untrusted", 10, what="a trusted key untrusted by an unsafe file")
    assert "writable by others" in host.log.read_text()
    refused = _swarm(host.home, "host", "serve", "--store", site.url, "--name", "h2")
    assert refused.returncode != 0 and "writable by others (mode 662)" in refused.stderr
    assert host.live_pids() == []


def test_a_fingerprint_names_exactly_one_key(tmp_path: Path) -> None:
    home = Home(tmp_path / "h")
    one, two = (LeadKey(Ed25519PrivateKey.generate(), 1).verify_arg for _ in range(2))
    same = "sha256:" + "ab" * 32
    with pytest.raises(UsageError, match="matches 2 keys"):
        resolve(same[:30], {same: one, same[:-1] + "c": two})
    assert resolve(fingerprint(one), {fingerprint(one): one, fingerprint(two): two}) == (fingerprint(one), one)
    trust_key(home, one)
    trust_key(home, one)  # twice: one line
    assert trust_path(home).read_text().count(one) == 1
    with pytest.raises(UsageError, match="not a lead key"):
        trust_key(home, "1.AAAA")
    trust_key(home, two)
    assert revoke(home, fingerprint(one)[:30]) == fingerprint(one)
    assert one not in trust_path(home).read_text() and two in trust_path(home).read_text()


def test_keys_that_asked_are_bounded(tmp_path: Path) -> None:
    """A flood of strangers' requests keeps only the most recently seen keys, their claims cut short."""
    home = Home(tmp_path / "h")
    keys = [LeadKey(Ed25519PrivateKey.generate(), 1).verify_arg for _ in range(MAX_ASKED + 5)]
    for key in keys:
        record_ask(home, key, "t", "x" * 10_000)
    asked = asked_keys(home)
    assert len(asked) == MAX_ASKED and keys[-1] in {a.key for a in asked} and keys[0] not in {a.key for a in asked}
    assert {len(a.lead) for a in asked} == {100}


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_a_trust_file_of_another_user_is_refused(tmp_path: Path) -> None:
    home = Home(tmp_path / "h")
    trust_key(home, LeadKey(Ed25519PrivateKey.generate(), 1).verify_arg)
    os.chown(trust_path(home), 65534, 65534)
    with pytest.raises(UsageError, match="owned by another user"):
        HostTrust(home).read()
