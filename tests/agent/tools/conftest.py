"""Fixtures for the tool tests: a working directory, a context, and a caller.

``call(tool, **raw)`` validates ``raw`` through the tool's input model (as the
loop does with the model's JSON) and runs the tool. Background processes a
test starts through the context are killed, tree and all, at teardown.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from swarm.agent.tool_api.processes import stop_background
from swarm.agent.tools import Tool, ToolContext, stop_command
from swarm.agent.tool_api.context import AgentIdentity

Call = Callable[..., str]


@pytest.fixture
def work(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


@pytest.fixture
def ctx(work: Path) -> Iterator[ToolContext]:
    context = ToolContext(AgentIdentity(cwd=work))
    yield context
    for proc in context.background:
        stop_command(proc, grace=0.5)
    stop_background(context)  # and the background output's directory


@pytest.fixture
def call(ctx: ToolContext) -> Call:
    def run(tool: Tool[Any], **raw: Any) -> str:
        return tool.run(tool.input_model.model_validate(raw), ctx)

    return run
