"""Round trip through a real teammate: the lead sends, the teammate's model answers with SendMessage.

    python scripts/bench_roundtrip.py [--quick]

What is timed is the real path a message takes: ``swarm send``'s mailbox
write, the teammate process waking on the inbox event, its delivery (the
durable transcript record, the prune), its status updates, a turn of the agent
loop on the offline scripted model, SendMessage into the lead's inbox, and the
lead waking on that. Baseline, in the same run: a bare Python process that
only waits, takes and answers through the same ``Mailbox`` (no agent loop, no
transcript, no status): the floor the teammate's own work sits on.

Also measured: the same round trip after the teammate's conversation has
grown by ``--grow`` turns (cost should stay flat), and the teammate's RSS.
Prints a table; exits 0 whatever the figures (benchmarks report, tests check).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.names import LEAD_NAME
from swarm.core.protocol import Member
from swarm.core.teams import TeamStore
from swarm.runtime.shutdown import shutdown
from swarm.runtime.spawn import SpawnRequest, spawn, wait_joined

PLAYBOOK = r"""
[[rules]]
match = 'ping (?P<n>\d+)'
[[rules.steps]]
tool_calls = [{ name = "SendMessage", input = { to = "team-lead", message = "pong {n}" } }]
[[rules.steps]]
text = "answered {n}"
"""

BARE = r"""
import sys
from pathlib import Path
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
mailbox = Mailbox(Home(Path(sys.argv[1])), sys.argv[2])
watcher = mailbox.watcher("bare")
while True:
    if not mailbox.pending("bare"):
        watcher.wait(3600)
        continue
    for entry in mailbox.take("bare"):
        if entry.text == "stop":
            sys.exit(0)
        mailbox.send("team-lead", entry.text.replace("ping", "pong"), sender="bare")
"""


def _round_trips(mailbox: Mailbox, name: str, count: int, start: int = 0) -> list[float]:
    """Milliseconds from the lead's send to the answer landing in the lead's inbox, ``count`` times."""
    watcher = mailbox.watcher(LEAD_NAME)
    times = []
    try:
        for n in range(start, start + count):
            began = time.perf_counter()
            mailbox.send(name, f"ping {n}", sender=LEAD_NAME)
            while not any(e.text == f"pong {n}" for e in mailbox.read(LEAD_NAME)):
                watcher.wait(5.0)
            times.append((time.perf_counter() - began) * 1000)
            mailbox.take(LEAD_NAME)
    finally:
        watcher.close()
    return times


def _row(label: str, times: list[float]) -> str:
    ordered = sorted(times)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"{label:<44} | {statistics.median(times):8.2f} | {p99:8.2f} | {len(times):5d}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer round trips")
    parser.add_argument("--grow", type=int, default=0, help="turns of conversation before the late measurement")
    args = parser.parse_args()
    count = 40 if args.quick else 200
    grow = args.grow or (200 if args.quick else 2000)
    root = Path(tempfile.mkdtemp(prefix="swarm-bench-rt-"))
    home = Home(root / "home")
    work = root / "work"
    work.mkdir()
    book = root / "ping.toml"
    book.write_text(PLAYBOOK)
    TeamStore(home).create("rt")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env["SWARM_HOME"] = str(home.root)
    mailbox = Mailbox(home, "rt")
    rows = []
    member = spawn(home, SpawnRequest(team="rt", name="mate", prompt="hello", cwd=work, backend="subprocess",
                                      playbook=book), env)
    try:
        wait_joined(home, "rt", ["mate"])
        _round_trips(mailbox, "mate", 5, start=100_000)  # warm: imports done, first turn behind it
        rows.append(_row("teammate round trip, early (ms)", _round_trips(mailbox, "mate", count)))
        for n in range(0, grow, 50):
            _round_trips(mailbox, "mate", 50, start=200_000 + n)
        rows.append(_row(f"teammate round trip after {grow} more turns (ms)",
                         _round_trips(mailbox, "mate", count, start=300_000)))
        rss = psutil.Process(member.pid or 0).memory_info().rss / 2**20
    finally:
        shutdown(home, "rt", None, env, timeout=10)
    TeamStore(home).add_member("rt", Member(agent_id="bare@rt", name="bare", is_active=True))
    bare = subprocess.Popen([sys.executable, "-c", BARE, str(home.root), "rt"], env=env)
    try:
        _round_trips(mailbox, "bare", 5, start=100_000)
        rows.append(_row("baseline: bare mailbox echo process (ms)", _round_trips(mailbox, "bare", count)))
    finally:
        mailbox.send("bare", "stop", sender=LEAD_NAME)
        bare.wait(10)
    print(f"\n{'figure':<44} | {'p50':>8} | {'p99':>8} | {'n':>5}")
    print("-" * 74)
    for row in rows:
        print(row)
    print(f"teammate RSS after {grow + 2 * count} turns: {rss:.1f} MiB")
    print(f"load average: {os.getloadavg()[0]:.2f} (2 cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
