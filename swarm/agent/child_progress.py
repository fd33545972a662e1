"""How far a subagent has got: its tokens, tool uses and recent activities, counted as it runs.

``ChildProgress`` is fed by the child's loop (each message it sees) and by ``CountedProvider`` (each response's
usage); with a background task, the counts land on it for ``/tasks`` and the task notification.
"""

from __future__ import annotations

import threading

from swarm.agent.background import BackgroundAgent
from swarm.models.base import ModelProvider, ModelRequest, ModelResponse
from swarm.models.messages import Message, ToolUseBlock, Usage


class ChildProgress:
    """Counts a child's tokens, tool uses and recent activities (into its background task, if any)."""

    def __init__(self, task: BackgroundAgent | None) -> None:
        self.task = task
        self.tool_uses = 0
        self.usage = Usage()

    def saw(self, message: Message) -> None:
        for use in message.tool_uses():
            self.tool_uses += 1
            if self.task is not None:
                self.task.tool_uses = self.tool_uses
                self.task.activities.append(activity_line(use))

    def used(self, usage: Usage) -> None:
        self.usage = self.usage + usage
        if self.task is not None:
            self.task.tokens = self.usage.total


def activity_line(use: ToolUseBlock) -> str:
    detail = next((str(use.input[k]) for k in ("command", "file_path", "pattern", "prompt", "to") if k in use.input),
                  "")
    return f"{use.name}: {detail[:80]}" if detail else use.name


class CountedProvider:
    """A provider that reports each response's usage to a ``ChildProgress``."""

    def __init__(self, inner: ModelProvider, progress: ChildProgress) -> None:
        self._inner = inner
        self._progress = progress

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def model(self) -> str:
        return self._inner.model

    def complete(self, request: ModelRequest, stop: threading.Event | None = None) -> ModelResponse:
        response = self._inner.complete(request, stop)
        self._progress.used(response.usage)
        return response

    def close(self) -> None:
        self._inner.close()
