#!/usr/bin/env python3
"""Count how often swarm opens team files to read them: one ``swarm demo``, and a team of N reporting to its lead.

    .venv/bin/python scripts/count_opens.py [--sizes 4,8] [--messages 3] [--no-demo] [--keep DIR]

Every process is traced with ``strace -f -e trace=openat,execve,clone,...``
(children and forks included: the CLI server, its forked teammates, tmux).
What is counted is ``openat`` of a team's ``config.json`` and of its
``activity/<name>.json`` files for reading (``O_RDONLY``; a writer's temp
files and lock files are not reads); "(locked)" is how many of the
config.json reads were made holding the file's lock (read-modify-write,
which always reads the file itself). Each is attributed to a process kind:

lead        the command's own process (``swarm demo`` / ``swarm up``) and its threads
teammate    a process that wrote a teammate's activity record (its temp file),
            whether exec'd or forked from the CLI server
cli-server  the CLI server (``swarm.cli.forkserver``) and forks of it that ran no teammate
other       anything else (launchers, git, tmux)

"Messages to the lead" in a team run is the reports its teammates were told
to send (N teammates x ``--messages``; each also sends the same number of
idle notifications and one shutdown answer). The per-message figures divide
the lead's opens by that number. The writes of the lead's inbox by other
processes (``inboxes/team-lead.json`` temp files) are shown beside it, and are
the demo's only count: group commit folds messages sent at once into one
write, more often the more teammates there are, so writes are no measure of
messages across team sizes.

Scenarios:

demo        ``swarm demo --backend subprocess`` (the lead model, an implementer, a tester)
team N      ``swarm up --headless --offline`` of a generated team of N teammates,
            each of which sends the lead ``--messages`` messages and finishes

Needs ``strace``. Prints a table; exits 0 whatever the figures. Every
process runs the swarm that ``import swarm`` finds, so a figure for another
checkout (the one before a change) is ``PYTHONPATH=<checkout>
.venv/bin/python scripts/count_opens.py``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from benchtable import Figure, print_table

SWARM = Path(sys.executable).with_name("swarm")
LINE = re.compile(r"^(\d+)\s+(.*)$")
OPENAT = re.compile(r'openat\([^,]+, "([^"]+)", ([A-Z_|]+)')
EXECVE = re.compile(r'execve\("[^"]+", \[(.*?)\]')
CLONE = re.compile(r"^(?:clone3?|fork|vfork)\(.*= (\d+)$")
RESUMED_CLONE = re.compile(r"^<\.\.\. (?:clone3?|fork|vfork) resumed>.*= (\d+)$")


@dataclass
class Figures:
    """Read-opens of team files in one traced run, by process kind."""

    config: Counter[str] = field(default_factory=Counter)
    locked: Counter[str] = field(default_factory=Counter)
    """Of the config.json reads, those made holding its lock (a read-modify-write: always from disk)."""
    activity: Counter[str] = field(default_factory=Counter)
    lead_messages: int = 0
    """Writes of the lead's inbox by others: one per message, or per batch of messages committed together."""
    delivered: int = 0
    """The reports teammates were told to send the lead (each its ``--messages``; its idle notifications and its
    shutdown answer come on top, the same number for every teammate); 0: not counted (the demo)."""
    teammates: int = 0


def trace(command: list[str], env: dict[str, str], out: Path, cwd: Path | None = None) -> Path:
    """Run ``command`` under ``strace -f``; the trace file."""
    log = out / "trace.strace"
    done = subprocess.run(["strace", "-f", "-qq", "-s", "200", "-o", str(log),
                           "-e", "trace=openat,execve,clone,clone3,fork,vfork", "--", *command],
                          env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    (out / "command.out").write_text(done.stdout)
    if done.returncode != 0:
        print(f"  ! {' '.join(command[:3])} exited {done.returncode}; its output is in {out / 'command.out'}",
              file=sys.stderr)
    return log


def count(log: Path) -> Figures:
    """Attribute every read-open of a config.json / activity file in ``log`` to its process kind."""
    kind: dict[int, str] = {}
    parent: dict[int, int] = {}
    group: dict[int, int] = {}
    """thread id -> its process (thread group) id."""
    threading: dict[int, bool] = {}
    """pid -> whether the clone it has in flight makes a thread."""
    root: int | None = None
    teammates: set[int] = set()
    opens: list[tuple[int, str, bool]] = []
    holding: set[int] = set()
    """Threads that opened a config.json lock and have not read the file since."""
    lead_inbox_writers: list[int] = []
    for raw in log.read_text(errors="replace").splitlines():
        matched = LINE.match(raw)
        if not matched:
            continue
        tid, call = int(matched.group(1)), matched.group(2)
        if root is None:
            root = tid
        pid = group.get(tid, tid)
        if call.startswith(("clone", "fork", "vfork")):
            threading[tid] = "CLONE_THREAD" in call
        clone = CLONE.match(call) or RESUMED_CLONE.match(call)
        if clone:
            child = int(clone.group(1))
            if threading.pop(tid, False):
                group[child] = pid
            else:
                parent[child] = pid
            continue
        exe = EXECVE.match(call)
        if exe and call.rstrip().endswith("= 0"):
            kind[pid] = ("cli-server" if "swarm.cli.forkserver" in exe.group(1)
                         else "lead" if pid == root else "other")
            continue
        opened = OPENAT.match(call.replace("<unfinished ...>", ""))
        if not opened:
            continue
        path, flags = opened.group(1), opened.group(2)
        if "/activity/" in path and ".tmp" in path and "O_CREAT" in flags:
            teammates.add(pid)
        elif "/inboxes/team-lead.json.tmp" in path and "O_CREAT" in flags:
            lead_inbox_writers.append(pid)
        elif path.endswith("/config.json.lock.swarm"):
            holding.add(tid)
        elif "O_RDONLY" in flags and (path.endswith("/config.json") or
                                      ("/activity/" in path and path.endswith(".json"))):
            locked = path.endswith("/config.json") and tid in holding
            holding.discard(tid)
            opens.append((pid, path, locked))

    def kind_of(pid: int) -> str:
        if pid in teammates:
            return "teammate"
        probe: int | None = pid
        while probe is not None:
            if probe in kind:
                return kind[probe]
            probe = parent.get(probe)
        return "other"

    figures = Figures(teammates=len(teammates))
    for pid, path, locked in opens:
        (figures.config if path.endswith("/config.json") else figures.activity)[kind_of(pid)] += 1
        figures.locked[kind_of(pid)] += locked
    figures.lead_messages = sum(1 for pid in lead_inbox_writers if kind_of(pid) != "lead")
    return figures


def run_demo(work: Path) -> Figures:
    out = work / "demo"
    out.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(SWARM_HOME=str(out / "home"), SWARM_CLI_SERVER_IDLE="2")
    return count(trace([str(SWARM), "demo", "--backend", "subprocess"], env, out))


PLAYBOOK = """
[[rules]]
on = "prompt"
match = 'report'
steps = [
{steps}
  {{ text = "done" }},
]
"""


def run_team(work: Path, size: int, messages: int) -> Figures:
    """``swarm up --headless`` of ``size`` teammates that each send the lead ``messages`` messages."""
    out = work / f"team-{size}"
    out.mkdir()
    steps = "\n".join(f'  {{ tool_calls = [{{ name = "SendMessage", input = {{ to = "team-lead", '
                      f'message = "report {n} from {{agent_name}}", summary = "report {n}" }} }}] }},'
                      for n in range(1, messages + 1))
    (out / "reporter.toml").write_text(PLAYBOOK.format(steps=steps))
    members = "\n".join(f'[[members]]\nname = "r{i}"\nprompt = "report to the lead"\nplaybook = "reporter.toml"\n'
                        for i in range(1, size + 1))
    (out / "team.toml").write_text(f'[team]\nname = "opens"\n\n[lead]\nshutdown_timeout = 15\n\n{members}')
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(SWARM_HOME=str(out / "home"), SWARM_CLI_SERVER_IDLE="2")
    command = [str(SWARM), "up", str(out / "team.toml"), "--headless", "--offline", "--timeout", "120",
               "--cwd", str(out)]
    figures = count(trace(command, env, out))
    figures.delivered = size * messages
    subprocess.run([str(SWARM), "team", "delete", "opens", "--force"], env=env, capture_output=True, check=False)
    return figures


def show(title: str, figures: Figures) -> None:
    kinds = sorted(set(figures.config) | set(figures.activity))
    print(f"{title}: {figures.delivered or figures.lead_messages} messages to the lead "
          f"({figures.lead_messages} writes of its inbox), {figures.teammates} teammate processes")
    print(f"  {'process':<11} {'config.json':>11} {'(locked)':>9} {'activity':>9}")
    for name in kinds:
        print(f"  {name:<11} {figures.config[name]:>11} {figures.locked[name]:>9} {figures.activity[name]:>9}")
    print(f"  {'total':<11} {sum(figures.config.values()):>11} {sum(figures.locked.values()):>9} "
          f"{sum(figures.activity.values()):>9}")
    if figures.delivered or figures.lead_messages:
        per = figures.delivered or figures.lead_messages
        print(f"  lead, per message to it: config.json {figures.config['lead'] / per:.1f}, "
              f"activity {figures.activity['lead'] / per:.1f}")


def lead_cost_table(teams: dict[int, Figures]) -> None:
    """The lead's opens per message to it by team size (``benchtable``): the goal is a cost that does not
    grow with the team, so each size is set against the smallest."""
    per = {size: ((f.activity["lead"] + f.config["lead"]) / f.delivered if f.delivered else None)
           for size, f in teams.items()}
    if not per:
        return
    smallest = min(per)
    base = per[smallest]
    def constant(value: float) -> bool:
        return base is not None and value <= max(1.2 * base, base + 0.5)

    figures = [Figure(f"lead: team-file and activity opens per message, team of {size}",
                      f"constant (<= 1.2x team of {smallest})" if size != smallest else "",
                      value, base if size != smallest else None, digits=1,
                      met=constant if size != smallest else None)
               for size, value in sorted(per.items())]
    print_table("count_opens: the lead's cost by team size", figures, notes=[
        "opens of config.json and activity/<name>.json for reading by the lead's process (strace -f), divided by "
        "the reports its teammates sent it (N x --messages; not the writes of its inbox, which group commit "
        "folds together more often the more teammates write at once)"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="4,8", help="team sizes for the `team N` scenario (empty: none)")
    parser.add_argument("--messages", type=int, default=3, help="messages each teammate sends the lead")
    parser.add_argument("--no-demo", action="store_true", help="skip the `swarm demo` scenario")
    parser.add_argument("--keep", type=Path, help="keep the traces and homes under this directory")
    args = parser.parse_args()
    if shutil.which("strace") is None:
        print("count_opens needs strace", file=sys.stderr)
        return 1
    work = Path(tempfile.mkdtemp(prefix="swarm-opens-", dir=args.keep))
    try:
        if not args.no_demo:
            show("swarm demo", run_demo(work))
        teams = {}
        for size in [int(s) for s in args.sizes.split(",") if s]:
            teams[size] = run_team(work, size, args.messages)
            show(f"team of {size}", teams[size])
        lead_cost_table(teams)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"traces kept in {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
