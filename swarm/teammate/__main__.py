"""``python -m swarm.teammate ...``: a teammate process (a backend starts it through ``swarm.cli.entry``,
which forks it from the CLI server when one answers: ``swarm.teammate.served``)."""

from __future__ import annotations

from swarm.startup import hold_collector, startup_done

if __name__ == "__main__":
    hold_collector()  # until the imports below are done and the session is built

import logging
import os
import signal
import sys
from collections.abc import Callable
from types import FrameType
from typing import TextIO

from swarm.agent.live_events import LiveEvent
from swarm.core.frames import build_validators
from swarm.core.home import Home
from swarm.errors import SwarmError
from swarm.teammate.config import parse_args
from swarm.teammate.delivery_worker import DeliveryWorker
from swarm.teammate.pane import pane_writer, setup_logging
from swarm.teammate.served import Launcher
from swarm.teammate.session import TeammateSession, Terminated


def _turn_signals(sessions: list[TeammateSession]) -> Callable[[int, FrameType | None], None]:
    """SIGINT interrupts the running turn — Ctrl-C in the teammate's pane, or swarm reaching it from elsewhere
    (``MemberKind.interrupt``: the session's teammate view, the watchdog); other signals stop it, once.

    Only the first stop raises ``Terminated``: a force stop's SIGTERM reaches the teammate several times
    (``kill_tree`` signals its group, its session and its token's processes; a launcher forwards its own), and
    a second one raised inside the end's clean-up would cut it short (its commands left running, its
    background output left in /tmp, no ``left`` record). What outlasts the clean-up is SIGKILLed anyway.
    """
    stopping: list[str] = []

    def handler(signum: int, frame: FrameType | None) -> None:
        if stopping:
            return  # already ending
        if signum == signal.SIGINT and sessions:
            sessions[0].interrupt()
            return
        stopping.append(signal.Signals(signum).name)
        raise Terminated(stopping[0])

    return handler


def main(argv: list[str] | None = None, launcher: Launcher | None = None,
         worker: DeliveryWorker | None = None) -> int:
    """Run a teammate until it stops; ``launcher``: this process was forked for it by the CLI server; ``worker``:
    its delivery worker, the server's shared one or forked for it (else one is forked here)."""
    worker = worker or DeliveryWorker.fork()  # first thing: the fewer pages this process has made its own
    try:
        return _run(argv, launcher, worker)
    finally:
        if worker is not None:
            worker.close()  # ended with the session already, unless there was none


def _run(argv: list[str] | None, launcher: Launcher | None, worker: DeliveryWorker | None) -> int:
    config = parse_args(sys.argv[1:] if argv is None else argv)
    typing = config.backend == "tmux" and _is_terminal(sys.stdin)
    sessions: list[TeammateSession] = []
    on_signal = _turn_signals(sessions)
    handler = on_signal if launcher is None else launcher.bind(on_signal)
    home = Home.from_env(config.home)
    setup_logging(home, config.team, config.name)
    build_validators()  # before the handlers (``core.frames.build_validators``); built already when forked
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, handler)
    pane = pane_writer()
    try:
        session = TeammateSession(config, home, dict(os.environ), launcher=launcher, pane=pane,
                                  pane_input=sys.stdin if typing else None, delivery_worker=worker)
        sessions.append(session)
        startup_done()
        return session.run()
    except SwarmError as exc:
        logging.getLogger("swarm.teammate").error("teammate failed: %s", exc)
        if pane is not None and pane.terminal:  # the log is not where a person looking at the pane reads
            pane.show(LiveEvent(type="warning", text=f"teammate failed: {exc}"))
        return 1
    except Terminated as exc:
        logging.getLogger("swarm.teammate").info("teammate stopped by %s", exc)
        return 143


def _is_terminal(stream: TextIO | None) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (OSError, ValueError):
        return False


if __name__ == "__main__":
    sys.exit(main())
