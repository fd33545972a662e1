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

Across a veth link: with that throwaway cluster and root, the same figures are
measured once more with every client process (sender, receiver, writers) in a
network namespace reaching the server over a veth pair (``tests/fakes/netns.py``),
as a teammate on another host does; the ``(veth)`` rows. Without root (or with
``--postgres``) those rows say ``n/a`` and why. Exits 0 whatever the figures.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
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

SENDER = SETUP + """
print("ready", flush=True)
for line in sys.stdin:
    began = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    mb.send("bob", line.strip(), sender="team-lead")
    print(began, flush=True)
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


def child(code: str, env: dict[str, str], *args: object, wrap: list[str] | None = None) -> subprocess.Popen[str]:
    """A Python child running ``code``; ``wrap`` prefixes its command (``ip netns exec NAME``)."""
    return subprocess.Popen([*(wrap or []), sys.executable, "-c", code, *map(str, args)], env=env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def line(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    text = proc.stdout.readline()
    if not text:
        raise SystemExit(f"a child exited early (rc {proc.wait()})")
    return text.strip()


def latency(env: dict[str, str], count: int, wrap: list[str] | None = None) -> list[float]:
    """Milliseconds from send to the receiver having it, one message at a time (sender and receiver: children)."""
    receiver = child(RECEIVER, env, count, wrap=wrap)
    sender = child(SENDER, env, wrap=wrap)
    assert line(receiver) == "ready" and line(sender) == "ready"
    assert sender.stdin is not None
    samples = []
    for i in range(count):  # the first is not counted: the first send pays for connecting
        sender.stdin.write(f"m{i}\n")
        sender.stdin.flush()
        began = int(line(sender))
        got = json.loads(line(receiver))
        if i:
            samples.append((got["at"] - began) / 1e6)
    sender.stdin.close()
    for proc in (receiver, sender):
        proc.wait(30)
    return samples


def throughput(env: dict[str, str], per_writer: int, wrap: list[str] | None = None) -> float:
    """Messages per second, 8 writers into one inbox with a receiver taking them."""
    total = WRITERS * per_writer
    receiver = child(RECEIVER, env, total, wrap=wrap)
    writers = [child(WRITER, env, per_writer, f"w{n}", wrap=wrap) for n in range(WRITERS)]
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

    with contextlib.ExitStack() as stack:
        url, veth = stack.enter_context(servers(args.postgres))
        from tests.fakes.pg_cluster import fresh_schema

        results: dict[str, tuple[list[float], float]] = {}
        runs: list[tuple[str, str | None, list[str] | None]] = [("files", None, None), ("postgresql", url, None)]
        if not isinstance(veth, str):
            runs.append(("veth", veth[0], veth[1]))
        with tempfile.TemporaryDirectory(prefix="bench-warm-") as scratch:  # not counted: a fresh server's first
            latency(make_team(Path(scratch) / "lat", fresh_schema(url, "bench")), 50)  # minutes are slower (it
            throughput(make_team(Path(scratch) / "thr", fresh_schema(url, "bench")), 25)  # would flatter the 2nd)
        for name, store, wrap in runs:
            with tempfile.TemporaryDirectory(prefix=f"bench-{name}-") as scratch:
                env = make_team(Path(scratch) / "lat", fresh_schema(store, "bench") if store else None)
                samples = latency(env, count, wrap)
                env = make_team(Path(scratch) / "thr", fresh_schema(store, "bench") if store else None)
                rate = throughput(env, per_writer, wrap)
                results[name] = (samples, rate)
    files, pg = results["files"], results["postgresql"]
    over = results.get("veth")
    figures = []
    for label, pick in (("delivery p50", lambda s: percentile(s, 0.5)), ("delivery p99", lambda s: percentile(s, 0.99)),
                        ("delivery mean", statistics.mean)):
        figures.append(Figure(label, "", pick(pg[0]), pick(files[0]), " ms"))
        figures.append(Figure(f"{label} (veth)", "", pick(over[0]) if over else None, pick(files[0]), " ms"))
    figures.append(Figure(f"{WRITERS}-writer throughput", "", pg[1], files[1], " msg/s", digits=0))
    figures.append(Figure(f"{WRITERS}-writer throughput (veth)", "", over[1] if over else None, files[1], " msg/s",
                          digits=0))
    print_table("team store: PostgreSQL (swarm column) vs files (baseline column)", figures, [
        f"latency: {count - 1} messages one at a time, sender and receiver in two processes, the receiver waiting "
        "as a teammate does",
        f"throughput: {WRITERS} writer processes x {per_writer} messages into one inbox, one receiver process",
        "PostgreSQL on loopback TCP, synchronous_commit on; files with fsync on every write",
        "(veth): the same clients in a network namespace, reaching the server over a veth pair" if over else
        f"(veth) rows n/a: {veth}",
    ])


@contextlib.contextmanager
def servers(given: str | None) -> Iterator[tuple[str, tuple[str, list[str]] | str]]:
    """The loopback URL, and the URL and command prefix for clients across a veth link (or why there are none)."""
    from tests.fakes import netns, pg_cluster

    if given is not None:
        yield given, "--postgres names a server this run does not start, so it cannot listen on a veth link"
        return
    why = netns.unavailable()
    if why is not None:
        cluster, url = pg_cluster.start()
        try:
            yield url, why
        finally:
            pg_cluster.stop(cluster)
        return
    with netns.Namespaces(1) as nets:
        cluster, url = pg_cluster.start(listen=(nets.server,), allow=nets.subnet)
        try:
            yield url, (url.replace("127.0.0.1", nets.server), nets.command(nets.boxes[0], []))
        finally:
            pg_cluster.stop(cluster)


if __name__ == "__main__":
    main()
