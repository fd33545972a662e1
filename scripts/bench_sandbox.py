#!/usr/bin/env python3
"""Benchmark the Bash sandbox: what bubblewrap (and the proxy bridge) adds to a command.

    .venv/bin/python scripts/bench_sandbox.py [--quick]

Runs each command the way the Bash tool does (``bash -c COMMAND`` in a git
worktree-like directory), plain and through ``swarm.agent.sandbox.Sandbox``
(``--ro-bind / /``, writable worktree, hidden keys, new namespaces, the socat
bridge to the network proxy), interleaved so both see the same load:

- ``true``: the start-up cost alone;
- a small build: ``make`` of a Makefile that writes 20 files and a tarball of them;
- ``true`` under bubblewrap alone, without the proxy bridge (what the socat start-up costs).

Prints median and p99 of each, side by side (the benchtable table: the
sandboxed figure against the plain one as baseline), and exits 0 whatever the
figures.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchtable import Figure, print_table  # noqa: E402

from swarm.agent.sandbox import Sandbox  # noqa: E402
from swarm.backends.sandbox import check, wrap  # noqa: E402
from swarm.core.sandbox_config import ResolvedSandbox  # noqa: E402

MAKEFILE = """\
FILES := $(foreach n,$(shell seq 1 20),out/f$(n).txt)
all: out.tar
out/%.txt:
\t@mkdir -p out && echo $* > $@
out.tar: $(FILES)
\t@tar -cf $@ out
clean:
\t@rm -rf out out.tar
"""
COMMANDS = {"true": "true", "small build (make, 20 files + tar)": "make -s clean && make -s"}


def timed(argv: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return (time.perf_counter() - start) * 1000


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="20 runs per figure instead of 200")
    runs = 20 if parser.parse_args().quick else 200
    problem = check()
    if problem is not None:
        print(f"no sandbox here: {problem}")
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as tmp:
        work = Path(tmp) / "work"
        work.mkdir()
        (work / "Makefile").write_text(MAKEFILE)
        subprocess.run(["git", "init", "-q"], cwd=work, check=True)
        sandbox = Sandbox(ResolvedSandbox(enabled=True), env={"HOME": tmp})
        figures: list[Figure] = []
        try:
            for name, command in COMMANDS.items():
                plain, boxed = [], []
                for _ in range(runs):
                    plain.append(timed(["/bin/bash", "-c", command], work))
                    boxed.append(timed(sandbox.argv("/bin/bash", command, work, [work]), work))
                figures.append(Figure(f"{name}: median", "", statistics.median(boxed), statistics.median(plain),
                                      unit=" ms"))
                figures.append(Figure(f"{name}: p99", "", p99(boxed), p99(plain), unit=" ms"))
            spec = replace(sandbox.spec(work, [work]), proxy_socket=None)
            plain, bare = [], []
            for _ in range(runs):
                plain.append(timed(["/bin/bash", "-c", "true"], work))
                bare.append(timed(wrap(spec, "/bin/bash", "true"), work))
            figures.append(Figure("true, bubblewrap alone (no proxy bridge): median", "", statistics.median(bare),
                                  statistics.median(plain), unit=" ms"))
        finally:
            sandbox.close()
    print_table("Bash sandbox (bubblewrap + socat bridge) vs plain bash -c", figures,
                [f"{runs} runs each, plain and sandboxed interleaved; swarm = sandboxed, baseline = plain",
                 "sandboxed includes starting socat inside and waiting for its listening socket"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
