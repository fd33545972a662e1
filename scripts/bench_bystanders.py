"""What a message between the lead and one teammate costs the rest of the team: its idle teammates.

    python scripts/bench_bystanders.py [--quick] [--idle N]

Two teams run side by side, each with a real teammate ``mate`` on the
offline scripted model (answers ``ping n`` with SendMessage ``pong n``,
``bench_roundtrip``'s playbook). Team ``busy`` also has ``--idle`` idle
teammates (16; ``--quick`` 8), forked from the same CLI server; team
``alone`` has none. The lead pings ``busy``'s mate and ``alone``'s mate in
turn, batch by batch, so a load that comes and goes falls on both.

Figures:

- round trip p50 / p99 with the idle teammates beside it, against the same
  round trip in the team with none (baseline): goal at most 1.2x;
- the idle teammates' wake-ups per round trip: the voluntary context
  switches of their processes (every thread) while ``busy``'s mate answers,
  less those of an equal window with no traffic (baseline column); each
  round trip writes four inbox files (ping, pong, idle notification, prune)
  beside theirs. Goal: none (at most 0.1 per teammate);
- the idle teammates' CPU per round trip, all of them, likewise set against
  the quiet window.

Exits 0 whatever the figures (benchmarks report, tests check).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import psutil
from bench_roundtrip import PLAYBOOK, Trips, _round_trips
from benchtable import Figure, print_table, stop_cli_server

from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.teams import TeamStore
from swarm.runtime.shutdown import shutdown
from swarm.runtime.spawn import SpawnRequest, spawn, wait_joined

BATCHES = 5


def _processes(home: Home, team: str, names: list[str]) -> list[psutil.Process]:
    """The teammates' own processes (a forked teammate's worker, not its launcher)."""
    file = TeamStore(home).get(team)
    found = []
    for name in names:
        member = file.member(name)
        pid = member.worker_pid or member.pid if member is not None else None
        if pid:
            found.append(psutil.Process(pid))
    return found


def _switches(processes: list[psutil.Process]) -> int:
    """Voluntary context switches of every thread of ``processes`` so far."""
    total = 0
    for process in processes:
        for task in Path(f"/proc/{process.pid}/task").iterdir():
            try:
                status = (task / "status").read_text()
            except OSError:
                continue
            total += next(int(line.split()[1]) for line in status.splitlines()
                          if line.startswith("voluntary_ctxt_switches"))
    return total


def _cpu_ms(processes: list[psutil.Process]) -> float:
    return sum(t.user + t.system for t in (p.cpu_times() for p in processes)) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer round trips, fewer idle teammates")
    parser.add_argument("--idle", type=int, default=0, help="idle teammates beside the busy one (16; quick: 8)")
    args = parser.parse_args()
    count = 50 if args.quick else 200
    idle = args.idle or (8 if args.quick else 16)
    root = Path(tempfile.mkdtemp(prefix="swarm-bench-bystanders-"))
    try:
        home = Home(root / "home")
        book = root / "ping.toml"
        book.write_text(PLAYBOOK)
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
        env["SWARM_HOME"] = str(home.root)
        bystanders = [f"idle-{n}" for n in range(idle)]
        teams = {"busy": ["mate", *bystanders], "alone": ["mate"]}
        for team, names in teams.items():
            TeamStore(home).create(team)
            work = root / team
            work.mkdir()
            for name in names:
                spawn(home, SpawnRequest(team=team, name=name, prompt="hello", cwd=work, backend="subprocess",
                                         playbook=book), env)
        try:
            for team, names in teams.items():
                wait_joined(home, team, names)
            mailboxes = {team: Mailbox(home, team) for team in teams}
            for team in teams:
                _round_trips(mailboxes[team], "mate", 5, start=100_000)  # imports done, first turn behind it
            others = _processes(home, "busy", bystanders)
            time.sleep(0.5)  # the idle notifications of their first turns are read; they are asleep
            quiet_started, switches, cpu = time.monotonic(), _switches(others), _cpu_ms(others)
            time.sleep(1.0)
            quiet = (time.monotonic() - quiet_started, _switches(others) - switches, _cpu_ms(others) - cpu)
            beside, alone = Trips(), Trips()
            busy_s, busy_switches, busy_cpu = 0.0, 0, 0.0
            size = count // BATCHES
            for batch in range(BATCHES):
                for team in ("busy", "alone")[::1 if batch % 2 else -1]:  # neither always first
                    if team == "busy":
                        started, switches, cpu = time.monotonic(), _switches(others), _cpu_ms(others)
                    trips = _round_trips(mailboxes[team], "mate", size, start=batch * size)
                    if team == "busy":
                        busy_s += time.monotonic() - started
                        busy_switches += _switches(others) - switches
                        busy_cpu += _cpu_ms(others) - cpu
                        beside.add(trips)
                    else:
                        alone.add(trips)
        finally:
            for team, names in teams.items():
                shutdown(home, team, names, env, timeout=10)
    finally:
        stop_cli_server(root / "home")
        shutil.rmtree(root, ignore_errors=True)
    quiet_s, quiet_switches, quiet_cpu = quiet
    per_trip = 1 / count
    wakes = (busy_switches - quiet_switches * busy_s / quiet_s) * per_trip
    quiet_wakes = quiet_switches * busy_s / quiet_s * per_trip
    print_table(f"bench_bystanders ({'--quick' if args.quick else 'full'}): a round trip beside {idle} idle teammates", [
        Figure(f"round trip p50 beside {idle} idle teammates", "<= 1.2x alone", beside.p50(), alone.p50(), " ms",
               met=lambda v: v <= 1.2 * alone.p50(), note="baseline: the same round trip in a team of one"),
        Figure(f"round trip p99 beside {idle} idle teammates", "<= 2x alone", beside.p99(), alone.p99(), " ms",
               met=lambda v: v <= 2 * alone.p99()),
        Figure(f"the {idle} idle teammates' wake-ups per round trip", f"<= {0.1 * idle:g}", wakes, quiet_wakes, "",
               met=lambda v: v <= 0.1 * idle,
               note="voluntary context switches of all their threads, less the quiet window's (baseline: the "
                    "quiet window's, over as long); four inbox writes per round trip"),
        Figure(f"the {idle} idle teammates' CPU per round trip", "", (busy_cpu - quiet_cpu * busy_s / quiet_s)
               * per_trip, quiet_cpu * busy_s / quiet_s * per_trip, " ms", digits=3,
               note="all of them, less the quiet window's (baseline: the quiet window's, over as long)"),
    ], notes=[f"{count} round trips to each team's mate, in {BATCHES} batches taken in turn; p50 = median of "
              f"{BATCHES} batch medians; quiet window {quiet_s:.1f} s",
              f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores",
              f"median batch p50s: beside {statistics.median(beside.total):.2f} ms, alone "
              f"{statistics.median(alone.total):.2f} ms"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
