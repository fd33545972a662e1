"""The CLI server rehearses a send before it serves, so a forked ``swarm send`` copies fewer pages.

Counted, not timed: the minor page faults (``ru_minflt``: a copy-on-write
copy is one) a ``swarm send`` forked from a warmed-up interpreter takes while
it runs, before and after ``swarm.cli.rehearsal.rehearse`` in that same
interpreter. Measured: ~1,520 before, ~1,040 after. In a fresh interpreter
(``python -c``) so that nothing this test process ran before counts.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from swarm.cli.rehearsal import ROUNDS, rehearse
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from tests.cli.conftest import SWARM_EXE

PROBE = r"""
import gc, io, json, os, resource, sys
from pathlib import Path
from swarm.startup import hold_collector, startup_done
hold_collector()
import swarm.cli.main, swarm.cli.messages
from swarm.cli.rehearsal import rehearse
home = sys.argv[1]

def forked_send_faults():
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        sys.stdout = io.StringIO()
        sys.argv = ["swarm", "--home", home, "send", "team-lead", "probe", "--team", "t1"]
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        try:
            swarm.cli.main.main()
        except SystemExit as exc:
            assert exc.code in (0, None), exc.code
        os.write(w, b"%d" % (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before))
        os._exit(0)
    os.close(w)
    faults = int(os.read(r, 64))
    _, status = os.waitpid(pid, 0)
    assert status == 0
    return faults

startup_done()
cold = min(forked_send_faults() for _ in range(2))
hold_collector()
rehearsed = rehearse(Path(sys.argv[2]))
startup_done()
warm = min(forked_send_faults() for _ in range(2))
print(json.dumps({"cold": cold, "warm": warm, "rehearsed": rehearsed}))
"""


def test_a_rehearsed_server_forks_sends_that_copy_fewer_pages(tmp_path: Path) -> None:
    home = Home(tmp_path / "home")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SWARM_", "ANTHROPIC_"))}
    made = subprocess.run([str(SWARM_EXE), "--home", str(home.root), "team", "create", "t1"],
                          env={**env, "SWARM_CLI_SERVER": "0"}, capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    probe = subprocess.run([sys.executable, "-c", PROBE, str(home.root), str(tmp_path / "rehearsal")], env=env,
                           capture_output=True, text=True, timeout=120)
    assert probe.returncode == 0, probe.stderr
    figures = json.loads(probe.stdout.strip().splitlines()[-1])
    assert figures["rehearsed"] == ROUNDS
    assert figures["warm"] <= 0.8 * figures["cold"], figures  # ~1,040 against ~1,520
    assert len(Mailbox(home, "t1").read("team-lead")) == 4  # the probe's own sends; the rehearsal's went elsewhere


def test_the_rehearsal_leaves_nothing_behind_and_clears_what_a_killed_one_left(tmp_path: Path) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    run = tmp_path / "run"
    left = run / "rehearsal" / "home" / "teams" / "rehearsal"
    left.mkdir(parents=True)  # a server killed mid-rehearsal
    (left / "config.json").write_text("{half")
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    old = tempfile.tempdir
    tempfile.tempdir = str(scratch)
    try:
        assert rehearse(run / "rehearsal", 2) == 2  # the leftover did not get in its way
    finally:
        tempfile.tempdir = old
    assert list(run.iterdir()) == []  # its scratch home is gone, the leftover with it
    assert list(scratch.iterdir()) == []  # and nothing went to the temporary directory
    assert (root.handlers, root.level) == (handlers, level)  # a served child still configures logging (-v)


def test_a_removed_home_is_not_made_again_by_the_rehearsal(tmp_path: Path) -> None:
    """`rm -rf` of a home while its server starts: the rehearsal makes nothing where the home was."""
    home = tmp_path / "home"  # removed: its run directory is gone
    assert rehearse(home / "run" / "rehearsal", 2) == 0
    assert not home.exists()
