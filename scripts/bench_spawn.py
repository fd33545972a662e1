#!/usr/bin/env python3
"""Benchmark starting, idling and stopping teammates, per backend and team size.

    .venv/bin/python scripts/bench_spawn.py [--quick] [--backends tmux,subprocess]
                                            [--sizes 1,4,16] [--window S] [--no-profile]

For each backend and each N it spawns N teammates with ``swarm.runtime.spawn``
(one after another, as a lead does), running the offline scripted model (a
playbook written to a temp dir; ``ANTHROPIC_*`` removed from the environment
given to spawn), and measures:

ready      seconds from the first ``spawn()`` call until every teammate is
           ready. "Ready" is the stricter of the two possible readings: the
           member is ``is_active`` with status ``idle`` in the team file AND
           the ``idle_notification`` of its first turn (the answer to the
           initial prompt) is in the lead's inbox. The teammate writes the
           status before the notification, so this is the moment the last
           notification lands. The time at which every process had merely
           joined (status ``idle`` before the first turn) is in the details.
RSS / USS  per idle teammate (psutil ``memory_full_info``), mean and max, MB: the
           teammate's own process (a forked teammate's worker, not its launcher;
           the launchers' USS is in the details).
CPU        user+system CPU of all N idle teammates over a window (10 s,
           ``--quick`` 3 s), as % of one core.
shutdown   ``swarm.runtime.shutdown.shutdown`` of every teammate (timeout 30 s),
           wall time, and how many were approved (exited by themselves) or killed.
leftovers  teammate processes of this run's home (launchers, forked workers,
           unserved teammates: ``swarm.teammate.served.teammate_processes``),
           and tmux panes left on the private socket.

Each run is made twice, with the home's CLI server on (the default: every
teammate after the server is up is forked from it, ``swarm.teammate.served``:
a tmux teammate behind its pane's launcher, a subprocess teammate loose, with
no launcher) and off (``SWARM_CLI_SERVER=0``: every teammate its own interpreter), so the
template is measured against what it replaces in the same run. A cold run
with the server on starts with none running: its first teammate starts it.

tmux runs on a PRIVATE server (``-S <tmpdir>/tmux.sock``, started with
``-f /dev/null`` and a keep-alive session so the server's own start-up is not
charged to the first teammate; the keep-alive pane is not counted as a
leftover). The server is killed at the end.

A baseline row per N starts one bare interpreter per teammate with
``subprocess.Popen([python, "-c", "import os, time; os.write(1, b'r');
time.sleep(1e6)"])``: the floor for start-up, RSS and idle CPU of a Python
process (the one write tells the bench when the interpreter is up).

Unless ``--no-profile``, a profile follows: the import time of
``python -m swarm.teammate`` (``-X importtime``), the RSS a fresh interpreter
gains with each group of modules the teammate imports, which heavy packages an
idle teammate has loaded, and what ``anthropic`` / ``libtmux`` would add.

Everything (teammates, baseline processes, the tmux server, temp dirs) is
cleaned up on exit, Ctrl-C or error.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import platform
import re
import resource
import selectors
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil
from benchtable import Figure, median_of, start_cli_server, stop_cli_server
from benchtable import print_table as print_figure_table

from swarm.backends.procs import kill_tree
from swarm.cli.entry import server_pid
from swarm.backends.tmux_backend import TmuxBackend
from swarm.core.clock import iso_to_epoch
from swarm.core.frames import IdleNotification, entry_frame
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.names import LEAD_NAME
from swarm.core.teams import TeamStore
from swarm.runtime.spawn import SpawnRequest, spawn
from swarm.cli.forkserver import SPARE_NAME
from swarm.teammate.delivery_worker import COMM as DELIVERY_COMM
from swarm.teammate.shared_worker import SHARED_COMM
from swarm.teammate.served import COMM, teammate_processes

# -- targets ---------------------------------------------------------------------------

TARGET_READY_S = 3.0  # 16 teammates ready, on 2 cores
TARGET_RSS_MB = 40.0  # per idle teammate (max)
TARGET_CPU_PCT = 1.0  # all idle teammates together, % of one core
TARGET_SHUTDOWN_S = 2.0  # all of them
TARGET_LEFTOVERS = 0

SHUTDOWN_TIMEOUT = 30.0
SETTLE_S = 1.0
"""Pause between "all ready" and the memory/CPU measurements."""
KEEPALIVE_SESSION = "swarm-bench-keepalive"
MB = 1024 * 1024

PLAYBOOK = """\
# Offline script for bench_spawn.py: answer every message with one line of text.
# A shutdown request gets the same answer; the runtime then approves it.
[default]
text = '{agent_name}: got "{first_line}"'
"""

BASELINE_CODE = "import os, time; os.write(1, b'r'); time.sleep(1e6)"

log = logging.getLogger("bench_spawn")


# -- results ---------------------------------------------------------------------------


@dataclass
class Row:
    kind: str
    n: int
    start: str = ""
    """``cold`` (no warm-up, no tmux server running before) or ``warm``."""
    server: bool = True
    """The home's CLI server on (teammates forked from it) or off (``SWARM_CLI_SERVER=0``)."""
    forked: int = 0
    """How many of the teammates were forked from the server (named ``swarm-teammate``: loose, or a launcher's
    ``worker_pid``)."""
    launcher_uss: list[float] = field(default_factory=list)
    spawn_s: float | None = None
    ready_s: float | None = None
    ready_count: int = 0
    rss: list[float] = field(default_factory=list)
    uss: list[float] = field(default_factory=list)
    pss: list[float] = field(default_factory=list)
    """Per teammate process (a forked one's worker)."""
    total_pss: float | None = None
    """MiB: every process of the team together (workers, launchers, the CLI server and its spare; or the bare
    interpreters)."""
    model: str = "scripted"
    """``scripted`` (the offline model) or ``sdk`` (the real ``anthropic`` SDK against the tests' fake API)."""
    cpu_pct: float | None = None
    shutdown_s: float | None = None
    approved: int = 0
    killed: int = 0
    other: int = 0
    left_procs: int | None = None
    left_panes: int | None = None
    details: list[str] = field(default_factory=list)

    @property
    def baseline(self) -> bool:
        return self.kind == "baseline"

    @property
    def label(self) -> str:
        """``tmux cold server on``, ``baseline``: the row's name in the table and the details."""
        server = "" if self.baseline else ("server on" if self.server else "server off")
        return " ".join(part for part in (self.kind, self.start, server) if part)


@dataclass
class Context:
    root: Path
    home: Home
    workdir: Path
    playbook: Path
    env: dict[str, str]
    window: float
    run_id: str
    tmux_socket: Path | None = None
    tmux_bin: str | None = None
    sizes: list[int] = field(default_factory=list)
    baseline_procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    api_url: str | None = None
    """The fake Messages API (``tests/fakes/anthropic_server.py``) the ``sdk`` runs talk to."""


# -- helpers ---------------------------------------------------------------------------


def swarm_exe() -> str:
    """The ``swarm`` executable beside this interpreter (the venv's), else the one on PATH."""
    beside = Path(sys.executable).with_name("swarm")
    return str(beside) if beside.exists() else (shutil.which("swarm") or "swarm")


def spawn_env(home_root: Path) -> dict[str, str]:
    """The caller's environment without API keys or tmux/swarm context, SWARM_HOME set."""
    drop = {"TMUX", "TMUX_PANE", "SWARM_TEAM", "SWARM_TMUX_SOCKET"}
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_") and k not in drop}
    env["SWARM_HOME"] = str(home_root)
    return env


def teammate_procs(home: Home) -> list[psutil.Process]:
    """Live teammate processes of this home: launchers, forked workers and unserved teammates."""
    return teammate_processes(str(home.root))


def baseline_marker_procs(run_id: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmd = proc.info.get("cmdline") or []
        if any(f"bench-{run_id}" in part for part in cmd) and proc.info.get("status") != psutil.STATUS_ZOMBIE:
            found.append(proc)
    return found


def tmux(ctx: Context, *args: str, config: bool = False) -> subprocess.CompletedProcess[str]:
    assert ctx.tmux_bin and ctx.tmux_socket
    argv = [ctx.tmux_bin, *(["-f", "/dev/null"] if config else []), "-S", str(ctx.tmux_socket), *args]
    return subprocess.run(argv, capture_output=True, text=True, check=False, timeout=10)


def tmux_panes(ctx: Context) -> list[tuple[str, str]]:
    """(pane id, session) of every pane on the private server but the keep-alive one."""
    result = tmux(ctx, "list-panes", "-a", "-F", "#{pane_id} #{session_name}")
    if result.returncode != 0:
        return []  # no server: no panes
    panes = [tuple(line.split(" ", 1)) for line in result.stdout.splitlines() if line.strip()]
    return [(p[0], p[1] if len(p) > 1 else "") for p in panes if len(p) < 2 or p[1] != KEEPALIVE_SESSION]


def tmux_server_proc(ctx: Context) -> psutil.Process | None:
    result = tmux(ctx, "display-message", "-p", "-t", KEEPALIVE_SESSION, "#{pid}")
    with contextlib.suppress(ValueError, psutil.Error):
        return psutil.Process(int(result.stdout.strip()))
    return None


def memory(procs: list[psutil.Process]) -> tuple[list[float], list[float]]:
    rss, uss, _ = memory_pss(procs)
    return rss, uss


def delivery_workers(proc: psutil.Process) -> list[psutil.Process]:
    """The teammate ``proc``'s delivery worker (``swarm.teammate.delivery_worker``), if it runs."""
    with contextlib.suppress(psutil.Error):
        return [child for child in proc.children() if child.name() == DELIVERY_COMM.decode()]
    return []


def memory_pss(procs: list[psutil.Process]) -> tuple[list[float], list[float], list[float]]:
    """RSS, USS and PSS (MiB) of each process: PSS charges a page shared by k processes 1/k to each, so a
    sum of PSS is what the processes together cost the machine (forked teammates share the server's pages)."""
    rss, uss, pss = [], [], []
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            info = proc.memory_full_info()
            rss.append(info.rss / MB)
            uss.append(info.uss / MB)
            pss.append(getattr(info, "pss", info.uss) / MB)
    return rss, uss, pss


def cpu_seconds(proc: psutil.Process) -> float | None:
    try:
        times = proc.cpu_times()
    except psutil.Error:
        return None
    return times.user + times.system


def cpu_window(procs: list[psutil.Process], window: float,
               extra: psutil.Process | None = None) -> tuple[float | None, float | None]:
    """CPU of ``procs`` together (and of ``extra`` alone) over ``window`` s, % of one core."""
    every = [*procs, *([extra] if extra else [])]
    before = [cpu_seconds(p) for p in every]
    start = time.monotonic()
    time.sleep(window)
    elapsed = time.monotonic() - start
    after = [cpu_seconds(p) for p in every]
    deltas = [a - b if a is not None and b is not None else None for a, b in zip(after, before, strict=True)]
    ours = deltas[:len(procs)]
    total = None if any(d is None for d in ours) else sum(d for d in ours if d is not None)
    tmux_delta = deltas[-1] if extra else None
    pct = (lambda d: None if d is None else 100.0 * d / elapsed)
    return pct(total), pct(tmux_delta)


def reap(pids: list[int]) -> None:
    """Collect exited children of this process (subprocess teammates) so no zombie lingers."""
    for pid in pids:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)


def mean_max(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{statistics.fmean(values):.2f}/{max(values):.2f}"


# -- one swarm run -----------------------------------------------------------------------


def ready_names(home: Home, team: str, mailbox: Mailbox) -> tuple[set[str], set[str], dict[str, float]]:
    """(members idle and active, ready members, epoch of each first idle_notification)."""
    members = TeamStore(home).get(team).members
    idle = {m.name for m in members if m.name != LEAD_NAME and m.is_active and m.status == "idle"}
    notified: dict[str, float] = {}
    for entry in mailbox.read(LEAD_NAME):
        frame = entry_frame(entry)
        if isinstance(frame, IdleNotification) and frame.sender not in notified:
            notified[frame.sender] = iso_to_epoch(frame.timestamp) or time.time()
    return idle, idle & set(notified), notified


def joined_at(home: Home, team: str, name: str) -> float | None:
    path = home.transcript_path(team, name)
    with contextlib.suppress(OSError):
        for line in path.read_text().splitlines():
            with contextlib.suppress(ValueError):
                record = json.loads(line)
                if record.get("kind") == "event" and record.get("event") == "joined":
                    return iso_to_epoch(record.get("ts", ""))
    return None


def run_swarm(ctx: Context, backend: str, n: int, start: str = "warm", run: int = 0, server: bool = True,
              model: str = "scripted") -> Row:
    row = Row(backend, n, start, server, model=model)
    team = f"{backend}-{n}-{start}-{run}-{'on' if server else 'off'}-{model}"
    env = ctx.env if server else {**ctx.env, "SWARM_CLI_SERVER": "0"}
    playbook: Path | None = ctx.playbook
    if model == "sdk":  # the real SDK path: credentials and the fake API; the server preloads the SDK for them
        assert ctx.api_url is not None
        env = {**env, "ANTHROPIC_API_KEY": "bench-key", "ANTHROPIC_BASE_URL": ctx.api_url}
        playbook = None
    if start == "cold":
        stop_cli_server(ctx.home.root)  # cold: the first teammate finds no server and starts one
    elif server:
        if server_env(ctx.home) != ("ANTHROPIC_API_KEY" in env):
            stop_cli_server(ctx.home.root)  # a server started for the other model: its warm-up differs
        start_cli_server(ctx.home.root, env)  # warm: it runs already (kept when it does)
    TeamStore(ctx.home).create(team, cwd=str(ctx.workdir))
    mailbox = Mailbox(ctx.home, team)
    watcher = mailbox.watcher(LEAD_NAME)
    names = [f"w{i:02d}" for i in range(n)]
    socket = str(ctx.tmux_socket) if backend == "tmux" else None
    row.details.append("load average before the run: %.2f %.2f %.2f" % os.getloadavg())
    try:
        wall0 = time.time()
        t0 = time.perf_counter()
        for name in names:
            request = SpawnRequest(team=team, name=name, prompt=f"hello {name}, wait for work", backend=backend,
                                   cwd=ctx.workdir, playbook=playbook, tmux_socket=socket)
            spawn(ctx.home, request, env)
        row.spawn_s = time.perf_counter() - t0

        deadline = t0 + 30.0 + 2.0 * n
        notified: dict[str, float] = {}
        while True:
            _, ready, notified = ready_names(ctx.home, team, mailbox)
            row.ready_count = len(ready)
            if len(ready) == n:
                row.ready_s = time.perf_counter() - t0
                break
            if time.perf_counter() > deadline:
                row.details.append(f"only {len(ready)}/{n} ready after {deadline - t0:.0f} s")
                break
            watcher.wait(0.25)  # woken by each write to the lead's inbox

        members = {m.name: m for m in TeamStore(ctx.home).get(team).members if m.name != LEAD_NAME}
        by_name: dict[str, psutil.Process] = {}  # the teammate's own process: a forked one's worker
        launchers: list[psutil.Process] = []
        for name in names:
            member = members[name]
            pid = member.worker_pid or member.pid
            if pid is not None:
                with contextlib.suppress(psutil.Error):
                    by_name[name] = psutil.Process(pid)
                    row.forked += by_name[name].name() == COMM.decode()  # behind a launcher, or loose
            if member.worker_pid is not None and member.pid is not None:
                with contextlib.suppress(psutil.Error):
                    launchers.append(psutil.Process(member.pid))
        procs = list(by_name.values())
        row.details.append(f"forked from the CLI server: {row.forked}/{n} (with a launcher beside it: "
                           f"{len(launchers)})")
        if len(procs) < n:
            row.details.append(f"only {len(procs)}/{n} teammate processes found after start-up")
        _startup_details(ctx, row, team, names, by_name, wall0, notified)

        time.sleep(SETTLE_S)
        row.rss, row.uss, row.pss = [], [], []
        cli_server = [psutil.Process(pid)] if server and (pid := server_pid(ctx.home.cli_lock_path)) else []
        shared = [child for proc in cli_server for child in proc.children()  # the teammates' shared worker
                  if child.name() == SHARED_COMM.decode()]
        _, shared_uss, shared_pss = memory_pss(shared)
        for proc in procs:  # a teammate's delivery worker is part of what it costs: its own, or a share of the server's
            rss, uss, pss = memory_pss([proc])
            if pss:
                _, worker_uss, worker_pss = memory_pss(delivery_workers(proc))
                row.rss.append(rss[0])
                row.uss.append(uss[0] + sum(worker_uss) + sum(shared_uss) / len(procs))
                row.pss.append(pss[0] + sum(worker_pss) + sum(shared_pss) / len(procs))
        if shared:
            row.details.append(f"the shared delivery worker: PSS {sum(shared_pss):.1f} MB, "
                               f"USS {sum(shared_uss):.1f} MB (a share of each in each teammate's figures)")
        _, row.launcher_uss, launcher_pss = memory_pss(launchers)
        cli_server += [child for proc in cli_server for child in proc.children()  # its spare (forkserver.Spare)
                       if child.name() == SPARE_NAME.decode()]
        row.total_pss = sum(row.pss) + sum(launcher_pss) + sum(memory_pss(cli_server)[2])
        if launchers:
            row.details.append(f"launchers' USS mean/max {mean_max(row.launcher_uss)} MB; CLI server "
                               f"RSS {cli_server_rss(ctx.home):.1f} MB")
        server = tmux_server_proc(ctx) if backend == "tmux" else None
        server_rss = memory([server])[0] if server else []
        row.cpu_pct, server_cpu = cpu_window(procs, ctx.window, server)
        if server is not None:
            row.details.append(f"tmux server: RSS {server_rss[0] if server_rss else float('nan'):.1f} MB, "
                               f"CPU {server_cpu if server_cpu is not None else float('nan'):.3f} % over the window")
        if procs and backend == "subprocess" and n == min(ctx.sizes):
            row.details.append("extension modules mapped in an idle teammate: " + ", ".join(mapped_extensions(procs[0])))

        t1 = time.perf_counter()  # through the CLI, as a person or a script would: `swarm shutdown --all`
        done = subprocess.run([swarm_exe(), "shutdown", "--all", "--team", team, "--json",
                               "--timeout", str(SHUTDOWN_TIMEOUT), "--reason", "benchmark over"],
                              env=env, cwd=ctx.workdir, capture_output=True, text=True, check=False,
                              timeout=SHUTDOWN_TIMEOUT + 30)
        row.shutdown_s = time.perf_counter() - t1
        outcomes = json.loads(done.stdout) if done.returncode == 0 and done.stdout.strip() else []
        if done.returncode != 0:
            row.details.append(f"swarm shutdown failed (exit {done.returncode}): {done.stderr.strip()}")
        for outcome in outcomes:
            if outcome["result"] == "approved":
                row.approved += 1
            elif outcome["result"] == "killed":
                row.killed += 1
            else:
                row.other += 1
                row.details.append(f"{outcome['name']}: {outcome['result']} {outcome.get('detail') or ''}".rstrip())
        reap([m.pid for m in members.values() if m.pid is not None])

        left = teammate_procs(ctx.home)
        row.left_procs = len(left)
        if backend == "tmux":
            row.left_panes = len(tmux_panes(ctx))
        for proc in left:  # do not let one run's leftovers disturb the next
            kill_tree(proc.pid, 1.0)
        if backend == "tmux" and row.left_panes:
            with contextlib.suppress(Exception):
                TmuxBackend(socket, ctx.env).kill_session(team)
    finally:
        watcher.close()
    return row


def _startup_details(ctx: Context, row: Row, team: str, names: list[str], by_name: dict[str, psutil.Process],
                     wall0: float, notified: dict[str, float]) -> None:
    if row.spawn_s is not None:
        row.details.append(f"spawn() calls: {row.spawn_s:.2f} s in all, {1000 * row.spawn_s / row.n:.0f} ms each")
    joined = {name: joined_at(ctx.home, team, name) for name in names}
    created = {}
    for name, proc in by_name.items():
        with contextlib.suppress(psutil.Error):
            created[name] = proc.create_time()
    if all(joined.values()):
        row.details.append(f"all {row.n} processes joined (status idle, before the first turn) "
                           f"{max(v for v in joined.values() if v) - wall0:.2f} s after the first spawn call")
    boot = [joined[k] - created[k] for k in names if joined.get(k) and k in created]  # type: ignore[operator]
    turn = [notified[k] - joined[k] for k in names if joined.get(k) and k in notified]  # type: ignore[operator]
    if boot:
        row.details.append(f"per teammate, process start -> joined (imports + init): mean/max {mean_max(boot)} s")
    if turn:
        row.details.append(f"per teammate, joined -> first idle_notification (first turn): mean/max {mean_max(turn)} s")
    used = [c for c in (cpu_seconds(p) for p in by_name.values()) if c is not None]
    if row.forked:
        row.details.append("CPU per teammate below is the teammate process's own (a forked one's worker: what "
                           "it did after the fork); its launcher's is not in it (a thin client, ~0.03 s)")
    if used:
        row.details.append(f"CPU spent per teammate to get ready: mean {statistics.fmean(used):.2f} s, "
                           f"all {row.n}: {sum(used):.2f} s = {sum(used) / max(1, os.cpu_count() or 1):.2f} s "
                           f"on {os.cpu_count()} cores at best")


def server_env(home: Home) -> bool | None:
    """Whether the home's running CLI server was started with credentials for Claude (None: none runs)."""
    pid = server_pid(home.cli_lock_path)
    with contextlib.suppress(psutil.Error, TypeError):
        return "ANTHROPIC_API_KEY" in psutil.Process(pid).environ()
    return None


def cli_server_rss(home: Home) -> float:
    with contextlib.suppress(OSError, ValueError, psutil.Error):
        return psutil.Process(int(home.cli_lock_path.read_text().strip())).memory_info().rss / MB
    return float("nan")


def mapped_extensions(proc: psutil.Process) -> list[str]:
    """Extension modules (``.so`` under site-packages / lib-dynload) a process has mapped."""
    names: set[str] = set()
    with contextlib.suppress(psutil.Error):
        for region in proc.memory_maps(grouped=True):
            path = region.path
            if path.endswith(".so") or ".so." in path or ".cpython-" in path:
                if "site-packages" in path or "lib-dynload" in path:
                    names.add(Path(path).name.split(".")[0])
    return sorted(names)


# -- baseline --------------------------------------------------------------------------


def run_baseline(ctx: Context, n: int) -> Row:
    row = Row("baseline", n)
    row.details.append("load average before the run: %.2f %.2f %.2f" % os.getloadavg())
    code = f"{BASELINE_CODE}  # bench-{ctx.run_id}"
    env = {k: v for k, v in ctx.env.items() if k in ("PATH", "HOME", "LANG", "USER", "TMPDIR", "VIRTUAL_ENV")}
    sel = selectors.DefaultSelector()
    procs: list[subprocess.Popen[bytes]] = []
    try:
        t0 = time.perf_counter()
        for _ in range(n):
            popen = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     cwd=ctx.workdir, env=env)
            procs.append(popen)
            ctx.baseline_procs.append(popen)
            assert popen.stdout is not None
            sel.register(popen.stdout, selectors.EVENT_READ)
        row.spawn_s = time.perf_counter() - t0
        row.details.append(f"Popen() calls: {row.spawn_s:.3f} s in all")
        deadline = t0 + 30.0
        waiting = n
        while waiting and time.perf_counter() < deadline:
            for key, _ in sel.select(timeout=0.5):
                os.read(key.fileobj.fileno(), 1)  # type: ignore[union-attr]
                sel.unregister(key.fileobj)
                waiting -= 1
        row.ready_count = n - waiting
        if not waiting:
            row.ready_s = time.perf_counter() - t0
        ps = [psutil.Process(p.pid) for p in procs]
        used = [c for c in (cpu_seconds(p) for p in ps) if c is not None]
        if used:
            row.details.append(f"CPU spent per interpreter to get ready: mean {statistics.fmean(used):.3f} s")
        time.sleep(SETTLE_S)
        row.rss, row.uss, row.pss = memory_pss(ps)
        row.total_pss = sum(row.pss)
        row.cpu_pct, _ = cpu_window(ps, ctx.window)

        t1 = time.perf_counter()
        for popen in procs:
            popen.terminate()
        for popen in procs:
            try:
                popen.wait(timeout=SHUTDOWN_TIMEOUT)
                row.approved += 1  # exited on SIGTERM
            except subprocess.TimeoutExpired:
                popen.kill()
                popen.wait()
                row.killed += 1
        row.shutdown_s = time.perf_counter() - t1
        row.left_procs = len(baseline_marker_procs(ctx.run_id))
    finally:
        sel.close()
        for popen in procs:
            if popen.stdout:
                popen.stdout.close()
    return row


# -- report ----------------------------------------------------------------------------


def verdict(ok: bool | None) -> str:
    return "" if ok is None else (" PASS" if ok else " FAIL")


def cells(row: Row) -> list[str]:
    judge = not row.baseline

    def fmt(value: float | None, spec: str, ok: bool | None) -> str:
        if value is None:
            return "n/a" + (" FAIL" if judge else "")
        return f"{value:{spec}}" + (verdict(ok) if judge else "")

    ready = fmt(row.ready_s, ".2f", row.ready_s is not None and row.ready_s <= TARGET_READY_S)
    if row.ready_s is None:
        ready = f"{row.ready_count}/{row.n} ready" + (" FAIL" if judge else "")
    rss = "-" if not row.rss else f"{statistics.fmean(row.rss):.1f} / {max(row.rss):.1f}"
    if row.rss and judge:
        rss += verdict(max(row.rss) <= TARGET_RSS_MB)
    uss = "-" if not row.uss else f"{statistics.fmean(row.uss):.1f} / {max(row.uss):.1f}"
    cpu = fmt(row.cpu_pct, ".3f", row.cpu_pct is not None and row.cpu_pct < TARGET_CPU_PCT)
    down = fmt(row.shutdown_s, ".2f", row.shutdown_s is not None and row.shutdown_s <= TARGET_SHUTDOWN_S)
    outcome = f"{row.approved}/{row.killed}" + (f" (+{row.other})" if row.other else "")
    if row.baseline:
        outcome = f"{row.approved} SIGTERM/{row.killed}"
    left_total = (row.left_procs or 0) + (row.left_panes or 0)
    left = f"{row.left_procs if row.left_procs is not None else '?'}/" \
           f"{row.left_panes if row.left_panes is not None else '-'}"
    if judge:
        left += verdict(row.left_procs is not None and left_total == TARGET_LEFTOVERS)
    spawn_s = "-" if row.spawn_s is None else f"{row.spawn_s:.2f}"
    return [row.label, str(row.n), spawn_s, ready, rss, uss, cpu, down, outcome, left]


HEADERS = ["backend", "N", "spawn s", "ready s", "RSS MB mean / max", "USS MB mean / max",
           "idle CPU %core", "shutdown s", "approved/killed", "left procs/panes"]
TARGET_ROW = ["target", "", "", f"<= {TARGET_READY_S:g} (N=16)", f"max <= {TARGET_RSS_MB:g}", "",
              f"< {TARGET_CPU_PCT:g} (N=16)", f"<= {TARGET_SHUTDOWN_S:g} (N=16)", "all approved",
              f"{TARGET_LEFTOVERS}/{TARGET_LEFTOVERS}"]


def print_table(rows: list[Row]) -> None:
    table = [HEADERS, TARGET_ROW, *[cells(r) for r in rows]]
    widths = [max(len(line[i]) for line in table) for i in range(len(HEADERS))]

    def show(line: list[str]) -> None:
        print("  ".join(cell.ljust(w) if i < 2 else cell.rjust(w) for i, (cell, w) in enumerate(zip(line, widths,
                                                                                                     strict=True))))

    show(HEADERS)
    show(TARGET_ROW)
    print("  ".join("-" * w for w in widths))
    for row in rows:
        show(cells(row))


def print_details(rows: list[Row]) -> None:
    print("\nDetails")
    for row in rows:
        if row.details:
            print(f"  {row.label}, N={row.n}:")
            for line in row.details:
                print(f"    - {line}")


# -- profile ---------------------------------------------------------------------------

LADDER = r"""
import sys, time
def mem():
    fields = {}
    with open("/proc/self/smaps_rollup") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3 and parts[-1] == "kB":
                fields[parts[0].rstrip(":")] = int(parts[1])
    return fields["Rss"] / 1024, (fields.get("Private_Clean", 0) + fields.get("Private_Dirty", 0)) / 1024
steps = [
    ("bare interpreter (site + editable finder)", ""),
    ("+ pydantic BaseModel/TypeAdapter", "from pydantic import BaseModel, ConfigDict, Field, TypeAdapter"),
    ("+ inotify_simple", "import inotify_simple"),
    ("+ swarm.core.protocol (wire models)", "import swarm.core.protocol"),
    ("+ swarm.core teams/mailbox/jsonfile/watch", "import swarm.core.teams, swarm.core.mailbox"),
    ("+ psutil", "import psutil"),
    ("+ swarm.agent.* (loop, tools, transcript)",
     "import swarm.agent.loop, swarm.agent.tools, swarm.agent.tools.messaging, swarm.agent.transcript"),
    ("+ swarm.models.factory (scripted, tomllib)", "import swarm.models.factory"),
    ("+ rest of swarm.teammate.__main__", "import swarm.teammate.__main__"),
    ("+ TeammateSession(...) built", "BUILD"),
]
home_root, workdir, playbook = sys.argv[1:4]
prev = mem()
for label, code in steps:
    t = time.perf_counter()
    if code == "BUILD":
        from pathlib import Path
        from swarm.core.home import Home
        from swarm.core.protocol import Member
        from swarm.core.teams import TeamStore
        from swarm.teammate.config import TeammateConfig
        from swarm.teammate.session import TeammateSession
        home = Home(Path(home_root))
        store = TeamStore(home)
        if not store.exists("probe"):
            store.create("probe", cwd=workdir)
            store.add_member("probe", Member(agent_id="p@probe", name="p"))
        config = TeammateConfig(team="probe", name="p", agent_id="p@probe", cwd=Path(workdir),
                                playbook=Path(playbook), backend="subprocess", home=home.root)
        session = TeammateSession(config, home, {"SWARM_HOME": home_root})
    elif code:
        exec(code)
    took = time.perf_counter() - t
    now = mem()
    print(f"LADDER\t{label}\t{now[0]:.1f}\t{now[1]:.1f}\t{now[0] - prev[0]:+.1f}\t{took * 1000:.0f}")
    prev = now
heavy = ["anthropic", "httpx", "httpcore", "anyio", "jiter", "libtmux", "click", "pydantic", "pydantic_core",
         "psutil", "inotify_simple", "tomllib", "asyncio", "ssl", "email.utils", "http.client",
         "urllib.request", "platform", "inspect", "subprocess", "uuid"]
print("MODULES\t" + " ".join(f"{m}={'yes' if m in sys.modules else 'no'}" for m in heavy))
print("COUNT\t" + str(len(sys.modules)))
"""

PROBE = r"""
import resource, sys, time
def rss():
    with open("/proc/self/smaps_rollup") as f:
        for line in f:
            if line.startswith("Rss:"):
                return int(line.split()[1]) / 1024
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
if sys.argv[1]:
    exec("import " + sys.argv[1])
base, c0 = rss(), cpu()
target = sys.argv[2]
if ":" in target:
    module, name = target.split(":")
    exec(f"from {module} import {name}")
else:
    exec("import " + target)
print(f"{(cpu() - c0) * 1000:.0f}\t{rss() - base:.1f}")
"""
"""argv: modules imported first (not measured), the module measured (``mod:name`` for a from-import)."""


def probe(py: str, env: dict[str, str], cwd: Path, first: str, target: str, runs: int = 3) -> str:
    samples = []
    for _ in range(runs):
        out = subprocess.run([py, "-c", PROBE, first, target], env=env, cwd=cwd, capture_output=True, text=True,
                             check=False, timeout=120)
        if out.returncode != 0:
            return "failed"
        cpu_ms, rss_mb = out.stdout.split()
        samples.append((float(cpu_ms), float(rss_mb)))
    return (f"{statistics.median(s[0] for s in samples):5.0f} ms CPU  "
            f"{statistics.median(s[1] for s in samples):+5.1f} MB RSS")


def timed_run(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(wall s, CPU s of the child) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, capture_output=True, check=False, timeout=120)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def profile(ctx: Context) -> None:
    env = {k: v for k, v in ctx.env.items() if not k.startswith("PYTHON")}
    py = sys.executable
    print("\nProfile of a teammate process")

    runs = 5
    cases = [("python -c pass", [py, "-c", "pass"]),
             ("python -I -c pass (no site)", [py, "-I", "-c", "pass"]),
             ("python -m swarm.teammate --help", [py, "-m", "swarm.teammate", "--help"])]
    print(f"  start-up, median of {runs} (wall s / CPU s):")
    for label, argv in cases:
        samples = [timed_run(argv, env, ctx.workdir) for _ in range(runs)]
        wall = statistics.median(s[0] for s in samples)
        cpu = statistics.median(s[1] for s in samples)
        print(f"    {label:<36} {wall:.3f} / {cpu:.3f}")

    result = subprocess.run([py, "-X", "importtime", "-m", "swarm.teammate", "--help"], env=env, cwd=ctx.workdir,
                            capture_output=True, text=True, check=False, timeout=120)
    entries = []
    for line in result.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
        if m:
            entries.append((int(m.group(1)), int(m.group(2)), len(m.group(3)), m.group(4)))
    if entries:
        top_level = min(e[2] for e in entries)
        total = sum(e[1] for e in entries if e[2] == top_level)
        by_pkg: dict[str, int] = {}
        for self_us, _, _, name in entries:
            pkg = name.split(".")[0]
            if pkg == "swarm":
                pkg = ".".join(name.split(".")[:2])
            by_pkg[pkg] = by_pkg.get(pkg, 0) + self_us
        print(f"  -X importtime, python -m swarm.teammate: {len(entries)} modules, {total / 1000:.0f} ms in imports; "
              f"self time by package:")
        for pkg, us in sorted(by_pkg.items(), key=lambda kv: -kv[1])[:14]:
            print(f"    {pkg:<32} {us / 1000:7.1f} ms  {100 * us / total:4.1f} %")
        slow = sorted((e for e in entries if e[3].startswith("swarm")), key=lambda e: -e[0])[:6]
        print("  slowest swarm modules (self ms): " + ", ".join(f"{e[3]} {e[0] / 1000:.0f}" for e in slow))

    ladder = subprocess.run([py, "-c", LADDER, str(ctx.home.root), str(ctx.workdir), str(ctx.playbook)], env=env,
                            cwd=ctx.workdir, capture_output=True, text=True, check=False, timeout=120)
    print("  RSS ladder in one fresh interpreter (cumulative RSS / USS MB, step delta, step ms):")
    for line in ladder.stdout.splitlines():
        parts = line.split("\t")
        if parts[0] == "LADDER":
            print(f"    {parts[1]:<44} {parts[2]:>6} / {parts[3]:>5}  {parts[4]:>6}  {parts[5]:>5} ms")
        elif parts[0] == "MODULES":
            print(f"  loaded after the session is built: {parts[1]}")
        elif parts[0] == "COUNT":
            print(f"  modules in sys.modules: {parts[1]}")
    if ladder.returncode != 0:
        print("  ladder failed: " + ladder.stderr.strip().splitlines()[-1] if ladder.stderr.strip() else "")

    print("  cost of each dependency alone, imported into a bare interpreter (median of 3):")
    for target in ("pydantic:BaseModel", "psutil", "inotify_simple", "tomllib", "importlib.metadata",
                   "email.utils", "libtmux", "anthropic"):
        print(f"    {target:<22} {probe(py, env, ctx.workdir, '', target)}")
    print("  what a teammate would pay on top of what it imports today (median of 3):")
    for target in ("anthropic", "libtmux", "click"):
        print(f"    {target:<22} {probe(py, env, ctx.workdir, 'swarm.teammate.__main__', target)}")


def run_cold(ctx: Context, backend: str, n: int, server: bool) -> Row:
    """A cold start: nothing warmed up before it, no CLI server and, for tmux, no tmux server running yet."""
    if backend != "tmux":
        return run_swarm(ctx, backend, n, "cold", server=server)
    warm_socket = ctx.tmux_socket
    ctx.tmux_socket = ctx.root / "tmux-cold.sock"
    try:
        return run_swarm(ctx, backend, n, "cold", server=server)
    finally:
        with contextlib.suppress(Exception):
            tmux(ctx, "kill-server")
        ctx.tmux_socket = warm_socket


def print_figures(rows: list[Row], n: int, runs: int) -> None:
    """The summary table (``benchtable``): cold and warm start-up, shutdown through the CLI, leftovers."""
    base = next((r for r in rows if r.baseline and r.n == n), None)
    figures: list[Figure] = []
    for backend in ("tmux", "subprocess"):
        every = [r for r in rows if r.kind == backend and r.n == n]
        if not every:
            continue
        for server in (True, False):
            cold = [r for r in every if r.start == "cold" and r.server == server]
            warm = [r for r in every if r.start == "warm" and r.server == server]
            way = "forked from the CLI server" if server else "server off, each its own interpreter"
            for label, group in (("cold", cold), (f"warm, median of {len(warm)}", warm)):
                ready = [r.ready_s for r in group if r.ready_s is not None]
                forked = sum(r.forked for r in group)
                figures.append(Figure(f"{n} {backend} teammates joined and idle, {label} ({way})", "<= 3 s",
                                      median_of(ready) if ready and len(ready) == len(group) else None,
                                      base.ready_s if base else None, " s", met=lambda v: v <= 3,
                                      note=f"{forked} of {n * len(group)} forked" if server and group else ""))
        downs = [r.shutdown_s for r in every if r.shutdown_s is not None]
        figures.append(Figure(f"`swarm shutdown --all` of {n} ({backend}), median of {len(downs)}", "<= 2 s",
                              median_of(downs) if downs else None, base.shutdown_s if base else None, " s",
                              met=lambda v: v <= 2,
                              note=f"each run: {', '.join(f'{d:.2f}' for d in downs)} s; "
                                   f"approved/killed {sum(r.approved for r in every)}/{sum(r.killed for r in every)}"))
        left = sum((r.left_procs or 0) + (r.left_panes or 0) for r in every)
        figures.append(Figure(f"processes and panes left after every {backend} run", "0", float(left), None,
                              digits=0, met=lambda v: v == 0))
        for server in (True, False):
            rss = [max(r.rss) for r in every if r.rss and r.server == server]
            uss = [statistics.fmean(r.uss) + (statistics.fmean(r.launcher_uss) if r.launcher_uss else 0)
                   for r in every if r.uss and r.server == server]
            way = "server on" if server else "server off"
            figures.append(Figure(f"idle teammate RSS, max ({backend}, {way})", "<= 40 MiB",
                                  max(rss) if rss else None, max(base.rss) if base and base.rss else None, " MiB",
                                  digits=1, met=lambda v: v <= 40))
            figures.append(Figure(f"idle teammate USS (+ launcher's), mean ({backend}, {way})", "",
                                  median_of(uss) if uss else None,
                                  statistics.fmean(base.uss) if base and base.uss else None, " MiB", digits=1,
                                  note="memory the teammate alone holds: pages shared with the server are not in it"))
    print_figure_table(f"bench_spawn: N={n}", figures, notes=[
        "cold: no warm-up run before it, no tmux server and no CLI server running (the first spawn starts "
        "them; server on, the first teammate's launcher waits for the server it started); the later cold runs "
        "find their files in the page cache",
        f"warm: a private tmux server (and, server on, the home's CLI server) already running, {runs} runs "
        "per backend and server setting",
        "baseline: bare interpreters that write one byte (ready) and are SIGTERMed (shutdown)",
        "shutdown is timed around the `swarm shutdown --all --team T` command, start to exit"])


# -- setup and cleanup -------------------------------------------------------------------


def start_tmux(ctx: Context) -> None:
    ctx.tmux_bin = shutil.which("tmux")
    if ctx.tmux_bin is None:
        raise RuntimeError("tmux not found")
    ctx.tmux_socket = ctx.root / "tmux.sock"
    result = tmux(ctx, "new-session", "-d", "-s", KEEPALIVE_SESSION, "-x", "80", "-y", "24",
                  "sleep", "1000000", config=True)
    if result.returncode != 0:
        raise RuntimeError(f"cannot start a private tmux server: {result.stderr.strip()}")


def cleanup(ctx: Context | None, root: Path | None) -> None:
    if ctx is not None:
        for popen in ctx.baseline_procs:
            with contextlib.suppress(Exception):
                if popen.poll() is None:
                    popen.kill()
                popen.wait(timeout=5)
        with contextlib.suppress(Exception):
            for proc in [*teammate_procs(ctx.home), *baseline_marker_procs(ctx.run_id)]:
                kill_tree(proc.pid, 1.0)
        stop_cli_server(ctx.home.root)
        if ctx.tmux_socket is not None:
            with contextlib.suppress(Exception):
                tmux(ctx, "kill-server")
    if root is not None:
        shutil.rmtree(root, ignore_errors=True)


@contextlib.contextmanager
def signals_as_interrupt() -> Iterator[None]:
    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    old = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, previous in old.items():
            signal.signal(sig, previous)


def run_goals(ctx: Context, n: int, big: int, runs: int) -> list[Row]:
    """Only what issue 34's goals need (subprocess backend, CLI server on, warm): ``n`` teammates on the
    scripted model and on the real SDK path (interleaved, ``runs`` each), ``big`` scripted teammates, and
    bare interpreters for both sizes."""
    from tests.fakes import FakeAnthropicServer, text_reply

    ctx.home.root.mkdir(parents=True, exist_ok=True)  # a CLI server never makes its home
    api = FakeAnthropicServer().start()
    api.otherwise(text_reply("ready"))
    ctx.api_url = api.base_url
    rows: list[Row] = []
    try:
        for run in range(runs):
            for model in ("scripted", "sdk"):
                print(f"... subprocess N={n} warm {run + 1}/{runs}, {model}", flush=True)
                rows.append(run_swarm(ctx, "subprocess", n, "warm", run, True, model=model))
        print(f"... subprocess N={big} warm, scripted", flush=True)
        rows.append(run_swarm(ctx, "subprocess", big, "warm", 0, True))
        for size in sorted({n, big}):
            print(f"... baseline N={size}", flush=True)
            rows.append(run_baseline(ctx, size))
    finally:
        api.stop()
    return rows


def print_goal_figures(rows: list[Row], n: int, big: int) -> None:
    """Issue 34's spawn goals: the real SDK path against the scripted model, and a big team against bare
    interpreters (``benchtable``)."""
    def median(values: list[float | None]) -> float | None:
        known = [v for v in values if v is not None]
        return median_of(known) if known and len(known) == len(values) else None

    scripted = [r for r in rows if not r.baseline and r.n == n and r.model == "scripted"]
    sdk = [r for r in rows if not r.baseline and r.n == n and r.model == "sdk"]
    large = [r for r in rows if not r.baseline and r.n == big and r.model == "scripted" and r not in scripted]
    bare = {r.n: r for r in rows if r.baseline}
    ready_scripted = median([r.ready_s for r in scripted])
    pss_sdk = median([statistics.fmean(r.pss) if r.pss else None for r in sdk])
    pss_scripted = median([statistics.fmean(r.pss) if r.pss else None for r in scripted])
    figures = [
        Figure(f"{n} teammates ready, real anthropic SDK path (fake API)", "<= 2x scripted",
               median([r.ready_s for r in sdk]), ready_scripted, " s",
               met=lambda v: ready_scripted is not None and v <= 2 * ready_scripted,
               note=f"median of {len(sdk)} runs each; forked: "
                    f"{sum(r.forked for r in sdk)}/{n * len(sdk)}; baseline: the same on the scripted model"),
        Figure(f"PSS per teammate, real SDK path, N={n}", "<= 30 MiB", pss_sdk, pss_scripted, " MiB", digits=1,
               met=lambda v: v <= 30, note="mean over the teammates' own processes; baseline: the scripted model's; "
                                           "USS (pages only it holds) mean "
                                           + ", ".join(f"{statistics.fmean(r.uss):.1f}" for r in sdk if r.uss)),
        Figure(f"{big} teammates ready (scripted model)", "<= 3 s", median([r.ready_s for r in large]),
               bare[big].ready_s if big in bare else None, " s", met=lambda v: v <= 3,
               note=f"baseline: {big} bare interpreters started one after another"),
        Figure(f"{big} teammates, total PSS (teammates, launchers, CLI server and spare)", "<= 1 GiB",
               median([r.total_pss for r in large]), bare[big].total_pss if big in bare else None, " MiB",
               digits=0, met=lambda v: v <= 1024, note=f"baseline: the PSS of {big} bare interpreters"),
    ]
    print_figure_table(f"bench_spawn goals: N={n} and N={big}", figures, notes=[
        "warm: the home's CLI server runs before the first spawn (started with the run's environment: with "
        "credentials it preloads the SDK), subprocess backend",
        *[f"{r.label} N={r.n} {r.model}: " + "; ".join(d for d in r.details if d.startswith(("spawn()", "CPU spent")))
          for r in rows if not r.baseline]])


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="3 s CPU window instead of 10 s")
    parser.add_argument("--backends", default="tmux,subprocess", help="comma list of tmux, subprocess")
    parser.add_argument("--sizes", default="1,4,16", help="comma list of team sizes")
    parser.add_argument("--window", type=float, help="CPU window in seconds (default 10, --quick 3)")
    parser.add_argument("--no-profile", action="store_true", help="skip the import/RSS profile")
    parser.add_argument("--runs", type=int, default=0, help="warm runs per backend and size (default 3, --quick 2)")
    parser.add_argument("--goals-only", action="store_true",
                        help="only issue 34's goals: --sizes' largest on the scripted model and the real SDK path "
                             "(fake API), --big on the scripted model, bare interpreters")
    parser.add_argument("--big", type=int, default=64, help="the big team of --goals-only (default 64)")
    ns = parser.parse_args(argv)
    ns.backends = [b.strip() for b in ns.backends.split(",") if b.strip()]
    bad = [b for b in ns.backends if b not in ("tmux", "subprocess")]
    if bad:
        parser.error(f"unknown backend {bad[0]!r}; use tmux and/or subprocess")
    try:
        ns.sizes = sorted({int(s) for s in ns.sizes.split(",") if s.strip()})
    except ValueError:
        parser.error("--sizes takes a comma list of integers")
    if not ns.sizes or min(ns.sizes) < 1:
        parser.error("--sizes must be positive integers")
    ns.window = ns.window if ns.window else (3.0 if ns.quick else 10.0)
    ns.runs = ns.runs if ns.runs > 0 else (2 if ns.quick else 3)
    return ns


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    root: Path | None = None
    ctx: Context | None = None
    rows: list[Row] = []
    try:
        with signals_as_interrupt():
            base = "/tmp" if os.path.isdir("/tmp") else None  # short path: tmux sockets max ~100 chars
            root = Path(tempfile.mkdtemp(prefix="swarm-bench-", dir=base)).resolve()
            home = Home(root / "home")
            workdir = root / "work"
            workdir.mkdir()
            playbook = root / "playbook.toml"
            playbook.write_text(PLAYBOOK)
            os.environ["SWARM_HOME"] = str(home.root)
            ctx = Context(root=root, home=home, workdir=workdir, playbook=playbook, env=spawn_env(home.root),
                          window=args.window, run_id=uuid.uuid4().hex[:10], sizes=args.sizes)
            backends = list(args.backends)
            ctx.tmux_bin = shutil.which("tmux")
            if "tmux" in backends and ctx.tmux_bin is None:
                print("tmux skipped: tmux not found")
                backends.remove("tmux")
            tmux_version = subprocess.run([ctx.tmux_bin, "-V"], capture_output=True, text=True,
                                          check=False).stdout.strip() if ctx.tmux_bin else "no tmux"
            print(f"bench_spawn: {platform.platform()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
                  f"{tmux_version}; CPU window {ctx.window:g} s; home {home.root}")
            print("load average at start: %.2f %.2f %.2f (other work on the machine inflates the times)"
                  % os.getloadavg())
            if (os.cpu_count() or 0) != 2:
                print(f"note: the ready target assumes 2 cores; this machine has {os.cpu_count()}")
            if args.goals_only:
                rows = run_goals(ctx, max(args.sizes), args.big, args.runs)
                print_goal_figures(rows, max(args.sizes), args.big)
                return 0
            # cold first: no warm-up run before it, and (tmux) no server running: the first spawn starts it
            biggest = max(args.sizes)
            for backend in backends:
                for server in (True, False):
                    print(f"... {backend} N={biggest} cold, server {'on' if server else 'off'}", flush=True)
                    rows.append(run_cold(ctx, backend, biggest, server))
            if "tmux" in backends:
                try:
                    start_tmux(ctx)  # the warm runs find a private server running
                except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
                    print(f"tmux warm runs skipped: {exc}")
                    backends.remove("tmux")
            for backend in backends:
                for n in args.sizes:
                    for run in range(args.runs):
                        for server in (True, False):  # interleaved: both see the same machine state
                            print(f"... {backend} N={n} warm {run + 1}/{args.runs}, server "
                                  f"{'on' if server else 'off'}", flush=True)
                            rows.append(run_swarm(ctx, backend, n, "warm", run, server))
            for n in args.sizes:
                print(f"... baseline N={n}", flush=True)
                rows.append(run_baseline(ctx, n))
            print()
            print_table(rows)
            print_details(rows)
            print_figures(rows, biggest, args.runs)
            if not args.no_profile:
                profile(ctx)
        return 0
    except KeyboardInterrupt as exc:
        print(f"\ninterrupted ({str(exc) or 'SIGINT'}); cleaning up", file=sys.stderr)
        if rows:
            print_table(rows)
        return 130
    finally:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not stop the cleanup
        try:
            cleanup(ctx, root)
        finally:
            signal.signal(signal.SIGINT, previous)


if __name__ == "__main__":
    sys.exit(main())
