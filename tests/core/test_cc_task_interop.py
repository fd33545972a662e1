"""swarm and Claude Code on one task list: the real ``proper-lockfile`` from npm, locked as Claude Code 2.1.332 does.

Read from its shipped code (docs/protocol.md, "Claude Code interop"): creating a task locks
the whole list through ``<list>/.lock`` (a file it makes with ``wx``; the lock
directory is ``.lock.lock``), changing one task locks only that task
(``<id>.json.v5-lock-anchor`` with ``lockfilePath`` ``<id>.json.lock``), both
with 30 retries at 5-100 ms. A task is changed by a fresh read under its lock
and a temp file + rename. The Node writer below does exactly that; swarm's
writer is a separate process calling the real ``TaskStore``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from swarm.core.home import Home
from swarm.core.tasks import TaskStore

if TYPE_CHECKING:
    from conftest import Worker, Workers  # tests/core/conftest.py; only for annotations

TEAM = "crew"
BUMPS = 200
CREATES = 150

CC_TASKS = r"""
const fs = require('fs'), path = require('path'), lockfile = require('proper-lockfile');
const [dir, mode, count, out] = [process.argv[2], process.argv[3], +process.argv[4], process.argv[5]];
const R = {retries: {retries: 30, minTimeout: 5, maxTimeout: 100}};
const errors = [];
async function listLock() {
  const anchor = path.join(dir, '.lock');
  try { fs.writeFileSync(anchor, '', {flag: 'wx'}); } catch {}
  return lockfile.lock(anchor, R);
}
function taskLock(id) {
  const file = path.join(dir, `${id}.json`);
  return lockfile.lock(`${file}.v5-lock-anchor`, {lockfilePath: `${file}.lock`, realpath: false, ...R});
}
function highest() {
  let mark = 0;
  try { mark = parseInt(fs.readFileSync(path.join(dir, '.highwatermark'), 'utf8').trim(), 10) || 0; } catch {}
  const ids = fs.readdirSync(dir).filter(f => /^\d+\.json$/.test(f)).map(f => parseInt(f));
  return Math.max(mark, 0, ...ids);
}
function store(file, task) {
  const tmp = `${file}.tmp.${process.pid}`;
  fs.writeFileSync(tmp, JSON.stringify(task, null, 2));
  fs.renameSync(tmp, file);
}
async function create(i) {
  const release = await listLock();
  try {
    const id = String(highest() + 1);
    store(path.join(dir, `${id}.json`),
          {id, subject: `cc-${i}`, description: '', status: 'pending', blocks: [], blockedBy: []});
  } finally { await release(); }
}
async function bump() {
  const release = await taskLock('1');
  try {
    const file = path.join(dir, '1.json');
    const task = JSON.parse(fs.readFileSync(file, 'utf8'));
    task.metadata = {...(task.metadata || {}), cc: ((task.metadata || {}).cc || 0) + 1};
    store(file, task);
  } finally { await release(); }
}
console.log('ready');
process.stdin.once('data', async () => {
  for (let i = 0; i < count; i++) {
    try { if (mode === 'create') await create(i); else await bump(); } catch (e) { errors.push(String(e)); }
  }
  fs.writeFileSync(out, JSON.stringify({errors}));
  console.log('finished');
  process.exit(0);
});
"""

SWARM_TASKS = """
from swarm.core.tasks import TaskStore
mode, count = sys.argv[1], int(sys.argv[2])
store = TaskStore(home, "crew")
say("ready")
sys.stdin.readline()
for i in range(count):
    if mode == "create":
        store.create(f"sw-{i}")
    else:
        store.update("1", by="team-lead", subject=f"s{i}")
say("done")
"""

EXEC = """
import os, sys
os.execvp(sys.argv[1], sys.argv[1:])
"""


@pytest.fixture(scope="module")
def cc_tasks(proper_lockfile: Path) -> Path:
    script = proper_lockfile / "cc_tasks.js"
    script.write_text(CC_TASKS)
    return script


def _race(workers: Workers, cc_tasks: Path, tasks_dir: Path, mode: str, count: int) -> dict[str, Any]:
    """Run Claude Code's writer and swarm's side by side, ``count`` operations each; the Node writer's summary."""
    swarm = workers.start("swarm", SWARM_TASKS, mode, count)
    out = workers.logs / f"node-{mode}.json"
    node: Worker = workers.start("node", EXEC, "node", cc_tasks, tasks_dir, mode, count, out, prologue=False)
    for worker in (swarm, node):
        worker.expect("ready")
    for worker in (swarm, node):
        worker.tell()
    swarm.expect("done", timeout=180)
    node.expect("finished", timeout=180)
    summary: dict[str, Any] = json.loads(out.read_text())
    assert swarm.stderr() == "", swarm.stderr()
    return summary


def test_a_task_changed_by_both_loses_no_change(workers: Workers, cc_tasks: Path, team: Home) -> None:
    store = TaskStore(team, TEAM)
    store.create("first")
    summary = _race(workers, cc_tasks, store.dir, "bump", BUMPS)
    assert summary["errors"] == []
    task = json.loads((store.dir / "1.json").read_text())
    assert task["metadata"]["cc"] == BUMPS, "swarm wrote a task over a change Claude Code made under its lock"
    assert task["subject"] == f"s{BUMPS - 1}", "Claude Code wrote over swarm's change"


def test_tasks_created_by_both_get_distinct_ids(workers: Workers, cc_tasks: Path, team: Home) -> None:
    store = TaskStore(team, TEAM)
    store.create("first")
    summary = _race(workers, cc_tasks, store.dir, "create", CREATES)
    assert summary["errors"] == []
    subjects = [task.subject for task in store.list()]
    assert len(subjects) == 1 + 2 * CREATES, "a create overwrote another's task (the two did not exclude each other)"
    assert {s for s in subjects if s.startswith("cc-")} == {f"cc-{i}" for i in range(CREATES)}
    assert {s for s in subjects if s.startswith("sw-")} == {f"sw-{i}" for i in range(CREATES)}
    assert [task.id for task in store.list()] == [str(i) for i in range(1, 2 + 2 * CREATES)]
