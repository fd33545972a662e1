#!/usr/bin/env python3
"""Benchmark a teammate's turn with 10 and with 1,000 tasks in its team's list.

    .venv/bin/python scripts/bench_turn_tasks.py [--quick]

A teammate session (``TeammateSession``, as its process builds it, in this
process) on the offline scripted model runs turns that answer with one line
and touch no task: what is left is the session's own cost of a turn —
the conversation record, the activity record, the idle notification, and
whatever it reads to find what the turn completed. The same turns run in a
team whose task list holds 10 tasks and in one that holds 1,000; the figure
is the median of ``BATCHES`` batch medians of the time per turn, and the
goal is that 1,000 tasks cost at most 1.2x what 10 do (the list is not read).

The lead's inbox is emptied between turns, outside the timing, so every turn
appends its notification to the same short file in both teams. Prints the
table (``scripts/benchtable.py``) and exits 0 whatever the figures.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import tempfile
import time
from pathlib import Path

from benchtable import Figure, batch_medians, median_of, print_table

from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.protocol import Member
from swarm.core.tasks import TaskStore, task_document
from swarm.core.teams import TeamStore
from swarm.models.messages import Message
from swarm.teammate.config import TeammateConfig
from swarm.teammate.session import TeammateSession

BATCHES = 5
GOAL = 1.2
"""Most a turn with 1,000 tasks may cost, as a multiple of one with 10."""
BOOK = """
[[rules]]
name = "chat"
match = 'how are you'
text = "fine"
"""


def _session(root: Path, tasks: int) -> TeammateSession:
    """Teammate ``w`` of a fresh team with ``tasks`` tasks, none of them its own."""
    home = Home(root / "home")
    TeamStore(home).create("t")
    TeamStore(home).add_member("t", Member(agent_id="w@t", name="w", is_active=True, status="idle"))
    store = TaskStore(home, "t")
    store.create("task 1", "something to do")  # the list as the store makes it; the rest written alike, at once
    first = store.get("1")
    for n in range(2, tasks + 1):
        task = first.model_copy(update={"id": str(n), "subject": f"task {n}"})
        (store.dir / f"{n}.json").write_text(json.dumps(task_document(task), indent=2))
    assert len(store.list()) == tasks
    book = root / "book.toml"
    book.write_text(BOOK)
    work = root / "work"
    work.mkdir()
    return TeammateSession(TeammateConfig(team="t", name="w", agent_id="w@t", cwd=work, playbook=book), home, {})


def _turns(session: TeammateSession, count: int) -> list[float]:
    """Milliseconds of each of ``count`` turns."""
    lead = Mailbox(session.mailbox.home, "t")
    times = []
    for _ in range(count):
        session.conversation.add(Message.user_text("how are you"))
        began = time.perf_counter()
        session._turn()
        times.append((time.perf_counter() - began) * 1000)
        lead.take("team-lead")
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer turns per batch")
    args = parser.parse_args()
    per_batch = 10 if args.quick else 40
    logging.disable(logging.WARNING)
    root = Path(tempfile.mkdtemp(prefix="bench-turn-tasks-"))
    try:
        sessions = {n: _session(root / str(n), n) for n in (10, 1000)}
        for session in sessions.values():
            _turns(session, 3)  # warm up: imports, the first record of each file
        times: dict[int, list[float]] = {10: [], 1000: []}
        for _ in range(BATCHES):  # the two teams take turns batch by batch: the same load for both
            for n, session in sessions.items():
                times[n] += _turns(session, per_batch)
        few, many = (median_of(batch_medians(times[n], BATCHES)) for n in (10, 1000))
        for session in sessions.values():
            session.spec.provider.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print_table("A teammate's turn: 10 tasks in the list against 1,000", [
        Figure("turn, 10 tasks", "", few, unit=" ms"),
        Figure("turn, 1,000 tasks", f"<= {GOAL}x 10 tasks", many, few, unit=" ms",
               met=lambda ms: ms <= GOAL * few),
    ], notes=[(f"median of {BATCHES} batch medians of {per_batch} turns each; a turn answers one line and "
               "touches no task (the scripted model)")])


if __name__ == "__main__":
    main()
