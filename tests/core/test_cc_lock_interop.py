"""swarm and Claude Code's lock scheme on one inbox: the real ``proper-lockfile`` from npm.

Claude Code locks a file with ``proper-lockfile`` (a directory
``<file>.lock/``, stale after 10 s, 10 retries at 5-100 ms for an inbox). The
Node writer here uses that package with those options and writes the way
Claude Code does (whole array, 2-space JSON, temp file + rename). swarm's
writers are separate processes calling the real ``Mailbox.send``.

The package is installed with npm into a temp dir once per module; without
node, npm or the registry the tests are skipped with the reason.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from swarm.core.flock import OUTLAST_STALE, STALE_AFTER
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox

if TYPE_CHECKING:
    from conftest import Worker, Workers  # tests/core/conftest.py; only for annotations

TEAM = "crew"
PER_WRITER = 500
SWARM_WRITERS = 3
CC_RETRIES = {"retries": 10, "minTimeout": 5, "maxTimeout": 100}
"""Claude Code's retry policy for inbox writes: 11 tries over about 0.65 s, then the write fails.

``proper-lockfile`` never queues, and swarm writers sending back to back (three
processes, each rewriting an inbox growing to 2,000 entries with an fsync, the
next taking the lock within a millisecond of the last) once kept the lock busy
nearly all the time: 6 to 17 of 500 Node writes gave up with this policy (each a
lost SendMessage in Claude Code). swarm now takes turns on a lock Claude Code
uses (``swarm.core.lock_turns``), so the storms below run with Claude Code's
own policy and expect no refusal.
"""
UNTIL_TOLD = 0
"""A swarm writer's count meaning: send until told to stop."""
PATIENT_RETRIES = {"retries": 100, "minTimeout": 100, "maxTimeout": 200}
"""Enough to outwait a stale lock (about 20 s)."""

NODE_WRITER = r"""
const fs = require('fs');
const crypto = require('crypto');
const lockfile = require('proper-lockfile');
const [inbox, count, label, retries, out] =
  [process.argv[2], +process.argv[3], process.argv[4], JSON.parse(process.argv[5]), process.argv[6]];
const stats = {sent: 0, lockErrors: [], parseErrors: 0, compromised: [], lockMs: []};
const options = {lockfilePath: inbox + '.lock', realpath: false, stale: 10000, retries,
                 onCompromised: (err) => stats.compromised.push(String(err))};

function load() {
  let data;
  try { data = fs.readFileSync(inbox, 'utf8'); } catch (e) { if (e.code === 'ENOENT') return []; throw e; }
  try { return JSON.parse(data); } catch (e) { stats.parseErrors++; return null; }
}

function store(doc) {  // like Claude Code: a temp file beside it, then rename
  const tmp = `${inbox}.tmp.${crypto.randomBytes(6).toString('hex')}`;
  fs.writeFileSync(tmp, JSON.stringify(doc, null, 2), {mode: 0o644});
  fs.renameSync(tmp, inbox);
}

async function send(i) {
  while (stats.lockErrors.length < 50) {
    const start = Date.now();
    let release;
    try { release = await lockfile.lock(inbox, options); }
    catch (e) { stats.lockErrors.push(`${e.code}: ${e.message}`); continue; }
    stats.lockMs.push(Date.now() - start);
    try {
      const doc = load();
      if (doc === null) continue;
      doc.push({from: label, text: `${label}-${i}`, timestamp: new Date().toISOString(), read: false,
                type: 'message', msgV: 1, msg_id: crypto.randomUUID()});
      store(doc);
      stats.sent++;
      return;
    } finally { await release(); }
  }
}

console.log('ready');
process.stdin.once('data', async () => {
  for (let i = 0; i < count; i++) await send(i);
  stats.maxLockMs = Math.max(0, ...stats.lockMs);
  stats.lockMs = stats.lockMs.slice(0, 3);
  fs.writeFileSync(out, JSON.stringify(stats));
  console.log('finished');
  process.exit(0);
});
"""

SWARM_WRITER = """
import logging, select
logging.basicConfig(level=logging.WARNING)  # an unparsable read or a quarantine would show on stderr
label, count, pause = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
say("ready")
sys.stdin.readline()
sent = 0
while count == 0 or sent < count:  # 0: UNTIL_TOLD
    mb.send("bob", f"{label}-{sent}", sender=label)
    sent += 1
    if select.select([sys.stdin], [], [], pause)[0]:  # paced: told to stop
        break
say("done")
say(str(sent))
"""

EXEC = """
import os, sys
os.execvp(sys.argv[1], sys.argv[1:])
"""
"""A worker that becomes another program (so ``Workers`` starts, watches and stops it)."""

CRASH_HOLDER = r"""
const lockfile = require('proper-lockfile');
const file = process.argv[2];
lockfile.lock(file, {lockfilePath: file + '.lock', realpath: false, stale: 10000})
  .then(() => { console.log('locked'); process.kill(process.pid, 'SIGKILL'); });
"""
"""A Claude Code writer that dies holding the lock (proper-lockfile set the directory's mtime, maybe ahead)."""

HOLDER = """
from pathlib import Path
from swarm.core.flock import acquire
held = acquire(Path(str(INBOX) + ".lock"), 10.0)
say("locked")
time.sleep(600)
"""


@pytest.fixture(scope="module")
def node_dir(proper_lockfile: Path) -> Path:
    """The dir with ``proper-lockfile@4`` installed, and the Node writer beside it."""
    (proper_lockfile / "writer.js").write_text(NODE_WRITER)
    return proper_lockfile


def start_node(workers: Workers, node_dir: Path, inbox: Path, count: int, label: str,
               retries: dict[str, int]) -> tuple[Worker, Path]:
    """A Node writer (see ``NODE_WRITER``), stopped with the other workers when the test ends, and its result file."""
    out = node_dir / f"{label}-{len(workers.started)}.json"
    worker = workers.start(label, EXEC, "node", node_dir / "writer.js", inbox, count, label, json.dumps(retries),
                           out, prologue=False)
    return worker, out


def node_result(node: tuple[Worker, Path], timeout: float) -> dict[str, Any]:
    """The writer's summary, once it has finished."""
    worker, out = node
    worker.expect("finished", timeout)
    assert worker.join(5) == 0, worker.stderr()
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def texts(inbox: Path) -> Counter[str]:
    return Counter(entry["text"] for entry in json.loads(inbox.read_bytes()))


@pytest.mark.parametrize(("writers", "per_writer", "pause", "team_kind"), [
    (SWARM_WRITERS, PER_WRITER, 0.0, "claude-code-lead"),
    (SWARM_WRITERS, 300, 0.0, "seen-on-the-inbox"),
    (2, UNTIL_TOLD, 0.05, "swarm"),
], ids=["storm", "storm-learned", "paced"])
def test_swarm_and_proper_lockfile_writers_lose_nothing(
    workers: Workers, node_dir: Path, inbox: Path, team: Home,
    writers: int, per_writer: int, pause: float, team_kind: str
) -> None:
    """Claude Code's own retry policy is never refused, however hard swarm writes.

    ``storm``: the team has a Claude Code lead (``leadSessionId``), so swarm
    takes turns on its inboxes from the start. ``storm-learned``: a team that
    looks swarm-only, where Claude Code wrote this inbox once before the storm
    (swarm learns it from the file replaced under another program's lock).
    ``paced``: writers at a realistic pace, from before the Node writer starts until it has finished (after
    that they would only take turns with no one: swarm remembers another program for an hour).
    """
    expected = {f"node-{i}" for i in range(PER_WRITER)}
    if team_kind == "claude-code-lead":
        config = team.config_path(TEAM)
        config.write_text(json.dumps({**json.loads(config.read_text()), "leadSessionId": "s-1"}, indent=2))
    if team_kind == "seen-on-the-inbox":
        Mailbox(team, TEAM).send("bob", "before", sender="alice")
        first = start_node(workers, node_dir, inbox, 1, "first", CC_RETRIES)
        first[0].expect("ready")
        first[0].tell()
        assert node_result(first, timeout=30)["sent"] == 1
        expected |= {"before", "first-0"}
    swarm = [workers.start(f"s{k}", SWARM_WRITER, f"s{k}", per_writer, pause) for k in range(writers)]
    node = start_node(workers, node_dir, inbox, PER_WRITER, "node", CC_RETRIES)
    for worker in [*swarm, node[0]]:
        worker.expect("ready")
    for worker in [*swarm, node[0]]:
        worker.tell()
    if per_writer != UNTIL_TOLD:
        for worker in swarm:
            worker.expect("done", timeout=240)
    result = node_result(node, timeout=240)
    sent = []
    for worker in swarm:
        if per_writer == UNTIL_TOLD:
            worker.tell("stop")
            worker.expect("done", timeout=30)
        sent.append(int(worker.line(timeout=5)))

    assert result["lockErrors"] == [] and result["compromised"] == [], result
    assert result["parseErrors"] == 0 and result["sent"] == PER_WRITER, result
    for worker in swarm:
        assert worker.stderr() == "", "a swarm writer met an unparsable inbox or another warning"
    found = texts(inbox)
    expected |= {f"s{k}-{i}" for k, count in enumerate(sent) for i in range(count)}
    assert min(sent) >= 3, f"the swarm writers barely overlapped the Node writer: {sent}"
    assert set(found) == expected, f"lost: {sorted(expected - set(found))[:10]}"
    assert max(found.values()) == 1, f"duplicated: {[t for t, n in found.items() if n > 1][:10]}"
    assert not list(inbox.parent.glob("bob.json.corrupt-*"))
    assert inbox.read_bytes().startswith(b'[\n  {\n    "'), "the inbox keeps Claude Code's 2-space indentation"
    assert not Path(f"{inbox}.lock").exists()


def _kill_a_holder(workers: Workers, inbox: Path) -> None:
    holder = workers.start("holder", HOLDER)
    holder.expect("locked")
    assert Path(f"{inbox}.lock").is_dir()
    holder.kill()


def test_a_killed_swarm_holder_stalls_swarm_not_at_all(workers: Workers, node_dir: Path, inbox: Path,
                                                       team: Home) -> None:
    _kill_a_holder(workers, inbox)
    start = time.monotonic()
    Mailbox(team, TEAM).send("bob", "after the kill", sender="alice")
    assert time.monotonic() - start < 1.0, "swarm waited for a lock whose swarm holder is dead"

    node = start_node(workers, node_dir, inbox, 1, "node", CC_RETRIES)
    node[0].expect("ready")
    node[0].tell()
    result = node_result(node, timeout=30)
    assert result["sent"] == 1 and result["lockErrors"] == [], result
    assert set(texts(inbox)) == {"after the kill", "node-0"}


def test_a_killed_swarm_holder_stalls_claude_code_at_most_the_stale_bound(
    workers: Workers, node_dir: Path, inbox: Path, team: Home
) -> None:
    _kill_a_holder(workers, inbox)
    node = start_node(workers, node_dir, inbox, 1, "node", PATIENT_RETRIES)
    node[0].expect("ready")
    node[0].tell()
    result = node_result(node, timeout=60)
    assert result["sent"] == 1 and result["lockErrors"] == [], result
    assert result["maxLockMs"] <= 10_000 + 1_500, f"Node waited {result['maxLockMs']} ms for a dead swarm's lock"
    start = time.monotonic()
    Mailbox(team, TEAM).send("bob", "after node", sender="alice")
    assert time.monotonic() - start < 1.0
    assert set(texts(inbox)) == {"node-0", "after node"}
    assert os.stat(inbox).st_mode & 0o777 == 0o644, "swarm keeps the mode Claude Code's writer gave the file"


def test_a_dead_claude_code_holder_is_outwaited(workers: Workers, node_dir: Path, inbox: Path, team: Home) -> None:
    """proper-lockfile sets a new lock's mtime up to 1 s ahead, so a dead holder's lock turns stale up to
    11 s after it was made: swarm's default wait outlasts that (one equal to the 10 s stale bound gave up)."""
    (node_dir / "crash_holder.js").write_text(CRASH_HOLDER)
    lock = Path(f"{inbox}.lock")
    ahead = 0.0
    for attempt in range(20):  # until the directory's mtime is well ahead of the clock: the case that failed
        holder = workers.start(f"holder{attempt}", EXEC, "node", node_dir / "crash_holder.js", inbox, prologue=False)
        holder.expect("locked")
        assert holder.join(10) == -9, holder.stderr()
        ahead = lock.stat().st_mtime - time.time()
        if ahead > 0.4:
            break
        lock.rmdir()
    assert ahead > 0.4, "proper-lockfile never set its lock's mtime ahead of the clock"
    start = time.monotonic()
    Mailbox(team, TEAM).send("bob", "after the crash", sender="alice")
    took = time.monotonic() - start
    assert STALE_AFTER - 0.5 < took < OUTLAST_STALE, f"took {took:.1f}s; the lock was {ahead:.2f}s ahead"
    assert set(texts(inbox)) == {"after the crash"}
