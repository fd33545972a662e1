"""Two homes on one machine — the lead's and a host's — meeting only in one PostgreSQL schema; a real
`swarm host serve` subprocess in the host's home."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from swarm.backends.procs import kill_tree
from swarm.core.home import Home
from swarm.core.signing import verify_key_arg
from swarm.core.store import database
from swarm.core.store.postgres.hosts import HostRows
from swarm.core.teams import TeamStore
from tests.backends.helpers import retry_until
from tests.fakes import pg_cluster
from tests.forked import SWARM_EXE

SECRET = "hunter2-host-pw"
"""A password in the team's URL (the test cluster trusts loopback, so it is not checked): never shown."""


@dataclass
class HostProc:
    name: str
    home: Home
    proc: subprocess.Popen[bytes]
    log: Path

    def teammate_procs(self) -> list[psutil.Process]:
        try:
            return psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []

    def live_pids(self) -> list[int]:
        """Processes the host started that still run (not zombies waiting for it)."""
        live = []
        for proc in self.teammate_procs():
            try:
                if proc.status() != psutil.STATUS_ZOMBIE:
                    live.append(proc.pid)
            except psutil.NoSuchProcess:
                pass
        return live


@dataclass
class Site:
    url: str
    lead: Home
    team: str
    trust_file: Path
    tmp: Path

    @property
    def rows(self) -> HostRows:
        return HostRows(database(self.lead, self.url))


@pytest.fixture
def site(tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> Site:
    """A database team ``t`` led from ``tmp/lead``; its lead key written to a trust file a host is given.

    The lead works in ``tmp`` (not in this checkout, whose ``origin`` a placement would push to)."""
    monkeypatch.chdir(tmp_path)
    url = pg_cluster.fresh_schema(postgres_url).replace("postgresql://swarm@", f"postgresql://swarm:{SECRET}@")
    lead = Home(tmp_path / "lead")
    TeamStore(lead).create("t", store=url)
    trust = tmp_path / "trusted.keys"
    trust.write_text(verify_key_arg(lead, "t") + "\n")
    return Site(url=url, lead=lead, team="t", trust_file=trust, tmp=tmp_path)


@pytest.fixture
def start_host(site: Site) -> Iterator[Callable[..., HostProc]]:
    """Start `swarm host serve` in a home of its own (stopped, with everything it started, at teardown)."""
    started: list[HostProc] = []

    def start(name: str = "h1", *extra: str, trust_key: bool = True) -> HostProc:
        home = Home(site.tmp / f"host-{name}")
        log = site.tmp / f"host-{name}.log"
        env = {**os.environ, "SWARM_HOME": str(home.root)}
        env.pop("SWARM_TEAM", None)
        with open(log, "wb") as out:
            proc = subprocess.Popen([str(SWARM_EXE), "-v", "host", "serve", "--store", site.url, "--name", name,
                                     *(["--trust-key", str(site.trust_file)] if trust_key else []),
                                     "--heartbeat", "0.5", *extra],
                                    env=env, stdout=out, stderr=subprocess.STDOUT, cwd=site.tmp)
        host = HostProc(name, home, proc, log)
        started.append(host)
        retry_until(lambda: name in [h.name for h in site.rows.hosts()], 20, what=f"host {name} registered")
        return host

    yield start
    for host in started:
        if host.proc.poll() is None:
            host.proc.send_signal(signal.SIGCONT)
            host.proc.terminate()
            try:
                host.proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
        kill_tree(host.proc.pid, 1.0)
        for child in host.teammate_procs():
            kill_tree(child.pid, 1.0)
