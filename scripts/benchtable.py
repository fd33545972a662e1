"""The table every benchmark in ``scripts/`` prints: figure / goal / swarm / baseline / ratio; run, every goal.

    .venv/bin/python scripts/benchtable.py [--quick] [--only NAME,...]

Run as a script, it runs the benchmarks one after another (each in its own
process, ``BENCHES``) and prints one table of every figure that has a goal
(issue 34's table: ratios to a baseline measured in the same run), with
``MISSED`` where a goal is not met, and the load average before and after.
``--quick`` (under ~3 minutes on 2 cores) takes fewer samples and smaller
teams; the full run takes the issue's sizes (16 and 64 teammates).
Each benchmark's own table is printed as it finishes.

Benchmarks report, tests check behaviour: a missed goal is marked ``MISSED``
in the table and the script still exits 0. Figures are medians of several
batches (``median_of``), never the best batch, so a quiet moment does not
flatter swarm. The machine's load average is printed with the table, since
every figure here depends on what else the cores are doing.

Also the one place the benchmarks start, wait for and stop a scratch home's
CLI server (``start_cli_server``, ``wait_for_cli_server``, ``stop_cli_server``).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from swarm.cli.entry import server_pid
from swarm.core.home import Home


@dataclass(frozen=True)
class Figure:
    """One row: ``swarm`` against ``baseline`` (``None`` when there is none), judged by ``met``."""

    name: str
    goal: str
    swarm: float | None
    baseline: float | None = None
    unit: str = ""
    digits: int = 2
    met: Callable[[float], bool] | None = None
    """Whether ``swarm`` meets the goal; None: a figure with no goal of its own."""
    note: str = ""
    floor: float | None = None
    """Where a goal cannot be met on this machine: the best the figure can be, measured in the same run (its
    ratio to ``baseline`` beside it); ``floor_why`` says what was measured and why it bounds the figure. The
    verdict is still against the goal."""
    floor_why: str = ""

    def cells(self) -> list[str]:
        swarm = "n/a" if self.swarm is None else f"{self.swarm:,.{self.digits}f}{self.unit}"
        baseline = "" if self.baseline is None else f"{self.baseline:,.{self.digits}f}{self.unit}"
        ratio = ""
        if self.swarm is not None and self.baseline:
            ratio = f"{self.swarm / self.baseline:.2f}x"
        floor = ""
        if self.floor is not None:
            floor = f"{self.floor:,.{self.digits}f}{self.unit}"
            if self.baseline:
                floor += f" = {self.floor / self.baseline:.2f}x"
        verdict = ""
        if self.met is not None:
            verdict = "MISSED" if self.swarm is None or not self.met(self.swarm) else "met"
        return [self.name, self.goal, swarm, baseline, ratio, floor, verdict]


HEADERS = ["figure", "goal", "swarm", "baseline", "ratio", "bound (same run)", ""]


def print_table(title: str, figures: Sequence[Figure], notes: Sequence[str] = ()) -> None:
    """The table, then the load average and ``notes`` (what each baseline is, how the medians were taken)."""
    rows = [HEADERS, *(f.cells() for f in figures)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADERS))]
    print(f"\n{title}")
    for n, row in enumerate(rows):
        print("| " + " | ".join(cell.ljust(w) if i < 2 else cell.rjust(w)
                                for i, (cell, w) in enumerate(zip(row, widths, strict=True))) + " |")
        if n == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    load = os.getloadavg()
    print(f"load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores")
    for figure in figures:
        if figure.note:
            print(f"- {figure.name}: {figure.note}")
        if figure.floor_why:
            print(f"- floor of {figure.name}: {figure.floor_why}")
    for note in notes:
        print(f"- {note}")
    missed = [f.name for f in figures if f.cells()[-1] == "MISSED"]
    print("goals missed: " + (", ".join(missed) if missed else "none"))
    _record_goals(title, figures)


GOALS_FILE = "SWARM_BENCH_GOALS"
"""Set by ``benchtable.py`` for the benchmarks it runs: the file each appends its goal rows to (JSON lines)."""


def _record_goals(title: str, figures: Sequence[Figure]) -> None:
    path = os.environ.get(GOALS_FILE)
    if not path:
        return
    with open(path, "a", encoding="utf-8") as out:
        for figure in figures:
            if figure.met is not None or figure.baseline is not None:
                out.write(json.dumps({"bench": title, "cells": figure.cells(), "floor_why": figure.floor_why}) + "\n")


def median_of(batches: Sequence[float]) -> float:
    """The median of per-batch figures (not the minimum: a quiet batch must not flatter the result)."""
    return statistics.median(batches)


def batch_medians(values: Sequence[float], batches: int) -> list[float]:
    """``values`` cut into ``batches`` consecutive batches, each reduced to its median."""
    size = max(1, len(values) // batches)
    return [statistics.median(values[i:i + size]) for i in range(0, len(values) - size + 1, size)]


def wait_for_cli_server(home: Path, timeout: float = 60.0) -> None:
    """Until the CLI server of the home at ``home`` serves (SystemExit after ``timeout`` s).

    It listens before it imports, so a connection alone does not say it is
    ready: the probe sends nothing and waits for the server's child (forked
    only once the imports are done) to close it.
    """
    path = str(Home(home).cli_socket_path)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            try:
                probe.settimeout(max(0.1, deadline - time.monotonic()))
                probe.connect(path)
                probe.shutdown(socket.SHUT_WR)
                probe.recv(1)
                return
            except OSError:
                time.sleep(0.02)
    raise SystemExit(f"no CLI server answered on {path}")


def start_cli_server(home: Path, env: dict[str, str] | None = None) -> None:
    """Start the home's CLI server as its first client would (detached, in a session of its own, with the
    environment ``env``: credentials for Claude in it make it preload the SDK) and wait until it answers;
    one already running is kept (the new one exits at once)."""
    subprocess.Popen([sys.executable, "-P", "-m", "swarm.cli.forkserver", str(home)],
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                     start_new_session=True, env=env)
    wait_for_cli_server(home)


def stop_cli_server(home: Path) -> None:
    """SIGTERM the home's CLI server (its pid is in its lock file) and wait for it to go."""
    pid = server_pid(Home(home).cli_lock_path)
    if pid is None:
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except OSError:
        return
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except OSError:
            return
        time.sleep(0.02)


# -- the whole table ---------------------------------------------------------------------------

HERE = Path(__file__).resolve().parent
BENCHES: dict[str, tuple[list[str], list[str]]] = {
    # name: (arguments of the quick run, arguments of the full run); in the order of issue 34's table
    "bench_roundtrip": (["--quick", "--grow", "50"], []),
    "bench_mailbox": (["--quick"], []),
    "bench_spawn": (["--quick", "--goals-only", "--sizes", "8", "--big", "16", "--runs", "1", "--window", "1"],
                    ["--goals-only", "--sizes", "16", "--big", "64"]),
    "bench_turn_tasks": (["--quick"], []),
    "count_opens": (["--no-demo", "--sizes", "2,4", "--messages", "2"], ["--no-demo", "--sizes", "4,8,16"]),
    "bench_cli": (["--quick"], []),
    "bench_bystanders": (["--quick"], []),
}
"""Every benchmark behind issue 34's table and how ``--quick`` / the full run call it."""


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples, smaller teams (< 3 min)")
    parser.add_argument("--only", default="", help=f"comma list of benchmarks to run ({', '.join(BENCHES)})")
    args = parser.parse_args(argv)
    names = [n for n in args.only.split(",") if n] or list(BENCHES)
    unknown = [n for n in names if n not in BENCHES]
    if unknown:
        parser.error(f"unknown benchmark {unknown[0]!r}; choose from {', '.join(BENCHES)}")
    before = os.getloadavg()
    began = time.monotonic()
    rows: list[list[str]] = []
    floors: list[str] = []
    failed: list[list[str]] = []
    with tempfile.TemporaryDirectory(prefix="swarm-benchtable-") as scratch:
        goals = Path(scratch) / "goals.jsonl"
        goals.touch()
        for name in names:
            quick, full = BENCHES[name]
            argv_ = [sys.executable, str(HERE / f"{name}.py"), *(quick if args.quick else full)]
            print(f"\n=== {name} {' '.join(argv_[2:])} (load {os.getloadavg()[0]:.2f})", flush=True)
            done = subprocess.run(argv_, env={**os.environ, GOALS_FILE: str(goals)}, check=False)
            if done.returncode != 0:
                failed.append([f"{name} failed (exit {done.returncode})", "", "n/a", "", "", "", "MISSED"])
        for line in goals.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            rows.append([f"{record['bench'].split(':')[0].split(' (')[0]}: {record['cells'][0]}",
                         *record["cells"][1:]])
            floors.append(record.get("floor_why", ""))
        rows += failed
    after = os.getloadavg()
    widths = [max(len(row[i]) for row in [HEADERS, *rows]) for i in range(len(HEADERS))]
    print(f"\nissue 34: every goal, {'--quick' if args.quick else 'full'} run, {time.monotonic() - began:.0f} s")
    for n, row in enumerate([HEADERS, *rows]):
        print("| " + " | ".join(cell.ljust(w) if i < 2 else cell.rjust(w)
                                for i, (cell, w) in enumerate(zip(row, widths, strict=True))) + " |")
        if n == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    print(f"load average before: {before[0]:.2f} {before[1]:.2f} {before[2]:.2f}; after: "
          f"{after[0]:.2f} {after[1]:.2f} {after[2]:.2f}; {os.cpu_count()} cores")
    for row, why in zip(rows, floors, strict=False):
        if why:
            print(f"- floor of {row[0]}: {why}")
    missed = [row[0] for row in rows if row[-1] == "MISSED"]
    print(f"goals missed: {len(missed)} of {len(rows)}" + (": " + "; ".join(missed) if missed else "")
          + ("; each missed goal with a floor is set against the best measured on this machine in the same run"
             if any(floors) else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
