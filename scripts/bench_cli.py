#!/usr/bin/env python3
"""Benchmark ``swarm send`` from a shell: the whole process, start to exit.

    .venv/bin/python scripts/bench_cli.py [--quick]

Runs the installed ``swarm`` executable (the one beside this interpreter) the
way a shell does: a fresh process per call, ``swarm send NAME TEXT`` as the
team lead (so the entry is signed, as every lead send is) into a scratch home.

- cold: the very first call, nothing run before it: no CLI server yet, so it
  runs in-process (and starts the home's server, ``swarm.cli.forkserver``);
- first served: the first call once that server answers (its first fork);
- warm: the median of ``BATCHES`` batch medians of the calls after it, served;
- warm, server off: the same with ``SWARM_CLI_SERVER=0``, every call a whole
  interpreter that imports the CLI (calls interleaved with the served ones).

Baseline: ``python -c pass`` with the same interpreter, the floor of any
Python command. Also ``swarm --version``, which loads the CLI without a
command, and a bare interpreter importing only the libraries a send needs
(``LIBRARIES``): the floor of any ``swarm send`` that runs as a fresh process. Prints the figure / goal / swarm / baseline / ratio table
(``scripts/benchtable.py``) and exits 0 whatever the figures.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.names import LEAD_NAME

from benchtable import (
    Figure,
    batch_medians,
    median_of,
    print_table,
    stop_cli_server,
    wait_for_cli_server,
)

BATCHES = 5
LIBRARIES = ("import gc; gc.disable(); import click, pydantic.main, pydantic.plugin._loader, "
             "cryptography.hazmat.primitives.asymmetric.ed25519, cryptography.hazmat.primitives.serialization")
"""The third-party part of a send: the CLI, the models (and pydantic's plugin loader, which every
model's first validation imports) and the lead's signature, with the collector held off as
swarm's entry point does. No swarm code can start below this."""
CLIENT = "import swarm.cli.entry, swarm.core.rendezvous, _socket, _signal"
"""What a served send's own process imports (``swarm.cli.entry``): with the interpreter, the part of a served
send that no server can take over."""


def _swarm() -> str:
    beside = Path(sys.executable).with_name("swarm")
    return str(beside) if beside.exists() else (shutil.which("swarm") or "swarm")


def _timed(argv: list[str], env: dict[str, str]) -> float:
    began = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - began) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fewer calls")
    args = parser.parse_args()
    calls = 20 if args.quick else 50
    root = Path(tempfile.mkdtemp(prefix="swarm-bench-cli-"))
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "SWARM_"))}
        env["SWARM_HOME"] = str(root / "home")
        swarm = _swarm()
        send = [swarm, "send", "team-lead", "hello from the shell", "--team", "bench"]
        subprocess.run([swarm, "team", "create", "bench"], env=env, capture_output=True, check=True)
        cold = _timed(send, env)
        wait_for_cli_server(root / "home")
        first_served = _timed(send, env)
        warm, local = [], []
        off = {**env, "SWARM_CLI_SERVER": "0"}
        for _ in range(calls):
            warm.append(_timed(send, env))
            local.append(_timed(send, off))
        client = [_timed([sys.executable, "-c", CLIENT], env) for _ in range(calls)]
        mailbox = Mailbox(Home(root / "home"), "bench")
        mailbox.send(LEAD_NAME, "warm-up", sender=LEAD_NAME)
        durable = []
        for _ in range(calls):  # the child's own work, warm, in this process: one signed, fsynced append
            began = time.perf_counter()
            mailbox.send(LEAD_NAME, "hello from the bench", sender=LEAD_NAME)
            durable.append((time.perf_counter() - began) * 1000)
        version = [_timed([swarm, "--version"], env) for _ in range(calls)]
        bare = [_timed([sys.executable, "-c", "pass"], env) for _ in range(calls)]
        libraries = [_timed([sys.executable, "-c", LIBRARIES], env) for _ in range(calls)]
    finally:
        stop_cli_server(root / "home")
        shutil.rmtree(root, ignore_errors=True)
    floor = median_of(batch_medians(bare, BATCHES))
    print_table(f"bench_cli ({'--quick' if args.quick else 'full'}): a shell runs swarm", [
        Figure("`swarm send` from a shell, cold (first call: no server yet, runs in-process)", "", cold, floor,
               " ms", digits=0),
        Figure("`swarm send`, first served call (the new server's first fork)", "<= 100 ms", first_served, floor,
               " ms", digits=0, met=lambda v: v <= 100),
        Figure(f"`swarm send` from a shell, warm, served (median of {BATCHES} batch medians)",
               "<= 2.5x python -c pass", median_of(batch_medians(warm, BATCHES)), floor, " ms", digits=0,
               met=lambda v: v <= 2.5 * floor,
               floor=median_of(batch_medians(client, BATCHES)) + median_of(batch_medians(durable, BATCHES)),
               floor_why="a fresh interpreter importing only what the client imports (`python -c "
                         f"'{CLIENT}'`), plus the send itself timed warm in one process (the lead's signature, "
                         "the lock, the fsynced rewrite of the inbox); the server's fork and its child's page "
                         "copies and exit come on top and are not in it"),
        Figure("`swarm send` from a shell, warm, server off (SWARM_CLI_SERVER=0)", "",
               median_of(batch_medians(local, BATCHES)), floor, " ms", digits=0),
        Figure("`swarm --version` (the CLI without a command)", "", median_of(batch_medians(version, BATCHES)),
               floor, " ms", digits=0),
        Figure("a bare interpreter importing what a send needs (click, pydantic, cryptography)", "",
               median_of(batch_medians(libraries, BATCHES)), floor, " ms", digits=0),
    ], notes=[f"{calls} calls each; baseline: `python -c pass` with the same interpreter",
              "served: the home's CLI server (swarm.cli.forkserver) forks a child that runs the command",
              "the first `swarm team create` in the scratch home is not timed"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
