"""Round trip through a real teammate: the lead sends, the teammate's model answers with SendMessage.

    python scripts/bench_roundtrip.py [--quick]

What is timed is the real path a message takes: ``swarm send``'s mailbox
write, the teammate process waking on the inbox event, its delivery (the
durable transcript record, the prune), its status updates, a turn of the agent
loop on the offline scripted model, SendMessage into the lead's inbox, and the
lead waking on that; the next ping goes as soon as the answer is in. Baseline,
in the same run: a bare Python process that only waits, takes and answers
through the same ``Mailbox`` (no agent loop, no transcript, no status): the
floor the teammate's own work sits on. The teammate, the echo and the floor
echo (``FLOOR``) are all running from the start and answer in turn, a batch
each, so a load that comes and goes during the run falls on each alike.

Back to back (the next ping as soon as the answer is in) and in the gap
mode (``GAP``, 10 ms, between an answer and the next ping), each with p50
and p99, for the teammate and the echo alike.

Also measured: the same round trip after the teammate's conversation has
grown by ``--grow`` turns (cost should stay flat; the conversation is
compacted on the way when it nears the model's window), and the teammate's
RSS early and late, its PSS and USS early. Prints the figure / goal / swarm / baseline / ratio table
(``scripts/benchtable.py``); p50s are medians of batch medians; exits 0
whatever the figures (benchmarks report, tests check).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil
from benchtable import Figure, batch_medians, median_of, print_table, stop_cli_server

from swarm.agent.transcript import Transcript
from swarm.core.clock import iso_to_epoch
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.names import LEAD_NAME
from swarm.core.protocol import Member
from swarm.core.teams import TeamStore
from swarm.runtime.shutdown import shutdown
from swarm.runtime.spawn import SpawnRequest, spawn, wait_joined
from swarm.teammate.shared_worker import SHARED_COMM

PLAYBOOK = r"""
[[rules]]
match = 'ping (?P<n>\d+)'
[[rules.steps]]
tool_calls = [{ name = "SendMessage", input = { to = "team-lead", message = "pong {n}" } }]
[[rules.steps]]
text = "answered {n}"
"""

BATCHES = 5
FLOOR_WHY = ("an echo making the durable writes a teammate must make per ping, and nothing else (``FLOOR``: the "
             "fsynced delivery record before acting, the answer, the idle_notification every turn ends with, the "
             "prune): the next ping waits behind the last two, as the teammate's does; each is an fsync of the "
             "lead's or its own inbox, none droppable (an acknowledged send is durable, an unsynced prune could "
             "lose an inbox in a crash, the idle notification is Claude Code's protocol)")
GAP = 0.010
"""Seconds between an answer and the next ping in the gap mode."""

ANSWER_WAIT = 30.0
"""Seconds the lead waits for an answer before the run stops with an error (never a hang)."""

STAMP_CENTRE = 0.0005
"""An entry's stamp is cut to its millisecond (``now_iso``): the instant it stands for is, on average,
half a millisecond later. Added, so "acts" is not understated by that half millisecond (nor its baseline)."""

BARE = r"""
import sys
from pathlib import Path
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
mailbox = Mailbox(Home(Path(sys.argv[1])), sys.argv[2])
watcher = mailbox.watcher("bare")
while True:
    if not mailbox.pending("bare"):
        watcher.wait(3600)
        continue
    for entry in mailbox.take("bare"):
        if entry.text == "stop":
            sys.exit(0)
        mailbox.send("team-lead", entry.text.replace("ping", "pong"), sender="bare")
"""


FLOOR = r"""
import sys
from pathlib import Path
from swarm.core.clock import now_iso
from swarm.core.frames import IdleNotification
from swarm.core.home import Home
from swarm.core.jsonl import Appender
from swarm.core.mailbox import Mailbox, delivery_key
mailbox = Mailbox(Home(Path(sys.argv[1])), sys.argv[2])
record = Appender(Path(sys.argv[3]))
watcher = mailbox.watcher("floor")
while True:
    entries = mailbox.pending("floor")
    if not entries:
        watcher.wait(3600)
        continue
    keys = [delivery_key(e) for e in entries]
    record.append({"delivered": keys, "texts": [e.text for e in entries]}, durable=True)
    for entry in entries:
        if entry.text == "stop":
            sys.exit(0)
        mailbox.send("team-lead", entry.text.replace("ping", "pong"), sender="floor")
    mailbox.send_frame("team-lead", IdleNotification(sender="floor", timestamp=now_iso(), idle_reason="available"),
                       sender="floor", summary="idle")
    mailbox.acknowledge("floor", keys)
"""
"""The floor under a teammate's act: an echo that makes the durable writes a teammate must make per ping, in
its order, and nothing else: the delivery record (fsynced before anything is acted on), the answer, the
``idle_notification`` every turn ends with (Claude Code's protocol) and the prune of the inbox."""


@dataclass(frozen=True)
class PingTeam:
    """A scratch home with a team to ping: its work dir, the ping playbook, the environment for its processes."""

    home: Home
    work: Path
    book: Path
    env: dict[str, str]


def ping_team(root: Path, team: str, echoes: tuple[str, ...]) -> PingTeam:
    """Team ``team`` in a home under ``root``, with ``echoes`` as members (plain processes answer for them); the
    environment has ``SWARM_HOME`` set and no ``ANTHROPIC_`` variables (the teammates run the scripted model)."""
    home = Home(root / "home")
    work = root / "work"
    work.mkdir()
    book = root / "ping.toml"
    book.write_text(PLAYBOOK)
    TeamStore(home).create(team)
    for echo in echoes:
        TeamStore(home).add_member(team, Member(agent_id=f"{echo}@{team}", name=echo, is_active=True))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env["SWARM_HOME"] = str(home.root)
    return PingTeam(home, work, book, env)


@dataclass
class Trips:
    """Round trips, each: ms from the lead's send to the answer in the lead's inbox, and to the answer's stamp."""

    total: list[float] = field(default_factory=list)
    acted: list[float] = field(default_factory=list)
    cpu_ms: float = 0.0
    """CPU (user + system) the answering process spent over these round trips, when it was measured."""

    def add(self, more: Trips) -> None:
        self.total += more.total
        self.acted += more.acted
        self.cpu_ms += more.cpu_ms

    @property
    def cpu_per_trip(self) -> float:
        return self.cpu_ms / max(1, len(self.total))

    def p50(self, which: str = "total") -> float:
        return median_of(batch_medians(getattr(self, which), BATCHES))

    def p99(self, which: str = "total") -> float:
        ordered = sorted(getattr(self, which))
        return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def _round_trips(mailbox: Mailbox, name: str, count: int, start: int = 0, gap: float = 0.0,
                 answerer: psutil.Process | None = None) -> Trips:
    """``count`` round trips to ``name`` (its answer: ``pong <n>``), the next ping as soon as the answer is in
    (``gap`` s after it: the gap mode, where each ping finds the teammate asleep and its caches cold).
    ``answerer``: the answering process, whose CPU over the round trips is counted (``Trips.cpu_ms``).

    An answer that does not come within ``ANSWER_WAIT`` stops the run with an error, never a hang.
    """
    watcher = mailbox.watcher(LEAD_NAME)
    trips = Trips()
    before = _cpu_ms(answerer)
    try:
        for n in range(start, start + count):
            sent_at = time.time()
            began = time.perf_counter()
            mailbox.send(name, f"ping {n}", sender=LEAD_NAME)
            deadline = time.monotonic() + ANSWER_WAIT
            while not (answer := [e for e in mailbox.read(LEAD_NAME) if e.text == f"pong {n}"]):
                if time.monotonic() > deadline:
                    raise SystemExit(f"bench_roundtrip: {name} did not answer 'ping {n}' within {ANSWER_WAIT:g}s")
                watcher.wait(1.0)
            trips.total.append((time.perf_counter() - began) * 1000)
            stamped = (iso_to_epoch(answer[0].timestamp) or sent_at) + STAMP_CENTRE
            trips.acted.append(max(0.0, (stamped - sent_at) * 1000))
            mailbox.take(LEAD_NAME)
            if gap:
                time.sleep(gap)
        trips.cpu_ms = _cpu_ms(answerer) - before
    finally:
        watcher.close()
    return trips


def _tree(process: psutil.Process) -> list[psutil.Process]:
    """``process`` and its children that are still there, and the shared delivery worker of the CLI server it was
    forked from: a teammate's delivery worker, its own or the server's, counts with it (here it is the only one)."""
    shared: list[psutil.Process] = []
    try:
        parent = process.parent()
        if parent is not None and "swarm.cli.forkserver" in parent.cmdline():
            shared = [child for child in parent.children() if child.name() == SHARED_COMM.decode()]
    except psutil.Error:
        pass
    return [process, *process.children(recursive=True), *shared]


def _cpu_ms(process: psutil.Process | None) -> float:
    """User plus system CPU ``process`` and its children have spent so far, in ms (0 when there is none)."""
    if process is None:
        return 0.0
    total = 0.0
    for each in _tree(process):
        try:
            times = each.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total * 1000


def _pss_uss(process: psutil.Process) -> tuple[float, float]:
    """PSS and USS of ``process`` with its children, in MiB."""
    infos = [each.memory_full_info() for each in _tree(process)]
    return sum(i.pss for i in infos) / 2**20, sum(i.uss for i in infos) / 2**20


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer round trips")
    parser.add_argument("--grow", type=int, default=0, help="turns of conversation before the late measurement")
    args = parser.parse_args()
    count = 40 if args.quick else 200
    grow = args.grow or (200 if args.quick else 2000)
    root = Path(tempfile.mkdtemp(prefix="swarm-bench-rt-"))
    try:
        scratch = ping_team(root, "rt", ("bare", "floor"))
        home, work, book, env = scratch.home, scratch.work, scratch.book, scratch.env
        mailbox = Mailbox(home, "rt")
        member = spawn(home, SpawnRequest(team="rt", name="mate", prompt="hello", cwd=work, backend="subprocess",
                                          playbook=book), env)
        bare = subprocess.Popen([sys.executable, "-c", BARE, str(home.root), "rt"], env=env)
        least = subprocess.Popen([sys.executable, "-c", FLOOR, str(home.root), "rt", str(root / "floor.jsonl")],
                                 env=env)
        try:
            wait_joined(home, "rt", ["mate"])
            for warm in ("mate", "bare", "floor"):  # imports done, the teammate's first turn behind it
                _round_trips(mailbox, warm, 5, start=100_000)
            joined = TeamStore(home).get("rt").member("mate") or member
            proc = psutil.Process(joined.worker_pid or joined.pid or 0)  # the teammate itself: a forked one's worker
            forked = joined.worker_pid is not None
            answerers = {"mate": proc, "bare": psutil.Process(bare.pid), "floor": psutil.Process(least.pid)}
            early, echo, floor, gapped, echo_gapped = Trips(), Trips(), Trips(), Trips(), Trips()
            size = count // BATCHES
            for batch in range(BATCHES):  # in turn, batch by batch: a load that comes and goes falls on all three
                order = [("mate", early), ("bare", echo), ("floor", floor)]
                for which, into in order[batch % 3:] + order[:batch % 3]:  # none always runs first
                    into.add(_round_trips(mailbox, which, size, start=batch * size, answerer=answerers[which]))
            for batch in range(BATCHES):
                for which, into in (("mate", gapped), ("bare", echo_gapped))[::1 if batch % 2 else -1]:
                    into.add(_round_trips(mailbox, which, size, start=150_000 + batch * size, gap=GAP))
            rss_early = proc.memory_info().rss / 2**20
            pss, uss = _pss_uss(proc)
            for n in range(0, grow, 50):
                _round_trips(mailbox, "mate", 50, start=200_000 + n)
            late = _round_trips(mailbox, "mate", count, start=300_000)
            rss_late = proc.memory_info().rss / 2**20
        finally:
            for echoing, process in (("bare", bare), ("floor", least)):
                mailbox.send(echoing, "stop", sender=LEAD_NAME)
                try:
                    process.wait(10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
            shutdown(home, "rt", ["mate"], env, timeout=10)
        records = Transcript(home.transcript_path("rt", "mate")).records()
        compactions = sum(r.get("kind") == "compaction" for r in records)
    finally:
        stop_cli_server(root / "home")  # the teammate's launcher started it (unless SWARM_CLI_SERVER=0)
        shutil.rmtree(root, ignore_errors=True)
    turns = grow + 3 * count + 5
    print_table(f"bench_roundtrip ({'--quick' if args.quick else 'full'}): lead -> real teammate -> lead", [
        Figure("lead -> teammate acts (its SendMessage reply stamped), p50, back to back", "<= 1.3x echo",
               early.p50("acted"), echo.p50("acted"), " ms", met=lambda v: v <= 1.3 * echo.p50("acted"),
               note="from the stamp of the reply entry: ms resolution, truncated, so +0.5 ms centres it",
               floor=floor.p50("acted"), floor_why=FLOOR_WHY),
        Figure("teammate acts, p99, back to back", "<= 2x echo", early.p99("acted"), echo.p99("acted"), " ms",
               met=lambda v: v <= 2 * echo.p99("acted"), floor=floor.p99("acted"), floor_why=FLOOR_WHY),
        Figure(f"teammate acts, p50, {GAP * 1000:g} ms between pings", "", gapped.p50("acted"),
               echo_gapped.p50("acted"), " ms"),
        Figure(f"teammate acts, p99, {GAP * 1000:g} ms between pings", "", gapped.p99("acted"),
               echo_gapped.p99("acted"), " ms"),
        Figure("  of which the teammate's own work (acts minus the echo's), p50", "", early.p50("acted")
               - echo.p50("acted"), None, " ms",
               note="the rest is the floor the echo measures: the lead's durable send and the wake-up"),
        Figure("  the answering process's CPU per ping (user + system), back to back", "",
               early.cpu_per_trip, echo.cpu_per_trip, " ms", floor=floor.cpu_per_trip,
               floor_why="the floor echo's CPU per ping (its durable writes and nothing else)",
               note="the teammate's process and its delivery worker (the process that fsyncs and prunes beside "
                    "the turn); the lead (this benchmark) spends its CPU beside them on the other core"),
        Figure("full round trip into the lead inbox, p50", "<= 4 ms", early.p50(), echo.p50(), " ms",
               met=lambda v: v <= 4),
        Figure("full round trip, p99", "<= 20 ms", early.p99(), echo.p99(), " ms", met=lambda v: v <= 20),
        Figure(f"full round trip, p50, {GAP * 1000:g} ms between pings", "", gapped.p50(), echo_gapped.p50(),
               " ms"),
        Figure(f"full round trip, p99, {GAP * 1000:g} ms between pings", "", gapped.p99(), echo_gapped.p99(),
               " ms"),
        Figure(f"round trip p50 after {grow:,} more turns", "", late.p50(), None, " ms"),
        Figure(f"round trip p99 after {grow:,} more turns", "<= 20 ms", late.p99(), None, " ms",
               met=lambda v: v <= 20),
        Figure(f"cost growth: p50 after {grow:,} more turns / early", "<= 1.5x", late.p50() / early.p50(), None,
               "x", met=lambda v: v <= 1.5,
               note=f"the teammate's conversation was compacted {compactions} time(s) on the way "
                    "(default window: the model's)"),
        Figure("teammate RSS, early", "", rss_early, None, " MiB", digits=1,
               note="the teammate's own process: " + ("forked from the CLI server (pages shared with it count)"
                                                      if forked else "its own interpreter (SWARM_CLI_SERVER=0)")),
        Figure(f"teammate RSS after {turns:,} turns", "<= 1.5x early", rss_late, rss_early, " MiB", digits=1,
               met=lambda v: v <= 1.5 * rss_early),
        Figure("teammate PSS, early", "", pss, None, " MiB", digits=1,
               note="PSS: its private pages plus its share of those it shares (with the CLI server it was forked "
                    "from and its siblings); the teammate's and its delivery worker's, added up"),
        Figure("teammate USS, early", "", uss, None, " MiB", digits=1,
               note="USS: the pages only it holds (teammate and delivery worker, added up)"),
    ], notes=[f"{count} round trips per figure; p50 = median of {BATCHES} batch medians; the teammate, the echo "
              "and the floor echo answer in turn, batch by batch, all three alive throughout (so the host's load "
              "at any moment falls on each alike)",
              "baseline: a bare Python process that waits, takes and answers through the same Mailbox "
              "(no agent loop, transcript or status): the floor under the teammate"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
