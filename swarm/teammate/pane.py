"""A teammate's own output: its live events drawn on its stdout — its tmux pane, or a subprocess's log file.

On a terminal (a tmux pane) each event is drawn in colour (``live_render.ansi``)
and the model's text streams in as it is produced; when the message is
complete the streamed rows are replaced by the message as every view shows it.
Anywhere else (a subprocess teammate's stdout is its log file) each event is a
plain line and streamed pieces are left out: the complete text follows.
Every text is made safe for the terminal by ``live_render`` (a model's ESC,
OSC 52 or bidi override is shown escaped); the only raw bytes written are the
style codes and, on a terminal, the cursor moves that take back streamed rows.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import threading
from typing import TextIO

from swarm.agent.live_events import LiveEvent
from swarm.agent.live_render import ansi, delta, lines, plain
from swarm.core.home import Home, ensure_dir
from swarm.core.text import TerminalLogFormatter

ERASE_BELOW = "\x1b[J"


class PaneWriter:
    """Draws live events on ``stream`` (stdout by default); safe from any thread."""

    def __init__(self, stream: TextIO | None = None, *, terminal: bool | None = None) -> None:
        self.stream = stream or sys.stdout
        self.terminal = self.stream.isatty() if terminal is None else terminal
        self._lock = threading.Lock()
        self._streamed = ""

    def show(self, event: LiveEvent) -> None:
        with self._lock:
            if event.type == "text_delta":
                if self.terminal:
                    piece = delta(event)
                    self._streamed += piece
                    self._write(piece)
                return
            out = self._take_back()
            render = ansi if self.terminal else plain
            out += "".join(render(line) + "\n" for line in lines(event))
            self._write(out)

    def _take_back(self) -> str:
        """Cursor moves that take back the streamed rows (their complete text follows)."""
        if not self._streamed:
            return ""
        width = max(1, shutil.get_terminal_size((80, 24)).columns)
        rows = sum(max(1, -(-len(line) // width)) for line in self._streamed.split("\n"))
        self._streamed = ""
        return "\r" + (f"\x1b[{rows - 1}A" if rows > 1 else "") + ERASE_BELOW

    def _write(self, text: str) -> None:
        if not text:
            return
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            pass  # the pane is gone: the events file still has everything


def pane_writer() -> PaneWriter | None:
    """The writer for this process's stdout, or None when it has none (closed)."""
    try:
        os.fstat(1)
    except OSError:
        return None
    return PaneWriter()


def setup_logging(home: Home, team: str, name: str, label: str | None = None) -> None:
    """Log lines go to the log file, never over the pane's live view: in a tmux pane to ``logs/NAME.log``; a
    subprocess teammate's stderr already is that file. Each line says who wrote it: ``label``, else ``name``
    (the teammate's delivery worker writes to its teammate's log). Once per process (``logging.basicConfig``)."""
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if sys.stderr.isatty():
        path = home.log_path(team, name)
        ensure_dir(path.parent)
        handlers = [logging.FileHandler(path)]
    formatter = TerminalLogFormatter(f"%(asctime)s {label or name} %(levelname)s %(name)s: %(message)s")
    for handler in handlers:
        handler.setFormatter(formatter)
    logging.basicConfig(level=logging.INFO, handlers=handlers)
