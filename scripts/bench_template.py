#!/usr/bin/env python3
"""Benchmark a pre-forked template process (fork server / zygote) against starting a fresh interpreter.

    .venv/bin/python scripts/bench_template.py [--quick]

A template is a server started once (untimed) that has already imported what a
command needs; a request forks it and the child runs only what is left. Scratch
SWARM_HOME, unix sockets in a temp dir; medians of ``BATCHES`` batch medians.

1. ``swarm send team-lead hello --team bench`` from a shell (after an untimed
   ``swarm team create bench``), spawn to exit. Normal: the venv's ``swarm``, a
   fresh process (as bench_cli.py). Template: a thin client (socket/os/sys only;
   run as ``python -I -S client.py`` and ``python client.py``) sends argv, cwd,
   the environment and its fds 0-2 (SCM_RIGHTS) to a server that imported
   ``swarm.cli.main``, ``swarm.cli.messages``, ``swarm.core.mailbox`` and did a
   warm ``TeamStore.get``; the forked child dup2's the fds, chdir's, replaces
   os.environ, sets sys.argv, runs ``swarm.cli.main.main()`` (it reads sys.argv
   and ends in sys.exit) and the client exits with the child's status. Calls
   are interleaved (each variant sees the same inbox size); afterwards the lead's
   inbox must hold one entry per send, every call must have exited 0.
2. Teammate start. Normal: ``python -c "import swarm.teammate.__main__"``, wall
   and CPU (getrusage children). Template: a server that imported it forks a
   child that exits 0 at once; request -> reply after the reap, CPU = child
   (wait4) + server per request. Implied: 16 teammates on 2 cores = 16 x CPU / 2.
Memory: the servers' RSS; the USS of a child held right after the fork (and
after a ``gc.collect()`` in it) against a fresh process with the same imports.

Prints the benchtable table, exits 0 whatever the figures; the servers (own
sessions, killed by group), their children and the temp dir are removed on
exit, Ctrl-C or error.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
from benchtable import Figure, batch_medians, median_of, print_table

BATCHES = 5
MB = 1024 * 1024

SERVER = r'''
import gc, os, resource, signal, socket, sys, traceback  # resource: os.wait4 imports it
mode, path, home, logdir = sys.argv[1:5]
if mode == "send":
    import swarm.cli.main, swarm.cli.messages, swarm.core.mailbox
    from pathlib import Path
    from swarm.core.home import Home
    from swarm.core.teams import TeamStore
    TeamStore(Home(Path(home))).get("bench")
    "".encode("utf-16-le")  # swarm.core.signing's codec: found by the late-import check below
else:
    import swarm.teammate.__main__
known = set(sys.modules)
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(path)
srv.listen(64)
print("ready", flush=True)
os.dup2(os.open(os.devnull, os.O_RDWR), 1)

def child(conn, fields, fds):
    code = 1
    try:
        srv.close()
        flags, cwd, argc = fields[0], fields[1], int(fields[2])
        argv, env = [os.fsdecode(a) for a in fields[3:3 + argc]], fields[3 + argc:]
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        if fds:
            sys.stdin = open(0, closefd=False)
            sys.stdout = open(1, "w", buffering=1 if os.isatty(1) else -1, closefd=False)
            sys.stderr = open(2, "w", buffering=1, closefd=False)
            os.chdir(cwd)
            os.environ.clear()
            os.environb.update(e.split(b"=", 1) for e in env if b"=" in e)
        if b"gc" in flags:
            gc.collect()
        if b"hold" in flags:
            conn.sendall(b"R%d\n" % os.getpid())
            conn.recv(1)
        conn.close()
        code = 0
        if mode == "send":
            sys.argv = ["swarm", *argv]
            signal.signal(signal.SIGINT, signal.default_int_handler)
            try:
                swarm.cli.main.main()
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            late = sorted(set(sys.modules) - known)
            if late and fds:
                with open(os.path.join(logdir, "late-imports.txt"), "a") as f:
                    f.write(" ".join(late) + "\n")
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush(), sys.stderr.flush()
        finally:
            os._exit(code)

while True:
    conn, _ = srv.accept()
    fds = []
    try:
        head, fds, _, _ = socket.recv_fds(conn, 8, 3)
        stream = conn.makefile("rb")  # read(n) blocks until n bytes (or EOF)
        fields = stream.read(int(head + stream.read(8 - len(head)))).split(b"\0")
        stream.close()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            child(conn, fields, fds)
        _, status, ru = os.wait4(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        cpu_us = (ru.ru_utime + ru.ru_stime) * 1e6
        if fds:
            with open(os.path.join(logdir, "send-cpu.txt"), "a") as f:
                f.write("%d\n" % cpu_us)
        conn.sendall(b"X%d %d\n" % (code if code >= 0 else 128 - code, cpu_us))
    except Exception:
        traceback.print_exc()
    finally:
        for fd in fds:
            os.close(fd)
        conn.close()
'''

CLIENT = r'''import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(SOCKET_PATH)
body = b"\0".join([b"", os.getcwdb(), b"%d" % (len(sys.argv) - 1), *map(os.fsencode, sys.argv[1:]),
                   *(k + b"=" + v for k, v in os.environb.items())])
socket.send_fds(s, [b"%08d" % len(body)], [0, 1, 2])
s.sendall(body)
reply = b""
while not reply.endswith(b"\n"):
    chunk = s.recv(64)
    if not chunk:
        os._exit(111)
    reply += chunk
os._exit(int(reply.split()[0][1:]))
'''


class Server:
    """One template server (own session), its socket and log; ``request`` is the bench's own client."""

    def __init__(self, root: Path, mode: str, home: Path, env: dict[str, str]) -> None:
        self.path, self.log = root / f"{mode}.sock", root / f"{mode}-server.log"
        script = root / "server.py"
        script.write_text(SERVER)
        with open(self.log, "wb") as log:
            self.popen = subprocess.Popen([sys.executable, str(script), mode, str(self.path), str(home),
                                           str(root)], env=env, cwd=root, stdin=subprocess.DEVNULL,
                                          stdout=subprocess.PIPE, stderr=log, start_new_session=True)
        assert self.popen.stdout is not None
        if self.popen.stdout.readline().strip() != b"ready":
            self.stop()
            raise RuntimeError(f"{mode} server did not start: {self.log.read_text().strip()[-500:]}")
        self.proc = psutil.Process(self.popen.pid)

    def request(self, flags: bytes = b"", argv: tuple[str, ...] = (), held: list[float] | None = None) -> tuple[int, float]:
        """(exit status, child CPU ms); with ``held``, the child's USS (MiB) is appended while it is held."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(30)
            s.connect(str(self.path))
            body = b"\0".join([flags, b"/", b"%d" % len(argv), *(a.encode() for a in argv)])
            s.sendall(b"%08d" % len(body) + body)
            reply = s.makefile("rb")
            if held is not None:
                pid = int(reply.readline()[1:])
                held.append(psutil.Process(pid).memory_full_info().uss / MB)
                s.sendall(b"x")
            status, cpu_us = reply.readline()[1:].split()
            return int(status), int(cpu_us) / 1000

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            os.killpg(self.popen.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            self.popen.wait(timeout=5)
        if self.popen.stdout:
            self.popen.stdout.close()


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, int]:
    """(wall ms, CPU ms of the child, exit status) of one run, as a shell would run it.

    A blocking wait, not ``subprocess.run(timeout=...)``: that polls with sleeps of 0.5, 1, 2, 4, 8 ms...
    and so rounds every figure up to ~16 / 32 / 64 ms. A hung call is ended by SIGALRM instead.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    popen = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    signal.alarm(60)
    try:
        code = popen.wait()
    finally:
        signal.alarm(0)
        if popen.returncode is None:
            popen.kill()
            popen.wait()
    wall = (time.perf_counter() - began) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, 1000 * ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)), code


def med(values: list[float]) -> float:
    return median_of(batch_medians(values, BATCHES))


def fresh_memory(env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(RSS, USS) MiB of a fresh interpreter that imported swarm.teammate.__main__ and waits."""
    code = "import os, swarm.teammate.__main__; os.write(1, b'r'); os.read(0, 1)"
    with subprocess.Popen([sys.executable, "-c", code], env=env, cwd=cwd, stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE) as popen:
        try:
            assert popen.stdout is not None
            popen.stdout.read(1)
            info = psutil.Process(popen.pid).memory_full_info()
            return info.rss / MB, info.uss / MB
        finally:
            popen.kill()


def run(root: Path, calls: int, figures: list[Figure], notes: list[str]) -> None:
    home, work = root / "home", root / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "SWARM_"))}
    env["SWARM_HOME"] = str(home)
    beside = Path(sys.executable).with_name("swarm")
    swarm = str(beside) if beside.exists() else (shutil.which("swarm") or "swarm")
    py = sys.executable
    subprocess.run([swarm, "team", "create", "bench"], env=env, cwd=work, capture_output=True, check=True)
    servers: list[Server] = []
    try:
        send_srv = Server(root, "send", home, env)
        servers.append(send_srv)
        client = root / "client.py"
        client.write_text(CLIENT.replace("SOCKET_PATH", repr(str(send_srv.path))))
        args = ["send", "team-lead", "hello from the shell", "--team", "bench"]
        variants = {"normal": [swarm, *args], "thin": [py, "-I", "-S", str(client), *args],
                    "thin-site": [py, str(client), *args], "pass": [py, "-c", "pass"],
                    "pass-IS": [py, "-I", "-S", "-c", "pass"]}
        results: dict[str, list[tuple[float, float, int]]] = {k: [] for k in variants}
        print(f"... swarm send: {calls} rounds of {', '.join(variants)}", flush=True)
        for _ in range(calls):
            for name, argv in variants.items():
                results[name].append(timed(argv, env, work))
        sends = 3 * calls
        inbox = home / "teams" / "bench" / "inboxes" / "team-lead.json"
        entries = len(json.loads(inbox.read_text())) if inbox.exists() else 0
        failed = sum(1 for k in ("normal", "thin", "thin-site") for r in results[k] if r[2] != 0)
        wall = {k: med([r[0] for r in v]) for k, v in results.items()}
        cpu = {k: med([r[1] for r in v]) for k, v in results.items()}
        figures += [
            *(Figure(f"`swarm send`, {label}", "<= 100 ms", wall[k], wall["pass"], " ms", 1, lambda v: v <= 100)
              for k, label in (("normal", "normal: fresh `swarm` process"),
                               ("thin", "template: `python -I -S client.py`"),
                               ("thin-site", "template: `python client.py` (site)"))),
            Figure("`python -I -S -c pass` (thin client's floor)", "", wall["pass-IS"], wall["pass"], " ms", 1),
            Figure(f"lead's inbox entries after {sends} sends", f"== {sends}", float(entries), float(sends),
                   digits=0, met=lambda v: v == sends),
            Figure(f"sends that exited non-zero (of {sends})", "0", float(failed), None, digits=0,
                   met=lambda v: v == 0)]
        late = root / "late-imports.txt"
        late_mods = sorted(set(late.read_text().split())) if late.exists() else []
        notes.append("modules a send child still imported after the fork: " + (", ".join(late_mods) or "none"))
        send_cpu = [int(x) / 1000 for x in (root / "send-cpu.txt").read_text().split()]
        notes.append(f"CPU per send: normal {cpu['normal']:.1f} ms; template: client {cpu['thin']:.1f} ms (-I -S) "
                     f"/ {cpu['thin-site']:.1f} ms (site) + forked child {med(send_cpu):.1f} ms (wait4); "
                     f"python -c pass {cpu['pass']:.1f} ms")

        held_send: list[float] = []
        send_srv.request(b"hold", ("--version",), held_send)  # the child runs `swarm --version` when released
        send_rss = send_srv.proc.memory_info().rss / MB

        tm_srv = Server(root, "teammate", home, env)
        servers.append(tm_srv)
        print(f"... teammate start: {calls} rounds of normal imports and template forks", flush=True)
        imports = [timed([py, "-c", "import swarm.teammate.__main__"], env, work) for _ in range(calls)]
        t0 = tm_srv.proc.cpu_times()
        forks: list[tuple[float, float, int]] = []
        for _ in range(calls):
            began = time.perf_counter()
            status, child_cpu = tm_srv.request()
            forks.append(((time.perf_counter() - began) * 1000, child_cpu, status))
        t1 = tm_srv.proc.cpu_times()
        server_cpu = 1000 * ((t1.user - t0.user) + (t1.system - t0.system)) / calls
        norm_wall, norm_cpu = med([r[0] for r in imports]), med([r[1] for r in imports])
        fork_wall, fork_child = med([r[0] for r in forks]), med([r[1] for r in forks])
        fork_cpu = fork_child + server_cpu
        bad = sum(1 for r in imports + forks if r[2] != 0)
        tm_rss = tm_srv.proc.memory_info().rss / MB
        held: list[float] = []
        held_gc: list[float] = []
        for _ in range(3):  # 3 children each, held while their USS is read
            tm_srv.request(b"hold", (), held)
            tm_srv.request(b"gc,hold", (), held_gc)
        fresh_rss, fresh_uss = fresh_memory(env, work)
        figures += [
            Figure("teammate imports, normal: start to exit", "", norm_wall, wall["pass"], " ms", digits=1),
            Figure("teammate imports, normal: CPU per process", "", norm_cpu, cpu["pass"], " ms", digits=1),
            Figure("teammate, template: request -> child reaped", "", fork_wall, norm_wall, " ms", digits=1),
            Figure("teammate, template: CPU per child (+ server)", "", fork_cpu, norm_cpu, " ms", digits=2,
                   note=f"child {fork_child:.2f} ms (wait4) + server {server_cpu:.2f} ms per request"),
            Figure("16 teammates on 2 cores, normal: 16 x CPU / 2", "", 8 * norm_cpu / 1000, 8 * cpu["pass"] / 1000,
                   " s", digits=2),
            Figure("16 teammates on 2 cores, template: 16 x CPU / 2", "", 8 * fork_cpu / 1000, 8 * norm_cpu / 1000,
                   " s", digits=3),
            Figure("teammate start-ups that exited non-zero", "0", float(bad), None, digits=0, met=lambda v: v == 0),
            Figure("send template server RSS", "", send_rss, None, " MiB", digits=1),
            Figure("teammate template server RSS", "", tm_rss, fresh_rss, " MiB", digits=1),
            Figure("send child USS, held after fork", "", held_send[0], None, " MiB", digits=2),
            Figure("teammate child USS, held after fork", "", min(held), fresh_uss, " MiB", digits=2,
                   note="each of 3: " + ", ".join(f"{u:.2f}" for u in held) + " MiB"),
            Figure("teammate child USS after fork + gc.collect()", "", min(held_gc), fresh_uss, " MiB", digits=2,
                   note="each of 3: " + ", ".join(f"{u:.2f}" for u in held_gc) + " MiB")]
    finally:
        for server in servers:
            server.stop()
            log = server.log.read_text().strip() if server.log.exists() else ""
            if log:
                notes.append(f"{server.path.stem} server stderr (last 300 chars): {log[-300:]!r}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fewer calls")
    args = parser.parse_args()
    calls = 15 if args.quick else 40
    figures: list[Figure] = []
    notes: list[str] = []
    root = Path(tempfile.mkdtemp(prefix="swarm-bt-", dir="/tmp" if os.path.isdir("/tmp") else None)).resolve()

    def interrupt(signum: int, frame: object) -> None:
        if signum == signal.SIGALRM:
            raise TimeoutError("a timed call took over 60 s")
        raise KeyboardInterrupt(signal.Signals(signum).name)

    old = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGALRM)}
    try:
        run(root, calls, figures, notes)
    except KeyboardInterrupt as exc:
        print(f"\ninterrupted ({str(exc) or 'SIGINT'}); cleaning up", file=sys.stderr)
        return 130
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        figures.append(Figure("run completed", "yes", None, met=bool, note=f"stopped early: {exc}"))
    finally:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not stop the cleanup
        shutil.rmtree(root, ignore_errors=True)
        signal.signal(signal.SIGINT, previous)
        for sig, handler in old.items():
            signal.signal(sig, handler)
    notes += [
        f"{calls} calls per variant, interleaved; baselines: `python -c pass` (normal and floor rows), the normal "
        "path (template teammate rows: ratio = template / normal), a fresh process with the teammate's imports (memory)",
        "the template teammate child exits at once, so the copy-on-write faults a running teammate takes (refcounts, "
        "gc) are not in its CPU; the gc.collect() row shows how much un-shares (gc.freeze() before fork: not tried)",
        "a real template would still need: a tmux pane must hold a process, so it would run a client that stays "
        "connected and forwards signals (INT/TERM/HUP/WINCH) and the tty, or the child must take over the pane's "
        "tty and session; pid/procStart identity (liveness, kill, shutdown know the client's pid, and the child "
        "is the server's child, not the spawner's); concurrent requests (this one serves one at a time); a restart "
        "when swarm is upgraded (a long-lived template runs stale code); no threads before fork (none here); "
        "resetting logging/signal state per child; socket permissions; and someone to start, supervise and stop "
        "the server -- whose own start-up (imports) is what the first call would pay",
    ]
    print_table(f"bench_template ({'--quick' if args.quick else 'full'}): template fork server vs fresh process",
                figures, notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
