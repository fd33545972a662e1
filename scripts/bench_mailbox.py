#!/usr/bin/env python3
"""Benchmark swarm's inboxes against a baseline built like Claude Code's.

    .venv/bin/python scripts/bench_mailbox.py [--quick] [--dir DIR]

One run measures, side by side:

- delivery latency: send -> a receiver in another process, blocked waiting,
  has the message (swarm: a teammate's path, ``wait`` + ``pending``, the
  acknowledgement after; baseline: 1 s polling, marking read);
- throughput: 8 sender processes -> one inbox with a concurrent taker
  process, every id counted (no loss, no duplicates, per-sender order);
- per-message cost (send + take, one process) after 10 and after 10,000
  messages went through the same inbox;
- RSS of a process waiting on an inbox.

The baseline mimics Claude Code's design: the inbox is a JSON array rewritten
whole (in place) on every change, messages are never pruned (marked read
instead), the lock is a directory ``<file>.lock/`` made with ``mkdir`` and
retried after a random 5-100 ms, and the reader polls the file every second.
To compare like with like it fsyncs each rewrite, as swarm does, and its
throughput run sends as many messages as swarm's.

Figures are medians: the throughput of ``THROUGHPUT_BATCHES`` separate runs,
the per-message cost of batch medians. The table (figure / goal / swarm /
baseline / ratio, ``scripts/benchtable.py``) marks missed goals; the script
exits 0 either way.

``swarm (fsync=False)`` is a diagnostic column, not a configuration swarm
ships: the same code with ``LockedJsonFile(..., fsync=False)``, to show how
much of swarm's cost is the fsync of every write.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import random
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from benchtable import Figure, batch_medians, median_of, print_table

# swarm is imported only where a swarm inbox is opened, so a baseline child
# process carries no swarm/pydantic memory and its RSS is the baseline's own.

TEAM = "bench"
AGENT = "bob"
IMPLS = ("swarm", "swarm-nofsync", "baseline")
LABELS = {"swarm": "swarm", "swarm-nofsync": "swarm (fsync=False)", "baseline": "baseline (CC-style)"}
BASELINE_POLL = 1.0
SENDERS = 8
THROUGHPUT_BATCHES = 3


@dataclass(frozen=True)
class Sizes:
    latency: int
    latency_baseline: int
    per_sender: int
    per_sender_baseline: int
    cost_after: int
    cost_samples: int


FULL = Sizes(latency=200, latency_baseline=20, per_sender=250, per_sender_baseline=250,
             cost_after=10_000, cost_samples=200)
QUICK = Sizes(latency=50, latency_baseline=5, per_sender=50, per_sender_baseline=50,
              cost_after=1_000, cost_samples=50)


# -- the two inbox implementations ----------------------------------------------------


class Inbox(Protocol):
    def send(self, text: str, sender: str) -> None: ...

    def take(self) -> list[str]:
        """Texts not yet delivered, now marked delivered."""
        ...

    def receive(self, timeout: float) -> list[str]:
        """Block (as the implementation does) until something arrives; take it."""
        ...


class SwarmInbox:
    def __init__(self, root: Path, fsync: bool = True) -> None:
        from swarm.core.document_codecs import InboxCodec
        from swarm.core.home import Home
        from swarm.core.jsonfile import LockedJsonFile
        from swarm.core.mailbox import Mailbox

        class NoFsyncMailbox(Mailbox):
            """Diagnostic only: swarm's mailbox with fsync switched off (takes and group-committed sends)."""

            def _file(self, agent: str) -> Any:
                return LockedJsonFile(self.home.inbox_path(self.team, agent), InboxCodec(), fsync=False)

            def _appending(self, agent: str, shared: bool) -> Any:
                spooled = super()._appending(agent, shared)
                spooled.file.fsync = False
                return spooled

        home = Home(root)
        self.path = home.inbox_path(TEAM, AGENT)
        self.mb = Mailbox(home, TEAM) if fsync else NoFsyncMailbox(home, TEAM)
        self._watcher: Any = None
        self._unacked: list[str] = []

    @staticmethod
    def setup(root: Path) -> None:
        from swarm.core.home import Home
        from swarm.core.protocol import Member
        from swarm.core.teams import TeamStore

        store = TeamStore(Home(root))
        store.create(TEAM, cwd=str(root))
        store.add_member(TEAM, Member(agent_id=f"{AGENT}@{TEAM}", name=AGENT))

    def send(self, text: str, sender: str) -> None:
        self.mb.send(AGENT, text, sender=sender)

    def take(self) -> list[str]:
        return [e.text for e in self.mb.take(AGENT)]

    def receive(self, timeout: float) -> list[str]:
        """A teammate's delivery path: wait -> read the pending entries (in hand) -> acknowledge.

        The acknowledgement (the locked prune) of one batch happens before
        waiting for the next, so the "in hand" time does not include it.
        """
        from swarm.core.mailbox import delivery_key

        if self._watcher is None:
            self._watcher = self.mb.watcher(AGENT)
        if self._unacked:
            self.mb.acknowledge(AGENT, self._unacked)
            self._unacked = []
        self.mb.wait(AGENT, timeout, watcher=self._watcher)
        entries = self.mb.pending(AGENT)
        self._unacked = [delivery_key(e) for e in entries]
        return [e.text for e in entries]


class BaselineInbox:
    """Claude-Code-style: whole-file rewrite, never pruned, mkdir lock, 1 s polling."""

    STALE_AFTER = 10.0

    def __init__(self, root: Path) -> None:
        self.path = root / "inboxes" / f"{AGENT}.json"
        self.lock_dir = Path(f"{self.path}.lock")
        self.rng = random.Random()
        self._next_poll = time.monotonic()

    @staticmethod
    def setup(root: Path) -> None:
        (root / "inboxes").mkdir(parents=True, exist_ok=True)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        while True:
            try:
                self.lock_dir.mkdir()
                break
            except FileExistsError:
                with contextlib.suppress(FileNotFoundError):
                    if time.time() - self.lock_dir.stat().st_mtime > self.STALE_AFTER:
                        self.lock_dir.rmdir()
                        continue
                time.sleep(self.rng.uniform(0.005, 0.100))
        try:
            yield
        finally:
            self.lock_dir.rmdir()

    def _load(self) -> list[dict[str, Any]]:
        try:
            return json.loads(self.path.read_text())
        except FileNotFoundError:
            return []

    def _store(self, doc: list[dict[str, Any]]) -> None:
        with self.path.open("w") as f:  # in place and whole, like fs.writeFile
            f.write(json.dumps(doc))
            f.flush()
            os.fsync(f.fileno())  # durable like swarm's writes, so the comparison is like for like

    def send(self, text: str, sender: str) -> None:
        entry = {"from": sender, "text": text, "summary": text[:40], "timestamp": now_iso(),
                 "color": "blue", "msgV": 1, "msg_id": str(uuid.uuid4()), "type": "message", "read": False}
        with self._locked():
            doc = self._load()
            doc.append(entry)
            self._store(doc)

    def take(self) -> list[str]:
        with self._locked():
            doc = self._load()
            unread = [e for e in doc if not e["read"]]
            for e in unread:
                e["read"] = True
            if unread:
                self._store(doc)
        return [e["text"] for e in unread]

    def receive(self, timeout: float) -> list[str]:
        deadline = time.monotonic() + timeout
        while True:
            time.sleep(max(0.0, self._next_poll - time.monotonic()))
            self._next_poll += BASELINE_POLL
            got = self.take()
            if got or time.monotonic() >= deadline:
                return got

    def seed_read(self, count: int) -> None:
        """The state after ``count`` delivered messages: all still there, marked read."""
        doc = [{"from": "old", "text": f"old-{i}", "summary": "old", "timestamp": now_iso(), "color": "blue",
                "msgV": 1, "msg_id": str(uuid.uuid4()), "type": "message", "read": True} for i in range(count)]
        with self._locked():
            self._store(self._load() + doc)


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())


def open_inbox(impl: str, root: Path) -> Inbox:
    if impl == "baseline":
        return BaselineInbox(root)
    return SwarmInbox(root, fsync=impl == "swarm")


def setup_root(impl: str, root: Path) -> None:
    (BaselineInbox if impl == "baseline" else SwarmInbox).setup(root)


# -- child processes ----------------------------------------------------------------------


def say(*words: object) -> None:
    print(*words, flush=True)


def role_receiver(inbox: Inbox) -> None:
    """Latency: report the monotonic time each message is in hand."""
    say("ready")
    while True:
        for text in inbox.receive(30.0):
            say("got", text, time.monotonic_ns())


def _cpu_s() -> float:
    """This process's user and system CPU so far, in seconds."""
    times = os.times()
    return times.user + times.system


def role_sender(inbox: Inbox, index: int, count: int) -> None:
    say("ready")
    sys.stdin.readline()
    began = _cpu_s()  # from the go: not the interpreter's start-up and imports
    for j in range(count):
        inbox.send(f"s{index}-m{j}", sender=f"s{index}")
    say("done", time.monotonic_ns(), _cpu_s() - began)


def role_taker(inbox: Inbox, expected: int, deadline_s: float) -> None:
    """Throughput: drain until every id is seen; report counts and the finish time."""
    seen: list[str] = []
    say("ready")
    began = _cpu_s()
    deadline = time.monotonic() + deadline_s
    while len(seen) < expected and time.monotonic() < deadline:
        seen.extend(inbox.receive(1.0))
    finished = time.monotonic_ns()
    by_sender: dict[str, list[int]] = {}
    for text in seen:
        s, m = text.split("-m")
        by_sender.setdefault(s, []).append(int(m))
    result = {"received": len(seen), "unique": len(set(seen)), "finished_ns": finished, "cpu_s": _cpu_s() - began,
              "in_order": all(v == sorted(v) for v in by_sender.values())}
    say("result", json.dumps(result, separators=(",", ":")))


def run_role(args: argparse.Namespace) -> None:
    inbox = open_inbox(args.impl, Path(args.root))
    if args.role == "receiver":
        role_receiver(inbox)
    elif args.role == "sender":
        role_sender(inbox, args.index, args.count)
    else:
        role_taker(inbox, args.count, args.deadline)


@dataclass
class Child:
    proc: subprocess.Popen[bytes]
    buffer: bytes = b""

    def line(self, timeout: float) -> list[str]:
        """Next stdout line, split into words."""
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self.proc.stdout], [], [], remaining)[0]:
                raise TimeoutError(f"child {self.proc.args[3:]} silent for {timeout:g}s")
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                raise RuntimeError(f"child {self.proc.args[3:]} exited (rc {self.proc.wait()})")
            self.buffer += chunk
        raw, self.buffer = self.buffer.split(b"\n", 1)
        return raw.decode().split(" ", 2)

    def expect(self, word: str, timeout: float) -> list[str]:
        words = self.line(timeout)
        if words[0] != word:
            raise RuntimeError(f"expected {word!r} from child, got {words!r}")
        return words

    def tell(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text.encode() + b"\n")
        self.proc.stdin.flush()


@dataclass
class Children:
    started: list[Child] = field(default_factory=list)

    def start(self, impl: str, root: Path, role: str, *extra: str) -> Child:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--role", role, "--impl", impl,
               "--root", str(root), *extra]
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True)
        child = Child(proc)
        self.started.append(child)
        return child

    def stop_all(self) -> None:
        for child in self.started:
            if child.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):  # already gone is fine
                    os.killpg(child.proc.pid, signal.SIGKILL)
            child.proc.wait()
        self.started.clear()


# -- measurements -------------------------------------------------------------------------------


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(pct / 100 * len(ordered)) - 1)]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def measure_latency(impl: str, root: Path, samples: int, children: Children) -> dict[str, float]:
    inbox = open_inbox(impl, root)
    receiver = children.start(impl, root, "receiver")
    receiver.expect("ready", 30)
    rng = random.Random(7)
    gap = (0.0, BASELINE_POLL) if impl == "baseline" else (0.005, 0.015)
    latencies, send_calls, rss = [], [], 0.0
    for i in range(samples):
        time.sleep(rng.uniform(*gap))  # receiver is back to waiting; baseline: random poll phase
        if i == samples // 2:
            rss = rss_mb(receiver.proc.pid)
        start = time.monotonic_ns()
        inbox.send(f"lat-{i}", sender="bench")
        send_calls.append((time.monotonic_ns() - start) / 1e6)
        _, text, stamp = receiver.expect("got", 10 + 2 * BASELINE_POLL)
        if text != f"lat-{i}":
            raise RuntimeError(f"receiver got {text!r}, expected lat-{i}")
        latencies.append((int(stamp) - start) / 1e6)
    return {"p50": statistics.median(latencies), "p99": percentile(latencies, 99), "n": samples, "rss": rss,
            "send_p50": statistics.median(send_calls)}


def measure_throughput(impl: str, root: Path, per_sender: int, children: Children) -> dict[str, Any]:
    expected = SENDERS * per_sender
    taker = children.start(impl, root, "taker", "--count", str(expected), "--deadline", "300")
    senders = [children.start(impl, root, "sender", "--index", str(i), "--count", str(per_sender))
               for i in range(SENDERS)]
    for child in [taker, *senders]:
        child.expect("ready", 60)
    go = time.monotonic_ns()
    for sender in senders:
        sender.tell("go")
    finished = [sender.expect("done", 300) for sender in senders]
    sent_done = max(int(done[1]) for done in finished)
    result = json.loads(taker.expect("result", 300 + 5)[1])
    lossless = result["received"] == result["unique"] == expected and result["in_order"]
    cpu_s = sum(float(done[2]) for done in finished) + result["cpu_s"]
    return {"n": expected, "lossless": lossless, "result": result, "cpu_ms": cpu_s * 1000 / expected,
            "sent_rate": expected / ((sent_done - go) / 1e9),
            "delivered_rate": expected / ((result["finished_ns"] - go) / 1e9)}


def throughput_batches(impl: str, root: Path, per_sender: int, children: Children) -> dict[str, Any]:
    """``THROUGHPUT_BATCHES`` runs, each on a fresh inbox; the median delivered rate, lossless only if all were."""
    runs = []
    for batch in range(THROUGHPUT_BATCHES):
        sub = root / f"batch-{batch}"
        setup_root(impl, sub)
        runs.append(measure_throughput(impl, sub, per_sender, children))
        children.stop_all()
    return {"n": runs[0]["n"], "lossless": all(r["lossless"] for r in runs),
            "delivered_rate": median_of([r["delivered_rate"] for r in runs]),
            "sent_rate": median_of([r["sent_rate"] for r in runs]),
            "cpu_ms": median_of([r["cpu_ms"] for r in runs]),
            "rates": [round(r["delivered_rate"]) for r in runs]}


def _round_trip_ms(inbox: Inbox, count: int, tag: str, batches: int = 5) -> float:
    """Median of ``batches`` batch medians."""
    times = []
    for i in range(count):
        start = time.perf_counter()
        inbox.send(f"{tag}-{i}", sender="bench")
        got = inbox.take()
        times.append((time.perf_counter() - start) * 1000)
        if got != [f"{tag}-{i}"]:
            raise RuntimeError(f"round trip lost or duplicated a message: {got!r}")
    return median_of(batch_medians(times, batches))


def measure_cost(impl: str, root: Path, after: int, samples: int, batches: int = 5) -> dict[str, float]:
    """Send+take on an inbox ``after`` messages have gone through, against a fresh inbox (10 messages through
    it) measured in the same moments: batches taken in turn, so the disk's and the machine's drift over the
    ``after`` messages' seconds (fsync and rename times move by a third) falls on both alike."""
    inbox = open_inbox(impl, root)
    _round_trip_ms(inbox, 10, "warm")
    if isinstance(inbox, BaselineInbox):
        inbox.seed_read(after - 10)  # never pruned: same file as after `after` deliveries
        samples = min(samples, 30)  # each one rewrites megabytes
    else:
        _round_trip_ms(inbox, after - 10, "fill")  # really push them through
    setup_root(impl, root / "fresh")
    fresh = open_inbox(impl, root / "fresh")
    _round_trip_ms(fresh, 10, "warm")
    per_batch = max(1, samples // batches)
    early_batches, late_batches = [], []
    for batch in range(batches):
        early_batches.append(_round_trip_ms(fresh, per_batch, f"early{batch}", batches=1))
        late_batches.append(_round_trip_ms(inbox, per_batch, f"late{batch}", batches=1))
    early, late = median_of(early_batches), median_of(late_batches)
    size = inbox.path.stat().st_size  # type: ignore[attr-defined]
    return {"early": early, "late": late, "ratio": late / early, "file_kb": size / 1024}


# -- report ---------------------------------------------------------------------------------------


def report(sizes: Sizes, lat: dict[str, Any], thr: dict[str, Any], cost: dict[str, Any], quick: bool) -> None:
    s, b, nf = "swarm", "baseline", "swarm-nofsync"
    ratio = thr[s]["delivered_rate"] / thr[b]["delivered_rate"]
    figures = [
        Figure("latency p50: send -> waiting receiver has it", "<= 2 ms", lat[s]["p50"], lat[b]["p50"], " ms",
               met=lambda v: v <= 2),
        Figure("latency p99", "<= 20 ms", lat[s]["p99"], lat[b]["p99"], " ms", met=lambda v: v <= 20),
        Figure(f"{SENDERS} writers -> 1 inbox, delivered, lossless (median of {THROUGHPUT_BATCHES} runs)",
               ">= 6x baseline", thr[s]["delivered_rate"], thr[b]["delivered_rate"], " msg/s", digits=0,
               met=lambda v: thr[s]["lossless"] and thr[b]["lossless"] and ratio >= 6,
               floor=(os.cpu_count() or 1) * 1000 / thr[s]["cpu_ms"],
               floor_why=f"the most {SENDERS} writers and a taker can deliver when they share "
                         f"{os.cpu_count()} cores at the CPU they spent per message in the same runs "
                         f"({thr[s]['cpu_ms']:.2f} ms: their user+system time over the messages; the baseline spent "
                         f"{thr[b]['cpu_ms']:.2f} ms); the fsyncs' waits are not in it, so it is a ceiling, not a "
                         "forecast",
               note=f"{SENDERS}x{sizes.per_sender} messages each side; runs: swarm {thr[s]['rates']}, "
                    f"baseline {thr[b]['rates']}; lossless, no duplicates, in order: "
                    f"swarm {'yes' if thr[s]['lossless'] else 'NO'}, baseline {'yes' if thr[b]['lossless'] else 'NO'}"),
        Figure("send+take after 10 messages", "", cost[s]["early"], cost[b]["early"], " ms", digits=3),
        Figure(f"send+take after {sizes.cost_after:,} messages", "", cost[s]["late"], cost[b]["late"], " ms",
               digits=3),
        Figure(f"cost growth, after {sizes.cost_after:,} / after 10", "<= 1.5x", cost[s]["ratio"], cost[b]["ratio"],
               "x", met=lambda v: v <= 1.5,
               note="baseline: an inbox seeded with that many read entries (it never prunes); swarm sent and took "
                    "them all; each against a fresh inbox measured in turn with it, batch by batch"),
        Figure("RSS of a process waiting on an inbox", "", lat[s]["rss"], lat[b]["rss"], " MiB", digits=1),
    ]
    with_fsync = (cost[s]["early"] + cost[s]["late"]) / 2
    without = (cost[nf]["early"] + cost[nf]["late"]) / 2
    print_table(f"bench_mailbox ({'--quick' if quick else 'full'})", figures, notes=[
        f"latency samples: swarm {sizes.latency}, baseline {sizes.latency_baseline} (it polls once a second)",
        "per-message costs are medians of 5 batch medians",
        f"diagnostic, swarm with fsync off (not a shipped setting): latency p50 {lat[nf]['p50']:.2f} ms, "
        f"{thr[nf]['delivered_rate']:.0f} msg/s, send+take {without:.3f} ms against {with_fsync:.3f} ms with fsync "
        f"(fsync is {max(0.0, 1 - without / with_fsync):.0%} of it)",
    ])


def bench(quick: bool, parent: Path | None) -> None:
    sizes = QUICK if quick else FULL
    work = Path(tempfile.mkdtemp(prefix="swarm-bench-", dir=parent))
    children = Children()
    lat: dict[str, Any] = {}
    thr: dict[str, Any] = {}
    cost: dict[str, Any] = {}
    steps: list[tuple[str, Callable[[str, Path], None]]] = [
        ("latency", lambda c, r: lat.__setitem__(c, measure_latency(
            c, r, sizes.latency_baseline if c == "baseline" else sizes.latency, children))),
        ("throughput", lambda c, r: thr.__setitem__(c, throughput_batches(
            c, r, sizes.per_sender_baseline if c == "baseline" else sizes.per_sender, children))),
        ("cost", lambda c, r: cost.__setitem__(c, measure_cost(c, r, sizes.cost_after, sizes.cost_samples))),
    ]
    try:
        for step, run in steps:
            for impl in IMPLS:
                root = work / f"{step}-{impl}"
                setup_root(impl, root)
                started = time.monotonic()
                run(impl, root)
                children.stop_all()
                print(f"  {step:<10} {LABELS[impl]:<20} {time.monotonic() - started:6.1f}s", flush=True)
    finally:
        children.stop_all()
        shutil.rmtree(work, ignore_errors=True)
    report(sizes, lat, thr, cost, quick)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (about 20 s)")
    parser.add_argument("--dir", type=Path, default=None, help="where to put the scratch homes (default: $TMPDIR)")
    parser.add_argument("--role", choices=["receiver", "sender", "taker"], help=argparse.SUPPRESS)
    parser.add_argument("--impl", choices=IMPLS, help=argparse.SUPPRESS)
    parser.add_argument("--root", help=argparse.SUPPRESS)
    parser.add_argument("--index", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--count", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--deadline", type=float, default=300.0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role:
        run_role(args)
    else:
        bench(args.quick, args.dir)


if __name__ == "__main__":
    main()
