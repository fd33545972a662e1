"""The table every benchmark in ``scripts/`` prints: figure / goal / swarm / baseline / ratio.

Benchmarks report, tests check behaviour: a missed goal is marked ``MISSED``
in the table and the script still exits 0. Figures are medians of several
batches (``median_of``), never the best batch, so a quiet moment does not
flatter swarm. The machine's load average is printed with the table, since
every figure here depends on what else the cores are doing.

Also the one place the benchmarks start, wait for and stop a scratch home's
CLI server (``start_cli_server``, ``wait_for_cli_server``, ``stop_cli_server``).
"""

from __future__ import annotations

import os
import signal
import socket
import statistics
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

    def cells(self) -> list[str]:
        swarm = "n/a" if self.swarm is None else f"{self.swarm:,.{self.digits}f}{self.unit}"
        baseline = "" if self.baseline is None else f"{self.baseline:,.{self.digits}f}{self.unit}"
        ratio = ""
        if self.swarm is not None and self.baseline:
            ratio = f"{self.swarm / self.baseline:.2f}x"
        verdict = ""
        if self.met is not None:
            verdict = "MISSED" if self.swarm is None or not self.met(self.swarm) else "met"
        return [self.name, self.goal, swarm, baseline, ratio, verdict]


HEADERS = ["figure", "goal", "swarm", "baseline", "ratio", ""]


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
    for note in notes:
        print(f"- {note}")
    missed = [f.name for f in figures if f.cells()[-1] == "MISSED"]
    print("goals missed: " + (", ".join(missed) if missed else "none"))


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


def start_cli_server(home: Path) -> None:
    """Start the home's CLI server as its first client would (detached, in a session of its own) and wait
    until it answers; one already running is kept (the new one exits at once)."""
    import subprocess
    import sys

    subprocess.Popen([sys.executable, "-P", "-m", "swarm.cli.forkserver", str(home)],
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                     start_new_session=True)
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
