"""The commands: `swarm host key` (the line a host trusts), `swarm host serve`, `swarm spawn --host`, `swarm hosts`,
`swarm status` with its host column — and the database password shown by none of them."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path

from swarm.core.mailbox import Mailbox
from swarm.core.signing import verify_key_arg
from tests.backends.helpers import retry_until
from tests.forked import run_swarm
from tests.runtime.hosts.conftest import SECRET, HostProc, Site
from tests.teammate.conftest import PLAYBOOK


def _swarm(site: Site, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SWARM_HOME": str(site.lead.root)}
    env.pop("SWARM_TEAM", None)
    return run_swarm(args, timeout=60, env=env, cwd=site.tmp)


def test_spawn_on_a_host_from_the_command_line(site: Site, start_host: Callable[..., HostProc]) -> None:
    key = _swarm(site, "host", "key", "--team", "t")
    assert key.returncode == 0 and key.stdout.strip() == verify_key_arg(site.lead, "t")
    host = start_host("h1", "--labels", "gpu", "--max-teammates", "3")
    book = site.tmp / "book.toml"
    book.write_text(PLAYBOOK)

    done = _swarm(site, "spawn", "ann", "--team", "t", "--host", "h1", "--prompt", "ping first", "--playbook", str(book))
    assert done.returncode == 0, done.stderr
    assert "on host h1" in done.stdout
    retry_until(lambda: "pong first from ann" in [e.text for e in Mailbox(site.lead, "t").read("team-lead")], 20,
                what="the pong")

    listed = _swarm(site, "hosts", "--team", "t", "--json")
    [row] = json.loads(listed.stdout)
    assert (row["name"], row["labels"], row["max_teammates"], row["running"]) == ("h1", ["gpu"], 3, 1)
    assert row["heartbeat_age_s"] < 5
    table = _swarm(site, "hosts", "--team", "t").stdout
    assert "h1" in table and "1/3" in table
    status = _swarm(site, "status", "--team", "t").stdout
    [line] = [x for x in status.splitlines() if x.startswith("ann")]
    assert "h1" in line.split() and "idle" in line.split()

    shown = host.log.read_text() + done.stdout + done.stderr + listed.stdout + status
    assert "host h1 serving postgresql://swarm:***@" in host.log.read_text() or SECRET not in site.url
    assert SECRET not in shown


def test_a_host_whose_database_does_not_answer_says_so_and_never_claims_to_serve(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a loopback port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "SWARM_HOME": str(tmp_path / "home")}
    done = run_swarm(["host", "serve", "--store", f"postgresql://swarm:{SECRET}@127.0.0.1:{port}/x", "--name", "h1"],
                     timeout=60, env=env, cwd=tmp_path)
    assert done.returncode == 1 and "serving" not in done.stdout
    assert "could not connect to the database" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert SECRET not in done.stdout + done.stderr
