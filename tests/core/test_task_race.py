"""Real processes racing on one task list.

- Eight workers loop "pick a claimable task, claim it, complete it" over 20
  tasks, half of which wait on another. Each writes what it did to one shared
  ``O_APPEND`` log: ``claimed`` after its claim returned, ``completing``
  before it asks to complete. So the log's order is the order of events, and
  "a dependent was claimed after its blocker was completed" reads as "the
  blocker's ``completing`` line comes before the dependent's ``claimed``".
  Without the list lock two workers would both win a task, a claim could
  miss a blocker's completion, and one worker's write would undo another's.
- Eight workers create and delete tasks at once: every id handed out once.
- A worker SIGKILLed in the middle of its changes loses none it was told
  were done, and leaves a list the next writer uses.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from swarm.core.home import Home
from swarm.core.tasks import TaskStore
from tests.conftest import both_stores

if TYPE_CHECKING:
    from conftest import Workers  # tests/core/conftest.py; only for annotations

TEAM = "crew"
WORKERS = 8
TASKS = 20

RACER = """
from swarm.core.tasks import TaskStore
from swarm.errors import ConflictError
store = TaskStore(home, "crew")
me, fd = sys.argv[1], open_log(sys.argv[2])
say("ready")
sys.stdin.readline()
while not all(t.status == "completed" for t in store.list()):
    for task in store.claimable():
        try:
            store.claim(task.id, me)
        except ConflictError as exc:
            record(fd, {"ev": "refused", "task": task.id, "by": me, "why": str(exc)})
            continue
        record(fd, {"ev": "claimed", "task": task.id, "by": me})
        record(fd, {"ev": "completing", "task": task.id, "by": me})
        store.update(task.id, by=me, status="completed")
        break
    else:
        time.sleep(0.001)  # nothing free right now: let the holders finish
say("done")
"""

CREATOR = """
from swarm.core.tasks import TaskStore
store = TaskStore(home, "crew")
me, count, fd = sys.argv[1], int(sys.argv[2]), open_log(sys.argv[3])
say("ready")
sys.stdin.readline()
for j in range(count):
    task = store.create(f"{me}-{j}")
    record(fd, {"ev": "created", "task": task.id, "subject": task.subject})
    if j % 2:
        store.update(task.id, by=me, status="deleted")
        record(fd, {"ev": "deleted", "task": task.id})
say("done")
"""

CHURNER = """
from swarm.core.tasks import TaskStore
store = TaskStore(home, "crew")
fd = open_log(sys.argv[1])
say("ready")
j = 0
while True:
    task = store.create(f"c{j}", blocked_by=[str(j)] if j else [])
    store.claim(task.id, "churner") if not j else None
    record(fd, {"ev": "created", "task": task.id})
    if j:
        store.update(str(j), by="churner", status="completed", metadata={"n": j})
        record(fd, {"ev": "completed", "task": str(j)})
    say("tick")
    j += 1
"""


def read_log(path: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def start_all(workers: Workers, body: str, args: list[list[object]]) -> None:
    started = [workers.start(f"w{i}", body, *arg) for i, arg in enumerate(args)]
    for worker in started:
        worker.expect("ready")
    for worker in started:
        worker.tell()
    for worker in started:
        worker.expect("done", timeout=120)
        assert worker.join(30) == 0, worker.stderr()


@both_stores
def test_eight_processes_claim_twenty_tasks_each_exactly_once(team: Home, workers: Workers, tmp_path: Path) -> None:
    store = TaskStore(team, TEAM)
    for i in range(1, TASKS + 1):
        store.create(f"task {i}", blocked_by=[str(i - TASKS // 2)] if i > TASKS // 2 else [])
    log = tmp_path / "events.jsonl"
    start_all(workers, RACER, [[f"w{i}", log] for i in range(WORKERS)])

    events = read_log(log)
    claims = {e["task"]: e["by"] for e in events if e["ev"] == "claimed"}
    assert Counter(e["task"] for e in events if e["ev"] == "claimed") == Counter({str(i): 1 for i in range(1, 21)})
    assert Counter(e["task"] for e in events if e["ev"] == "completing") == Counter(list(claims))
    final = {t.id: (t.owner, t.status) for t in store.list()}
    assert final == {task: (owner, "completed") for task, owner in claims.items()}  # no update lost
    position = {(e["ev"], e["task"]): n for n, e in enumerate(events) if e["ev"] != "refused"}
    for i in range(TASKS // 2 + 1, TASKS + 1):
        blocker = str(i - TASKS // 2)
        assert position[("completing", blocker)] < position[("claimed", str(i))], f"task {i} claimed too early"
    for refusal in (e for e in events if e["ev"] == "refused"):
        assert refusal["why"].startswith(f"task {refusal['task']} is "), refusal
    assert store.claimable() == [] and store.create("after").id == str(TASKS + 1)


@both_stores
def test_concurrent_creates_and_deletes_hand_out_every_id_once(team: Home, workers: Workers,
                                                                tmp_path: Path) -> None:
    per_worker = 6
    log = tmp_path / "events.jsonl"
    start_all(workers, CREATOR, [[f"w{i}", per_worker, log] for i in range(WORKERS)])

    events = read_log(log)
    created = [e["task"] for e in events if e["ev"] == "created"]
    total = WORKERS * per_worker
    assert sorted(created, key=int) == [str(i) for i in range(1, total + 1)]
    deleted = {e["task"] for e in events if e["ev"] == "deleted"}
    store = TaskStore(team, TEAM)
    assert {t.id: t.subject for t in store.list()} == {
        e["task"]: e["subject"] for e in events if e["ev"] == "created" and e["task"] not in deleted}
    assert store.create("next").id == str(total + 1)


def test_a_writer_killed_mid_change_loses_nothing_it_reported(team: Home, workers: Workers, tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    churner = workers.start("churner", CHURNER, log)
    churner.expect("ready")
    for _ in range(15):
        churner.expect("tick")
    churner.kill()

    events = read_log(log)
    store = TaskStore(team, TEAM)
    tasks = {t.id: t for t in store.list()}
    for event in events:
        assert event["task"] in tasks, f"acknowledged task {event['task']} lost"
        if event["ev"] == "completed":
            assert tasks[event["task"]].status == "completed"
    for task in tasks.values():  # every edge whole, whatever instant the kill hit
        assert all(task.id in tasks[b].blocks for b in task.blocked_by)
    assert store.problems() == []
    fresh = store.create("after the crash")
    assert int(fresh.id) > max(int(i) for i in tasks)
