"""Two checkouts' teammates side by side: which one acts sooner, measured round by round in the same minutes.

    .venv/bin/python scripts/bench_ab.py A_DIR B_DIR [--rounds 30] [--pings 50]

``A_DIR`` and ``B_DIR`` are checkouts of swarm (say, a worktree at a change's
parent and one at the change). One teammate runs each checkout's code (its
``PYTHONPATH``; no CLI server, ``SWARM_CLI_SERVER=0``, so neither is forked
from a server that holds this process's code); the lead (this process) and the
bare echo run this checkout's. The lead pings A, B and the echo in turn,
``--pings`` back to back each, for ``--rounds`` rounds, the order rotating so
none always goes first (``bench_roundtrip``'s round trips and its "acts":
from the lead's send to the answer's stamp).

Why paired rounds: on a shared 2-core host the load moves by more within a
minute than most changes move acts, so two runs of ``bench_roundtrip`` minutes
apart cannot tell a 0.1 ms change from the weather. Here both teammates see the
same minutes, and what is printed is the difference B - A round by round: its
median and in how many rounds B was faster. The CPU each teammate (with its
delivery worker) spent per ping is taken over all rounds (the kernel counts it
in 10 ms ticks: too coarse for one round). Run it twice with A and B swapped: a
real difference keeps its sign. Exits 0 whatever the figures.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import psutil
from bench_roundtrip import BARE, _round_trips, ping_team
from benchtable import stop_cli_server

from swarm.core.mailbox import Mailbox
from swarm.core.names import LEAD_NAME
from swarm.core.teams import TeamStore
from swarm.runtime.shutdown import shutdown
from swarm.runtime.spawn import SpawnRequest, spawn, wait_joined

WARM = 20
"""Untimed round trips to each answerer first: imports done, the first turn behind it."""


def _checkout(text: str) -> Path:
    root = Path(text).resolve()
    if not (root / "swarm" / "__init__.py").is_file():
        raise SystemExit(f"bench_ab: {root} is not a swarm checkout (no swarm/__init__.py in it)")
    return root


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a", type=_checkout, help="checkout whose code teammate A runs")
    parser.add_argument("b", type=_checkout, help="checkout whose code teammate B runs")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--pings", type=int, default=50, help="back-to-back pings per answerer per round")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="swarm-bench-ab-"))
    try:
        scratch = ping_team(root, "ab", ("bare",))
        home, work, book = scratch.home, scratch.work, scratch.book
        env = dict(scratch.env, SWARM_CLI_SERVER="0")
        mailbox = Mailbox(home, "ab")
        for name, checkout in (("a", args.a), ("b", args.b)):
            spawn(home, SpawnRequest(team="ab", name=name, prompt="hello", cwd=work, backend="subprocess",
                                     playbook=book), dict(env, PYTHONPATH=str(checkout)))
        bare = subprocess.Popen([sys.executable, "-c", BARE, str(home.root), "ab"], env=env)
        acts: dict[str, list[float]] = {"a": [], "b": [], "bare": []}
        cpu: dict[str, list[float]] = {"a": [], "b": []}
        try:
            wait_joined(home, "ab", ["a", "b"])
            for warm in ("a", "b", "bare"):
                _round_trips(mailbox, warm, WARM, start=100_000)
            team = TeamStore(home).get("ab")
            procs = {name: psutil.Process(member.worker_pid or member.pid) for name in ("a", "b")
                     if (member := team.member(name)) is not None and (member.worker_pid or member.pid)}
            for n in range(args.rounds):
                order = ["a", "b", "bare"]
                for which in order[n % 3:] + order[:n % 3]:
                    trips = _round_trips(mailbox, which, args.pings, start=n * args.pings, answerer=procs.get(which))
                    acts[which].append(statistics.median(trips.acted))
                    if which in cpu:
                        cpu[which].append(trips.cpu_per_trip)
        finally:
            mailbox.send("bare", "stop", sender=LEAD_NAME)
            try:
                bare.wait(10)
            except subprocess.TimeoutExpired:
                bare.kill()
                bare.wait()
            shutdown(home, "ab", ["a", "b"], env, timeout=10)
    finally:
        stop_cli_server(root / "home")
        shutil.rmtree(root, ignore_errors=True)
    _report(args, acts, cpu)
    return 0


def _report(args: argparse.Namespace, acts: dict[str, list[float]], cpu: dict[str, list[float]]) -> None:
    med = {name: statistics.median(values) for name, values in acts.items()}
    diffs = [b - a for a, b in zip(acts["a"], acts["b"], strict=True)]
    print(f"A = {args.a}\nB = {args.b}\n{args.rounds} rounds of {args.pings} back-to-back pings each; "
          f"load average at the end {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    print(f"acts p50 (median of round medians): A {med['a']:.3f} ms ({med['a'] / med['bare']:.2f}x echo), "
          f"B {med['b']:.3f} ms ({med['b'] / med['bare']:.2f}x echo), echo {med['bare']:.3f} ms")
    print(f"B - A, round by round: acts {statistics.median(diffs):+.3f} ms (B sooner in "
          f"{sum(d < 0 for d in diffs)} of {len(diffs)} rounds)")
    per_ping = {name: statistics.mean(values) for name, values in cpu.items()}  # equal rounds: the mean of rounds
    print(f"CPU per ping over all rounds (teammate and its delivery worker): A {per_ping['a']:.2f} ms, "
          f"B {per_ping['b']:.2f} ms, B - A {per_ping['b'] - per_ping['a']:+.2f} ms")


if __name__ == "__main__":
    sys.exit(main())
