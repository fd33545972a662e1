"""Bash: run a shell command in the agent's cwd, with a timeout that kills the tree.

Each command runs as ``/bin/bash -c COMMAND`` (``sh`` where bash is missing)
in its own session, stdin from /dev/null, inheriting the environment. Stdout
and stderr go into one pipe, drained on a thread so a chatty child never
blocks on a full pipe; the text kept is capped to its head and tail.

Ending a command (timeout, or leftovers still attached to the output after
the shell exits) is ``stop_command``, which hands the command's shell to the
one process killer, ``swarm.backends.procs.kill_tree``: every descendant and
every process of the command's group and session (so children that escaped
the process group are not missed) gets SIGTERM, then SIGKILL after a short
grace. The shell's create time, read when it started, guards against a
reused pid. Commands inherit the agent's environment plus ``SWARM_MODEL_SHELL=1``
(a ``swarm send`` a command runs speaks for the model, not the person:
``core.protocol.command_author``), including a teammate's
``SWARM_PROC_TOKEN``, so whatever they start is also stopped when the
teammate is stopped or found dead (even after a ``kill -9``).

Results, following Claude Code:

- exit code 0 → the output (or ``(no output)``);
- non-zero exit → an *error* result (``ToolError``) with the output and
  ``exit code N`` (or ``killed by signal SIGNAME``) on the last line;
- timeout → an error result saying so, with the output so far;
- interrupted (``ctx.turn.interrupt``: the person's Ctrl-C in a session) → the
  command is stopped at once and the error result says so; a plain
  ``cancel`` (shutdown, ``swarm run -p``'s first Ctrl-C) lets it finish;
- ``run_in_background`` → returns at once with the pid and a log file; the
  ``Popen`` goes into ``ctx.background`` for the agent's owner to stop.

With a sandbox (``ctx.services.sandbox``, ``swarm.agent.sandbox``) the
command runs inside it (bubblewrap) unless the model asked to leave it
(``dangerouslyDisableSandbox``, refused when ``allowUnsandboxedCommands`` is
false) or it is one of ``excludedCommands``; the permission gate has decided
the same way (a sandboxed command may need no prompt).
"""

from __future__ import annotations

import codecs
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections import deque
from pathlib import Path
from typing import IO, cast

from pydantic import Field

from swarm.agent.output_cap import truncation_marker
from swarm.agent.tool_api.base import Tool
from swarm.agent.tool_api.context import ToolContext, ToolError
from swarm.agent.tool_api.inputs import NoneOmitted, PosInt, ToolInput
from swarm.agent.tool_api.processes import KILL_GRACE_SECONDS, stop_command
from swarm.backends.procs import process_create_time, scratch_dir
from swarm.core.protocol import MODEL_SHELL_ENV

DEFAULT_TIMEOUT_MS = 120_000
INTERRUPT_CHECK = 0.1
"""Seconds between checks, while a command runs, that the person interrupted the agent."""
MAX_TIMEOUT_MS = 600_000
MAX_OUTPUT_CHARS = 30_000
DRAIN_SECONDS = 1.0
"""How long output may keep flowing after the shell itself has exited."""

Popen = subprocess.Popen[bytes]


class BashInput(ToolInput):
    command: str = Field(description="The shell command to run (bash syntax).")
    timeout: PosInt | NoneOmitted = Field(
        default=None,
        description=f"Timeout in milliseconds (default {DEFAULT_TIMEOUT_MS}, max {MAX_TIMEOUT_MS}).",
    )
    description: str | NoneOmitted = Field(
        default=None, description="A short description (5-10 words) of what the command does."
    )
    run_in_background: bool = Field(
        default=False,
        description="Start the command in the background and return at once with its pid and a log "
        "file to Read for its output. Use for servers and other long-running processes.",
    )
    dangerously_disable_sandbox: bool | NoneOmitted = Field(
        default=None, alias="dangerouslyDisableSandbox",
        description="Run this command outside the sandbox (when one is on). It then needs approval like any "
        "unsandboxed command; use only when the sandbox stops a command that must run.",
    )


class BashTool(Tool[BashInput]):
    name = "Bash"
    description = (
        "Run a bash command in the working directory and return its combined stdout and stderr. "
        f"Times out after {DEFAULT_TIMEOUT_MS} ms by default (timeout, in ms, up to {MAX_TIMEOUT_MS}); "
        "on timeout the command and all processes it started are killed. A non-zero exit code is "
        f"reported as an error. Output over {MAX_OUTPUT_CHARS} characters is cut in the middle. "
        "stdin is /dev/null, so interactive commands will not work. Use run_in_background for "
        "long-running processes such as servers. Prefer Read, Glob and Grep to cat, find and grep."
    )
    input_model = BashInput
    read_only = False

    def __init__(self, shell: str | None = None, kill_grace: float = KILL_GRACE_SECONDS) -> None:
        self._shell = shell or default_shell()
        self._kill_grace = kill_grace

    def run(self, args: BashInput, ctx: ToolContext) -> str:
        sandbox = ctx.services.sandbox
        refusal = sandbox.refusal(bool(args.dangerously_disable_sandbox)) if sandbox is not None else None
        if refusal is not None:
            raise ToolError(f"not run: {refusal}")
        boxed = (sandbox.enter(self._shell, args.command, ctx.identity.cwd, ctx.identity.write_roots,
                               background=args.run_in_background)
                 if sandbox is not None and sandbox.runs_sandboxed(args.command, bool(args.dangerously_disable_sandbox),
                                                                   ctx.identity.cwd) else None)
        argv = boxed.argv if boxed is not None else [self._shell, "-c", args.command]
        if args.run_in_background:
            return self._start_background(argv, ctx)
        timeout_ms = min(args.timeout or DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS)
        try:
            return self._run_foreground(argv, timeout_ms, ctx)
        finally:
            if boxed is not None:
                boxed.finished()

    def _run_foreground(self, command: list[str], timeout_ms: int, ctx: ToolContext) -> str:
        proc = self._spawn(command, ctx, subprocess.PIPE)
        created = process_create_time(proc.pid)  # our unreaped child: the pid is still ours
        capture = OutputCapture(cast(IO[bytes], proc.stdout), MAX_OUTPUT_CHARS)
        timed_out = lingering = False
        try:
            timed_out = not _wait(proc, timeout_ms / 1000, ctx.turn.interrupt)
            lingering = not timed_out and not capture.join(DRAIN_SECONDS)
        finally:
            if timed_out or lingering or proc.returncode is None:
                stop_command(proc, self._kill_grace, created)
                capture.join(DRAIN_SECONDS)
        if timed_out and ctx.turn.interrupt.is_set():
            raise ToolError(f"Command interrupted by the user and was killed.\n{_body(capture.text())}")
        if timed_out:
            raise ToolError(f"Command timed out after {timeout_ms} ms and was killed.\n{_body(capture.text())}")
        return _result(capture.text(), proc.returncode, lingering)

    def _start_background(self, command: list[str], ctx: ToolContext) -> str:
        log = _new_log(ctx)
        with log.open("wb") as out:
            proc = self._spawn(command, ctx, out)
        ctx.background.append(proc)
        return (
            f"Started in the background: pid {proc.pid}. Output (stdout and stderr) goes to {log}; "
            "Read that file to follow it. The process is stopped when this agent finishes."
        )

    def _spawn(self, command: list[str], ctx: ToolContext, stdout: int | IO[bytes]) -> Popen:
        try:
            return subprocess.Popen(
                command, cwd=ctx.identity.cwd, env={**os.environ, MODEL_SHELL_ENV: "1"},
                stdin=subprocess.DEVNULL, stdout=stdout, stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            raise ToolError(f"could not start {command[0]} in {ctx.identity.cwd}: {exc.strerror or exc}") from exc


def _new_log(ctx: ToolContext) -> Path:
    """A new file for a background command's output, in the agent's own directory (removed with its commands)."""
    try:
        if ctx.background_logs is None or not ctx.background_logs.is_dir():
            ctx.background_logs = scratch_dir("bash")  # named after a teammate's token: swept if it is killed
        fd, name = tempfile.mkstemp(prefix="bg-", suffix=".log", dir=ctx.background_logs)
        os.close(fd)
    except OSError as exc:
        raise ToolError(f"could not create a log file for the background command: {exc}") from exc
    return Path(name)


def declared_timeout_s(tool_input: dict[str, object]) -> float | None:
    """Seconds a foreground Bash call may run before it is killed (its ``timeout``, capped; the default without
    one); None for a background one (no limit). What the watchdog holds a stuck call to (``runtime/watchdog.py``)."""
    if tool_input.get("run_in_background"):
        return None
    asked = tool_input.get("timeout")
    millis = asked if isinstance(asked, int) and not isinstance(asked, bool) and asked > 0 else DEFAULT_TIMEOUT_MS
    return min(millis, MAX_TIMEOUT_MS) / 1000


def default_shell() -> str:
    if os.access("/bin/bash", os.X_OK):
        return "/bin/bash"
    return shutil.which("bash") or shutil.which("sh") or "/bin/sh"


def _wait(proc: Popen, seconds: float, interrupt: threading.Event) -> bool:
    """True if ``proc`` exited within ``seconds``; False at the deadline or as soon as ``interrupt`` is set."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            proc.wait(timeout=max(0.0, min(INTERRUPT_CHECK, deadline - time.monotonic())))
            return True
        except subprocess.TimeoutExpired:
            if interrupt.is_set() or time.monotonic() >= deadline:
                return False


# --- results -----------------------------------------------------------------


def _body(output: str) -> str:
    return output.rstrip("\n") or "(no output)"


def _result(output: str, code: int, lingering: bool) -> str:
    """The tool result for a command that finished; ToolError for a non-zero exit."""
    text = _body(output)
    if lingering:
        text += (
            "\n(processes the command left running still held its output open and were stopped; "
            "use run_in_background for long-running processes)"
        )
    if code != 0:
        raise ToolError(f"{text}\n{_exit_text(code)}")
    return text


def _exit_text(code: int) -> str:
    if code >= 0:
        return f"exit code {code}"
    try:
        return f"killed by signal {signal.Signals(-code).name}"
    except ValueError:
        return f"killed by signal {-code}"


# --- output capture ----------------------------------------------------------


class OutputCapture:
    """Drains a byte stream on a daemon thread, keeping its head and tail as text.

    Memory stays bounded however much the child writes: the first ``cap/2``
    characters and roughly the last ``cap/2`` are kept, the rest only counted.
    The thread closes the stream when it reaches end of file.
    """

    def __init__(self, stream: IO[bytes], cap: int = MAX_OUTPUT_CHARS) -> None:
        self._stream = stream
        self._half = cap // 2
        self._head: list[str] = []
        self._head_len = 0
        self._tail: deque[str] = deque()
        self._tail_len = 0
        self._total = 0
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._drain, name="bash-output", daemon=True)
        self._thread.start()

    def join(self, timeout: float) -> bool:
        """Wait up to ``timeout`` s for end of file; True if it was reached."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def text(self) -> str:
        """What was read so far, with a marker where the middle was dropped."""
        with self._lock:
            head = "".join(self._head)
            tail = "".join(self._tail)[-self._half:] if self._tail else ""
            omitted = self._total - len(head) - len(tail)
        if omitted <= 0:
            return head + tail
        return f"{head}\n{truncation_marker(omitted)}\n{tail}"

    def _drain(self) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        fd = self._stream.fileno()
        try:
            while chunk := os.read(fd, 65536):
                self._add(decoder.decode(chunk))
            self._add(decoder.decode(b"", final=True))
        except OSError:
            pass  # the pipe broke: nothing more will come
        finally:
            self._stream.close()

    def _add(self, text: str) -> None:
        with self._lock:
            self._total += len(text)
            room = self._half - self._head_len
            if room > 0:
                self._head.append(text[:room])
                self._head_len += len(text[:room])
                text = text[room:]
            if text:
                self._tail.append(text)
                self._tail_len += len(text)
                while self._tail_len - len(self._tail[0]) >= self._half:
                    self._tail_len -= len(self._tail.popleft())


# --- stopping a command -------------------------------------------------------
