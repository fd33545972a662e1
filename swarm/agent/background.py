"""Background subagents of one parent: start, observe, stop, and tell the parent once.

A background subagent runs in a thread of the parent's process. Its work is
almost all waiting (on the model over HTTP, on tool subprocesses), which
releases the GIL; a thread shares the parent's permission gate, mailbox and
home without any new inter-process channel, and dies with the parent, whose
exit stops it (``stop_all``). Its state is kept here:

    running ──▶ completed | failed | killed

with tokens, tool uses and the last five activities, readable at any time
(``TaskOutput``). When it ends, exactly one ``<task-notification>`` goes to
the parent's ``NotificationSink``: an in-process queue that the parent's loop
drains before its next model call (``swarm run``), or the teammate's own inbox
(so an idle teammate is woken, and the notice is delivered like any message).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Literal, Protocol

from swarm.agent.peer_messages import neutral

log = logging.getLogger(__name__)

TaskStatus = Literal["running", "completed", "failed", "killed"]
ACTIVITIES = 5
"""How many recent activities a task remembers."""
STOP_JOIN = 5.0
"""Seconds ``stop_all`` waits for each stopped thread to finish its step."""


@dataclass
class BackgroundAgent:
    """One background subagent, as the parent can see it."""

    id: str
    description: str
    agent_type: str
    output_file: Path
    """The child's transcript: it grows while the child works."""
    name: str | None = None
    status: TaskStatus = "running"
    tokens: int = 0
    tool_uses: int = 0
    activities: deque[str] = field(default_factory=lambda: deque(maxlen=ACTIVITIES))
    result: str | None = None
    error: str | None = None
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None
    cancel: threading.Event = field(default_factory=threading.Event)
    interrupt: threading.Event = field(default_factory=threading.Event)
    """Set with ``cancel`` by ``stop``: what the child runs now ends too (its command killed, its answer cut)."""
    notified: bool = False
    inbox: deque[str] = field(default_factory=deque)
    """Messages from the parent (SendMessage) that the running child reads before its next step."""

    @property
    def duration_ms(self) -> int:
        return int(((self.ended or time.monotonic()) - self.started) * 1000)

    def describe(self) -> str:
        """A few lines for TaskOutput: state, totals, recent activity, and the result or error."""
        lines = [f"task_id: {self.id}", f"status: {self.status}", f"description: {self.description}",
                 f"agent_type: {self.agent_type}", f"tokens: {self.tokens}", f"tool_uses: {self.tool_uses}",
                 f"duration_ms: {self.duration_ms}", f"output_file: {self.output_file}"]
        if self.activities:
            lines.append("recent activity:\n" + "\n".join(f"  - {a}" for a in self.activities))
        if self.result is not None:
            lines.append(f"result:\n{self.result}")
        if self.error is not None:
            lines.append(f"error: {self.error}")
        return "\n".join(lines)


def notification_text(task: BackgroundAgent) -> str:
    """The ``<task-notification>`` the parent reads as a new user turn."""
    verb = {"completed": "completed", "failed": "failed", "killed": "was stopped"}.get(task.status, task.status)
    body = task.result if task.status == "completed" else (task.error or task.result or "")
    return (f"<task-notification>\n<task-id>{task.id}</task-id>\n<status>{task.status}</status>\n"
            f"<summary>Agent \"{escape(task.description)}\" {verb}</summary>\n"
            f"<result>{neutral(str(body))}</result>\n"
            f"<usage>total_tokens: {task.tokens}\ntool_uses: {task.tool_uses}\n"
            f"duration_ms: {task.duration_ms}</usage>\n</task-notification>")


Work = Callable[[BackgroundAgent, bool], str]
"""A background task's body: ``(task, first round?) -> result``."""


class NotificationSink(Protocol):
    """Where a parent receives its children's notifications."""

    def post(self, task: BackgroundAgent) -> None: ...


class QueueSink:
    """An in-process queue of notification texts, drained by the parent's loop."""

    def __init__(self) -> None:
        self._texts: deque[str] = deque()
        self._ready = threading.Condition()

    def post(self, task: BackgroundAgent) -> None:
        with self._ready:
            self._texts.append(notification_text(task))
            self._ready.notify_all()

    def take(self) -> list[str]:
        """Every notification not taken yet (each is taken exactly once)."""
        with self._ready:
            texts = list(self._texts)
            self._texts.clear()
            return texts

    def wait(self, timeout: float) -> bool:
        """Block until a notification is waiting (True) or ``timeout`` passes."""
        with self._ready:
            return self._ready.wait_for(lambda: bool(self._texts), timeout)


class BackgroundAgents:
    """The background subagents of one parent agent."""

    def __init__(self, sink: NotificationSink) -> None:
        self.sink = sink
        self._tasks: dict[str, BackgroundAgent] = {}
        self._threads: dict[str, threading.Thread] = {}
        self._lock = threading.Lock()

    def start(self, task: BackgroundAgent, work: Work) -> BackgroundAgent:
        """Run ``work(task, first)`` in a thread; its return value is the result, an exception the failure.

        ``first`` is False when ``work`` runs again for messages that arrived as it finished.
        """
        with self._lock:
            self._tasks[task.id] = task
        thread = threading.Thread(target=self._run, args=(task, work), name=f"subagent-{task.id}", daemon=True)
        self._threads[task.id] = thread
        thread.start()
        return task

    def _run(self, task: BackgroundAgent, work: Work) -> None:
        """Run ``work`` until it ends with nothing queued for it; messages that came meanwhile start another round."""
        first = True
        while True:
            try:
                result = work(task, first)
            except Exception as exc:  # a child's failure is the parent's news, never a crash of the parent
                log.warning("background subagent failed", extra={"task_id": task.id, "reason": str(exc)})
                self._finish(task, "failed", error=str(exc) or type(exc).__name__)
                return
            first = False
            if self._finish(task, "killed" if task.cancel.is_set() else "completed", result=result):
                return

    def _finish(self, task: BackgroundAgent, status: TaskStatus, *, result: str | None = None,
                error: str | None = None) -> bool:
        """End the task and notify, once; False (and nothing changes) while messages wait for a completed task."""
        with self._lock:
            if task.notified:
                return True
            if status == "completed" and task.inbox and not task.cancel.is_set():
                return False  # checked under the lock ``deliver`` takes: no message can slip in unread
            if task.status == "running":
                task.status, task.result, task.error = status, result, error
                task.ended = time.monotonic()
            task.notified = True
        self.sink.post(task)
        return True

    def deliver(self, task: BackgroundAgent, text: str) -> bool:
        """Queue ``text`` for ``task`` if it is still running (True); False if it has ended."""
        with self._lock:
            if task.status != "running":
                return False
            task.inbox.append(text)
            return True

    def drain(self, task: BackgroundAgent) -> list[str]:
        """The messages queued for ``task``, each handed out once."""
        with self._lock:
            texts = list(task.inbox)
            task.inbox.clear()
            return texts

    def resume(self, task: BackgroundAgent, flags: tuple[threading.Event, threading.Event], work: Work) -> None:
        """Run an ended task again (a new message for it), with new ``(cancel, interrupt)`` flags: running, and
        owing one more notification."""
        with self._lock:
            task.status, task.result, task.error, task.ended, task.notified = "running", None, None, None, False
            (task.cancel, task.interrupt), task.started = flags, time.monotonic()
        thread = threading.Thread(target=self._run, args=(task, work), name=f"subagent-{task.id}", daemon=True)
        self._threads[task.id] = thread
        thread.start()

    def get(self, key: str) -> BackgroundAgent | None:
        """A task by id, or by name (the latest one of that name)."""
        with self._lock:
            if key in self._tasks:
                return self._tasks[key]
            named = [t for t in self._tasks.values() if t.name == key]
            return named[-1] if named else None

    def running(self) -> list[BackgroundAgent]:
        with self._lock:
            return [t for t in self._tasks.values() if t.status == "running"]

    def unfinished(self) -> bool:
        """True while a task has not told the parent it ended."""
        with self._lock:
            return any(not t.notified for t in self._tasks.values())

    def wait(self, task: BackgroundAgent, timeout: float) -> bool:
        """Block until ``task``'s thread is done (True) or ``timeout`` passes."""
        thread = self._threads.get(task.id)
        if thread is not None:
            thread.join(timeout)
        return task.status != "running"

    def stop(self, task: BackgroundAgent) -> None:
        """Stop the task now, as an interrupt stops a turn: a command it runs is killed, an answer the model is
        writing is cut; it counts as killed from now on."""
        task.cancel.set()
        task.interrupt.set()
        with self._lock:
            if task.status == "running":
                task.status, task.ended = "killed", time.monotonic()
                task.error = "stopped by the parent (TaskStop)"

    def stop_all(self) -> None:
        """Stop every running task and wait briefly for each (the parent is leaving)."""
        for task in self.running():
            self.stop(task)
        for task_id, thread in list(self._threads.items()):
            thread.join(STOP_JOIN)
            if thread.is_alive():
                log.warning("background subagent still running at exit", extra={"task_id": task_id})
