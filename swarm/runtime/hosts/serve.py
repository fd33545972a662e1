"""The host's side (``swarm host serve``): register, heartbeat, take signed spawn requests, start and watch teammates.

One loop, one thread: it LISTENs on ``HOSTS_CHANNEL`` (woken by each new request, and
at least every ``tick`` s), takes the requests it may (addressed to it, or to labels it
has, while it has room), checks each (``request.check``: a valid signature, fresh, a
trusted lead key, never accepted before — anything else is refused with the reason in
the request's row and never starts a process; only an untrusted key makes a request
wait, ``untrusted`` in its row and noted for ``swarm host trust``, until the host's
trust files change: then it is checked again from the start), and starts the teammate with the local
backends in this host's own home: its own logs, work directory (``<home>/work/<team>/<name>``)
and record of the team's store; nothing is shared with the lead but the database.
Its teammates are woken through its one LISTEN session (``wake_relay``), not each by a
session of their own. It records each teammate's end (``dead`` and the lead told, when
its process vanished) and refreshes its heartbeat row. Stopped (SIGTERM, Ctrl-C), it stops its teammates.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from swarm.core.home import Home
from swarm.core.members import mark_gone
from swarm.core.protocol import Member
from swarm.core.store import database, record
from swarm.core.store.postgres.hosts import HOSTS_CHANNEL, HostRows, RequestRow
from swarm.core.store.postgres.listen import NotifyWatcher
from swarm.core.store.postgres.relay import relay_dir
from swarm.core.teams import TeamStore
from swarm.errors import StorageError, SwarmError
from swarm.runtime.hosts.cleanup import clean_work, work_of
from swarm.runtime.hosts.code import check_out, head, push_branch
from swarm.runtime.hosts.request import UNTRUSTED, PlacedSpawn, check
from swarm.runtime.hosts.trust import HostTrust, fingerprint, record_ask
from swarm.runtime.hosts.wake_relay import WakeRelay
from swarm.runtime.member_kinds import Machine, SwarmTeammate
from swarm.runtime.spawn import SpawnRequest, spawn

log = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 2.0
DEAD_AFTER_SECONDS = 15.0
"""Seconds without a heartbeat after which the lead's side counts this host's teammates as dead."""
STOP_GRACE = 2.0


@dataclass
class HostConfig:
    name: str
    url: str
    labels: list[str]
    max_teammates: int
    trust_files: list[Path]
    """``--trust-key`` files; with this home's ``hosts/trusted.keys`` (``hosts.trust``) the keys trusted."""
    backend: str = "subprocess"
    tmux_socket: str | None = None
    heartbeat: float = HEARTBEAT_SECONDS
    dead_after: float = DEAD_AFTER_SECONDS


@dataclass
class _Started:
    row_id: int
    team: str
    member: Member
    code: bool = False
    """Its work directory is a clone of the team's remote: its branch is pushed when idle and at its end."""
    pushed: str | None = None


@dataclass
class HostServer:
    home: Home
    config: HostConfig
    env: Mapping[str, str]
    running: dict[tuple[str, str], _Started] = field(default_factory=dict)
    keys: dict[str, str] = field(default_factory=dict)
    """The trusted lead keys, ``{fingerprint: line}``, as last read."""
    trust: HostTrust | None = None
    recheck: list[int] = field(default_factory=list)
    """Requests waiting for trust to check again, once there is room (the trusted keys changed)."""

    @property
    def rows(self) -> HostRows:
        return HostRows(database(self.home, self.config.url))

    def serve(self, stop: threading.Event, ready: Callable[[], None] = lambda: None) -> None:
        """Run until ``stop`` is set; then stop this host's teammates. ``ready``: called once registered."""
        config = self.config
        relay = WakeRelay(database(self.home, config.url), relay_dir(self.home.run_dir))  # one host per home
        watcher: NotifyWatcher | None = None
        try:
            self.rows.register(config.name, config.labels, config.max_teammates, config.dead_after)
            ready()
            relay.start()  # this host's one LISTEN session for its teammates' inboxes
            watcher = NotifyWatcher(database(self.home, config.url), HOSTS_CHANNEL)
            beat = 0.0
            self.trust = HostTrust(self.home, config.trust_files)
            while not stop.is_set():
                try:
                    self.refresh_trust()
                    self.take_requests()
                    self.watch()
                    if time.monotonic() - beat >= config.heartbeat:
                        self.rows.heartbeat(config.name, len(self.running))
                        beat = time.monotonic()
                except StorageError as exc:  # the database away past a reconnect, or an outcome unknown: a host
                    log.warning("host %s goes on after: %s", config.name, exc)  # outlives it (its teammates run on)
                    stop.wait(min(config.heartbeat, 0.5))
                    continue
                watcher.wait(min(config.heartbeat, 0.5))
        finally:
            if watcher is not None:
                watcher.close()
            self.stop_all()
            relay.close()

    # -- requests ------------------------------------------------------------------

    def refresh_trust(self) -> None:
        """Re-read the trusted keys if a trust file changed; then check the requests waiting for trust again."""
        assert self.trust is not None
        self.keys, changed = self.trust.current()
        if changed and self.trust.error:
            log.error("%s; trusting no lead key until it is fixed", self.trust.error)
        if changed:
            log.info("trusted lead keys: %s", ", ".join(sorted(self.keys)) or "none")
            self.recheck = self.rows.parked(self.config.name)

    def take_requests(self) -> None:
        """Check the requests waiting for trust again (after a trust change), then take new ones, while there is
        room."""
        while self.recheck and len(self.running) < self.config.max_teammates:
            again = self.rows.retake(self.recheck.pop(0), self.config.name)
            if again is not None:
                self.start(again)
        while len(self.running) < self.config.max_teammates:
            public = [line.partition(".")[2] for line in self.keys.values()]  # trust is by key, not by line
            row = self.rows.take(self.config.name, self.config.labels, public)
            if row is None:
                return
            self.start(row)

    def start(self, row: RequestRow) -> None:
        """Check ``row`` and start its teammate, or refuse it (the reason in its row, and in this host's log)."""
        known = self.running.get((row.team, row.name))
        if known is not None and known.row_id == row.id:  # started here; recording that was cut off: record it
            self.rows.settle(row.id, "started")
            return
        verdict = self._verdict(row)
        if verdict == UNTRUSTED:
            self._wait_for_trust(row)
            return
        if isinstance(verdict, str):
            log.warning("refused spawn request %s for %s@%s: %s", row.id, row.name, row.team, verdict)
            self.rows.settle(row.id, "refused", verdict)
            return
        try:
            member = self._spawn(verdict)
        except (SwarmError, OSError) as exc:
            log.warning("could not start %s@%s: %s", row.name, row.team, exc)
            self.rows.settle(row.id, "refused", f"could not start it: {exc}")
            return
        self.running[(row.team, row.name)] = _Started(row.id, row.team, member, code=verdict.repo is not None,
                                                      pushed=verdict.base)
        self.rows.settle(row.id, "started")
        self.rows.heartbeat(self.config.name, len(self.running))
        log.info("started %s@%s (pid %s)", row.name, row.team, member.pid)

    def _wait_for_trust(self, row: RequestRow) -> None:
        doc = PlacedSpawn.model_validate(row.doc)  # its signature verified: the key's holder asked
        name = self.config.name
        key = fingerprint(doc.lead_verify_key)
        try:
            record_ask(self.home, doc.lead_verify_key, doc.team, doc.lead_machine)
        except SwarmError as exc:  # the request still waits; only the listing lacks it
            log.warning("could not note lead key %s for `swarm host trust`: %s", key, exc)
        log.warning("spawn request %s for %s@%s waits: signed by lead key %s, which this host does not trust; "
                    "to run it, `swarm host trust %s` here", row.id, row.name, row.team, key, key)
        self.rows.park(row.id, f"host {name} does not trust this lead's key yet; on {name} run "
                               f"`swarm host trust {key}`")

    def _verdict(self, row: RequestRow) -> PlacedSpawn | str:
        verdict = check(row.doc, row.signature, set(self.keys))
        if isinstance(verdict, str) and verdict != UNTRUSTED:
            return verdict
        doc = verdict if isinstance(verdict, PlacedSpawn) else PlacedSpawn.model_validate(row.doc)
        if doc.team != row.team or doc.name != row.name or doc.host != row.host or doc.labels != row.labels:
            return "the request's row does not match its signed document"
        if doc.host is not None and doc.host != self.config.name:
            return f"signed for host {doc.host}, not this one"
        if doc.host is None and not set(doc.labels) <= set(self.config.labels):
            return "signed for labels this host does not have"
        if verdict == UNTRUSTED:
            return UNTRUSTED
        if not self.rows.accept_once(doc.request_id, self.config.name):
            return "replayed request (its id was accepted before)"
        if (doc.team, doc.name) in self.running:
            return f"{doc.name} already runs on this host"
        return doc

    def _spawn(self, doc: PlacedSpawn) -> Member:
        record(self.home, doc.team, self.config.url)  # this home's teammate finds the team in the database
        current = TeamStore(self.home).get(doc.team).member(doc.name)
        if current is None or current.epoch != doc.epoch or current.present():
            raise SwarmError(f"the team's entry for {doc.name} is not the one this request placed (superseded)")
        work = work_of(self.home, doc.team, doc.name)
        work.mkdir(parents=True, exist_ok=True)
        if doc.repo is not None and doc.base is not None:
            check_out(self.home, work, doc.repo, doc.team, doc.name, doc.base)
        playbook: Path | None = None
        if doc.playbook_text is not None:
            playbook = work.parent / f"{doc.name}.playbook.toml"
            playbook.write_text(doc.playbook_text, encoding="utf-8")
        backend = self.config.backend if doc.backend == "auto" else doc.backend
        request = SpawnRequest(team=doc.team, name=doc.name, prompt=doc.prompt, backend=backend,
                               agent_type=doc.agent_type, model=doc.model, permission_mode=doc.permission_mode,
                               cwd=work, playbook=playbook, tmux_socket=self.config.tmux_socket,
                               host=self.config.name, epoch=doc.epoch, lead_verify_key=doc.lead_verify_key,
                               remote_repo=doc.repo if doc.base else None, remote_base=doc.base)
        return spawn(self.home, request, self.env)

    # -- watching ------------------------------------------------------------------

    def watch(self) -> None:
        """Record the end of each teammate of this host whose process is gone."""
        machine = Machine(self.env, self.home)
        for key, started in list(self.running.items()):
            team, name = key
            current = TeamStore(self.home).get(team).member(name)
            if current is None or current.proc_token != started.member.proc_token:
                del self.running[key]  # replaced since (placed again, elsewhere)
                continue
            teammate = SwarmTeammate(current, machine)
            if current.status in ("dead", "killed") and not teammate.ended():  # declared dead while this host was
                log.warning("%s@%s was declared %s meanwhile: stopping it", name, team, current.status)  # away
                teammate.stop(STOP_GRACE)
            if current.stop_notice is not None and current.present() and not teammate.ended():
                self._force(team, current, machine)  # the lead's force_stop (``begin_stop``) asks this
            if not teammate.ended():
                if started.code and current.status == "idle":
                    self._push(started, work_of(self.home, team, name))
                continue
            if started.code:
                self._push(started, work_of(self.home, team, name))
            if current.present():
                mark_gone(self.home, team, name, "dead",
                          notice=f"{name} died unexpectedly on host {self.config.name} (process gone)")
            teammate.sweep(STOP_GRACE)
            if started.code:
                clean_work(work_of(self.home, team, name), team, name)
            self.rows.settle(started.row_id, "ended", current.status)
            del self.running[key]

    def _push(self, started: _Started, work: Path) -> None:
        """Push the teammate's branch if it has commits not pushed yet (a failure is logged, tried again later)."""
        try:
            if head(work) != started.pushed:
                started.pushed = push_branch(work, started.team, started.member.name)
                log.info("pushed %s@%s's branch at %s", started.member.name, started.team, started.pushed)
        except SwarmError as exc:
            log.warning("could not push %s@%s's branch: %s", started.member.name, started.team, exc)

    def _force(self, team: str, member: Member, machine: Machine) -> None:
        try:
            SwarmTeammate(member, machine).stop(STOP_GRACE)
        except (SwarmError, OSError) as exc:
            log.warning("could not stop %s@%s: %s", member.name, team, exc)
            return
        mark_gone(self.home, team, member.name, "killed", notice=member.stop_notice)

    def stop_all(self) -> None:
        machine = Machine(self.env, self.home)
        for (team, name), started in list(self.running.items()):
            try:
                current = TeamStore(self.home).get(team).member(name) or started.member
                SwarmTeammate(current, machine).stop(STOP_GRACE)
                if started.code:  # its commits travel; the clone stays for `swarm host clean`
                    self._push(started, work_of(self.home, team, name))
                mark_gone(self.home, team, name, "killed", notice=f"{name} stopped: host {self.config.name} stopped")
                self.rows.settle(started.row_id, "ended", "host stopped")
            except (SwarmError, OSError) as exc:
                log.warning("could not stop %s@%s: %s", name, team, exc)
        self.running.clear()
