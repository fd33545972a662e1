#!/usr/bin/env python3
"""Benchmark a team's store: files against PostgreSQL, side by side in one run.

    .venv/bin/python scripts/bench_store.py [--quick] [--postgres URL]

For each store, a team ``bench`` with one receiver:

- delivery latency: the test process sends one message at a time; a receiver
  process, blocked waiting on its inbox as a teammate is (``watcher`` +
  ``pending``, then ``acknowledge``), reports the moment it has it
  (CLOCK_MONOTONIC is one clock for every process): p50 and p99;
- throughput: 8 writer processes send ``PER_WRITER`` messages each into the
  one inbox while a receiver process takes them; messages per second from
  the first send to the last one received, every id counted once.

PostgreSQL is the server at ``--postgres`` (or ``$SWARM_BENCH_POSTGRES``), on
loopback; without one, a throwaway cluster is started for the run
(``tests/fakes/pg_cluster.py``), with the server's defaults
(synchronous_commit on, fsync on). The ``swarm`` column is PostgreSQL, the
``baseline`` column the file store, so ``ratio`` reads "PostgreSQL / files".
Exits 0 whatever the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]

from benchtable import Figure, print_table  # noqa: E402

WRITERS = 8

SETUP = """
import json, os, sys, time
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.protocol import build_models
build_models()
home = Home.from_env()
mb = Mailbox(home, "bench")
"""

RECEIVER = SETUP + """
want = int(sys.argv[1])
watcher = mb.watcher("bob")
print("ready", flush=True)
got = 0
while got < want:
    entries = mb.pending("bob")
    now = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    if entries:
        mb.acknowledge("bob", [e.msg_id for e in entries])
        got += len(entries)
        print(json.dumps({"got": got, "at": now}), flush=True)
    else:
        watcher.wait(1.0)
"""

WRITER = SETUP + """
n = int(sys.argv[1])
print("ready", flush=True)
sys.stdin.readline()
for i in range(n):
    mb.send("bob", f"{sys.argv[2]}-{i}", sender="team-lead")
print("done", flush=True)
"""


def make_team(root: Path, store: str | None) -> dict[str, str]:
    from swarm.core.home import Home
    from swarm.core.protocol import Member
    from swarm.core.teams import TeamStore

    teams = TeamStore(Home(root))
    teams.create("bench", store=store)
    teams.add_member("bench", Member(agent_id="bob@bench", name="bob", is_active=True))
    return dict(os.environ, SWARM_HOME=str(root), PYTHONPATH=str(ROOT))


def child(code: str, env: dict[str, str], *args: object) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", code, *map(str, args)], env=env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def line(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    text = proc.stdout.readline()
    if not text:
        raise SystemExit(f"a child exited early (rc {proc.wait()})")
    return text.strip()


def latency(env: dict[str, str], count: int) -> list[float]:
    """Milliseconds from send to the receiver having it, one message at a time."""
    from swarm.core.home import Home
    from swarm.core.mailbox import Mailbox

    receiver = child(RECEIVER, env, count)
    assert line(receiver) == "ready"
    mailbox = Mailbox(Home(Path(env["SWARM_HOME"])), "bench")
    mailbox.send("bob", "warm-up", sender="team-lead")  # not counted: the first send pays for connecting
    json.loads(line(receiver))  # (the receiver stops at ``count`` messages; the warm-up is one of them)
    samples = []
    for i in range(count - 1):
        began = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        mailbox.send("bob", f"m{i}", sender="team-lead")
        got = json.loads(line(receiver))
        samples.append((got["at"] - began) / 1e6)
    receiver.wait(30)
    return samples


def throughput(env: dict[str, str], per_writer: int) -> float:
    """Messages per second, 8 writers into one inbox with a receiver taking them."""
    total = WRITERS * per_writer
    receiver = child(RECEIVER, env, total)
    writers = [child(WRITER, env, per_writer, f"w{n}") for n in range(WRITERS)]
    for proc in (receiver, *writers):
        assert line(proc) == "ready"
    began = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    for proc in writers:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    last = 0
    while True:
        got = json.loads(line(receiver))
        if got["got"] >= total:
            last = got["at"]
            break
    for proc in (receiver, *writers):
        proc.wait(60)
    return total / ((last - began) / 1e9)


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--postgres", default=os.environ.get("SWARM_BENCH_POSTGRES"))
    args = parser.parse_args()
    count, per_writer = (100, 50) if args.quick else (400, 250)

    cluster = None
    url = args.postgres
    if url is None:
        from tests.fakes import pg_cluster

        cluster, url = pg_cluster.start()
    try:
        from tests.fakes.pg_cluster import fresh_schema

        results: dict[str, tuple[list[float], float]] = {}
        for name, store in (("files", None), ("postgresql", "pg")):
            with tempfile.TemporaryDirectory(prefix=f"bench-{name}-") as scratch:
                env = make_team(Path(scratch) / "lat", fresh_schema(url, "bench") if store else None)
                samples = latency(env, count)
                env = make_team(Path(scratch) / "thr", fresh_schema(url, "bench") if store else None)
                rate = throughput(env, per_writer)
                results[name] = (samples, rate)
    finally:
        if cluster is not None:
            from tests.fakes import pg_cluster

            pg_cluster.stop(cluster)
    files, pg = results["files"], results["postgresql"]
    figures = [
        Figure("delivery p50", "", percentile(pg[0], 0.5), percentile(files[0], 0.5), " ms"),
        Figure("delivery p99", "", percentile(pg[0], 0.99), percentile(files[0], 0.99), " ms"),
        Figure("delivery mean", "", statistics.mean(pg[0]), statistics.mean(files[0]), " ms"),
        Figure(f"{WRITERS}-writer throughput", "", pg[1], files[1], " msg/s", digits=0),
    ]
    print_table("team store: PostgreSQL (swarm column) vs files (baseline column)", figures, [
        f"latency: {count - 1} messages one at a time, receiver in another process waiting as a teammate does",
        f"throughput: {WRITERS} writer processes x {per_writer} messages into one inbox, one receiver process",
        "PostgreSQL on loopback TCP, synchronous_commit on; files with fsync on every write",
    ])


if __name__ == "__main__":
    main()
