"""What a CLI server's child does with one request: read it, check it, become the command.

The server (``swarm.cli.forkserver``) forks a child per connection (or hands
the connection to the child it forked ahead, its spare); the child reads
the request (``Request``: the client's argv, cwd, umask, environment and
fds 0-2, ``swarm.core.rendezvous`` writes it), answers ``P<pid>``, and on
``G`` takes the client's place and runs the command, ending with
``X<status>``; on ``D`` it forks a teammate loose instead (``_detach``).
"""

from __future__ import annotations

import os
import socket
import sys
import traceback
from dataclasses import dataclass
from typing import TYPE_CHECKING, NoReturn

from swarm.cli.entry import exit_now
from swarm.core.rendezvous import DETACH, GO, MAGIC, package_dir
from swarm.teammate import TEAMMATE

if TYPE_CHECKING:
    from swarm.teammate.delivery_worker import SharedSocket

REQUEST_TIMEOUT = 5.0
"""A client that connected has this long to send its request, and its child this long to be told "go"."""
MAX_BODY = 8 * 1024 * 1024


@dataclass(frozen=True)
class Request:
    """One command as the client would have run it."""

    prefix: str
    """The client interpreter's ``sys.prefix``: its venv."""
    package: str
    cwd: bytes
    umask: int
    argv: list[str]
    env: dict[bytes, bytes]

    @classmethod
    def parse(cls, body: bytes) -> Request:
        fields = body.split(b"\0")
        if len(fields) < 6 or fields[0] != MAGIC:
            raise ValueError("not a swarm CLI request")
        argc = int(fields[5])
        argv, env = fields[6:6 + argc], fields[6 + argc:]
        if len(argv) != argc or not all(b"=" in e for e in env):
            raise ValueError("malformed swarm CLI request")
        return cls(prefix=os.fsdecode(fields[1]), package=os.fsdecode(fields[2]), cwd=fields[3],
                   umask=int(fields[4], 8), argv=[os.fsdecode(a) for a in argv],
                   env=dict(e.split(b"=", 1) for e in env))


def run_request(conn: socket.socket, delivery: SharedSocket | None = None) -> NoReturn:
    """Become the client's command: its fds, cwd, umask, environment and argv; then run the CLI. ``delivery``:
    this child's connection to the server's shared delivery worker, kept if the command is a teammate."""
    status = 1
    fds: list[int] = []
    try:
        conn.settimeout(REQUEST_TIMEOUT)
        try:
            request, fds = _receive(conn)
        except (OSError, ValueError):
            os._exit(1)  # gone or nonsense: nothing ran
        if (request.prefix, request.package, request.env.get(b"PYTHONPATH")) != (
                sys.prefix, package_dir(), os.environb.get(b"PYTHONPATH")):
            conn.sendall(b"S\n")  # another installation shares this home: it runs its own commands
            os._exit(0)
        if delivery is not None and request.argv[1:2] != [TEAMMATE]:
            delivery.sock.close()  # not a teammate: the worker's thread for this child ends
            delivery = None
        conn.sendall(b"P%d\n" % os.getpid())
        answer = conn.recv(1)
        if answer == DETACH:
            _detach(conn, request, fds, delivery)
        if answer != GO:
            os._exit(1)  # the client gave up before "go": it runs the command itself
        conn.settimeout(None)
        take_over(request, fds)
        try:
            if request.argv[1:2] == [TEAMMATE]:
                status = _teammate(conn, delivery)
            else:
                import swarm.cli.main

                swarm.cli.main.main()
                status = 0
        except SystemExit as exc:  # click's and argparse's way out (--help, a usage error)
            status = exit_status(exc)
    except BaseException:
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):  # the output before the status that ends the client
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        try:
            conn.sendall(b"X%d\n" % status)
        except OSError:
            pass
        exit_now(status)


def _detach(conn: socket.socket, request: Request, fds: list[int], delivery: SharedSocket | None) -> NoReturn:
    """Fork the requested teammate loose (``swarm.core.rendezvous.fork_detached``): in a session of its own, tied
    to no launcher and no connection, reparented once this child exits. The teammate answers its own pid once it
    has left this child's process group; ``N`` when the request is not a teammate's (nothing ran)."""
    if request.argv[1:2] != [TEAMMATE]:
        conn.sendall(b"N\n")
        os._exit(1)
    if os.fork() != 0:
        os._exit(0)  # the teammate answers itself, once it is out of this child's process group
    status = 1
    try:
        os.setsid()  # first: a SIGHUP the server sends this child's group once the client hangs up misses it
        conn.sendall(b"W%d\n" % os.getpid())
        conn.close()
        take_over(request, fds)
        from swarm.backends.procs import name_process
        from swarm.teammate.__main__ import main
        from swarm.teammate.delivery_worker import DeliveryWorker
        from swarm.teammate.served import COMM

        name_process(COMM)
        status = main(sys.argv[2:], worker=DeliveryWorker.attach(delivery))
    except SystemExit as exc:
        status = exit_status(exc)
    except BaseException:
        traceback.print_exc()
    finally:
        exit_now(status)


def _teammate(conn: socket.socket, delivery: SharedSocket | None) -> int:
    """Become the teammate the client launches, tied to that launcher's life (``swarm.teammate.served``)."""
    from swarm.teammate.__main__ import main
    from swarm.teammate.delivery_worker import DeliveryWorker
    from swarm.teammate.served import Launcher

    # the server's shared worker; else one of its own, forked first thing (it copies each page this process made)
    worker = DeliveryWorker.attach(delivery) or DeliveryWorker.fork()
    return main(sys.argv[2:], launcher=Launcher.of(conn), worker=worker)


def take_over(request: Request, fds: list[int]) -> None:
    """Become the command ``request`` describes: ``fds`` (its stdin, stdout and stderr, closed here once they are
    0-2; none when they are already), new standard streams over them, its cwd, umask, environment and argv."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    fds.clear()
    encoding = sys.stdout.encoding or "utf-8"
    sys.stdin = open(0, encoding=encoding, closefd=False)
    sys.stdout = open(1, "w", buffering=1 if os.isatty(1) else -1, encoding=encoding, closefd=False)
    sys.stderr = open(2, "w", buffering=1, encoding=encoding, errors="backslashreplace", closefd=False)
    # the terminal size (shutil.get_terminal_size) is read from these: the caller's, not /dev/null
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr  # type: ignore[misc]
    os.chdir(request.cwd)
    os.umask(request.umask)
    os.environ.clear()
    os.environb.update(request.env)
    sys.argv = request.argv


def exit_status(exc: SystemExit) -> int:
    """The status a process ending with ``exc`` exits with, as the interpreter would give it."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    from swarm.cli.render import echo  # the forked command's own output path: click is loaded by now

    echo(str(exc.code), err=True)
    return 1


def _receive(conn: socket.socket) -> tuple[Request, list[int]]:
    head, fds, _, _ = socket.recv_fds(conn, 8, 3)
    if len(fds) != 3:
        for fd in fds:
            os.close(fd)
        raise ValueError("a request carries exactly fds 0-2")
    try:
        while len(head) < 8:
            more = conn.recv(8 - len(head))
            if not more:
                raise ValueError("request cut short")
            head += more
        size = int(head)
        if not 0 < size <= MAX_BODY:
            raise ValueError("request too large")
        chunks, left = [], size
        while left:
            chunk = conn.recv(min(left, 1 << 20))
            if not chunk:
                raise ValueError("request cut short")
            chunks.append(chunk)
            left -= len(chunk)
        return Request.parse(b"".join(chunks)), fds
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
