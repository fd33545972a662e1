"""The CLI server's rehearsal: it runs ``swarm send`` a few times in a scratch home before it serves.

A forked child shares the server's pages until it writes one. Python writes
to code it runs for the first times (3.11 counts each function's first calls
and rewrites its bytecode in place, specialised), and to the objects a first
run creates lazily; in a child every such write copies a 4 KiB page. A
``swarm send`` forked from a server that never ran one copied ~1,500 pages
(~6 MB; ~4 ms of its ~10); after the rehearsal ~1,000. The rehearsal runs the
command exactly as a child would (``swarm.cli.main.cli``, a lead's signed
send, fsync and all) in a scratch home of its own, ``<home>/run/rehearsal/``
(only the server holding the home's lock runs one), removed afterwards and
before, so a server killed mid-rehearsal leaves nothing in ``/tmp`` and its
leftover goes with the next server's rehearsal: the real home and its teams
are never touched, and nothing it prints is seen.
Logging, which ``cli`` configures, is put back as it was, so a child still
configures its own (``-v``).
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import shutil
from pathlib import Path

from swarm.core.home import Home
from swarm.core.names import LEAD_NAME
from swarm.core.signing import rotate_lead_key
from swarm.core.teams import TeamStore

ROUNDS = 8
"""Sends rehearsed: 3.11 specialises a function's bytecode after its 8th call (``co_warmup``)."""
TEAM = "rehearsal"


def rehearse(scratch: Path, rounds: int = ROUNDS) -> int:
    """Run ``rounds`` lead sends in a scratch home under ``scratch`` (removed before and after: nobody else may
    use it); how many succeeded (a failure only leaves code cold).

    ``scratch`` is made only in a directory that exists (the server's run directory): a home removed while its
    server starts is not made again by the rehearsal, and no round starts once ``scratch`` is gone.
    """
    shutil.rmtree(scratch, ignore_errors=True)
    try:
        os.mkdir(scratch, 0o700)
    except OSError:
        return 0  # the home (its run directory) was removed, or cannot be written: serve cold
    try:
        return _rehearse(scratch, rounds)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _rehearse(scratch: Path, rounds: int) -> int:
    from swarm.cli.main import cli

    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    done = 0
    home = Home(scratch / "home")
    try:
        TeamStore(home).create(TEAM)
        rotate_lead_key(home, TEAM)
    except Exception:  # noqa: BLE001  # an unwritable run directory: serve cold rather than not at all
        return 0
    args = ["--home", str(home.root), "send", LEAD_NAME, "rehearsal", "--team", TEAM]
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            for _ in range(rounds):
                if not scratch.is_dir():
                    break  # removed with its home meanwhile: sending on would make it again
                try:
                    cli.main(args=args, prog_name="swarm")
                except SystemExit as exc:
                    done += exc.code in (0, None)
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    return done
