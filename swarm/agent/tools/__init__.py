"""The agent's tools: the interface (``base``) and the core file/shell tools.

``core_tools()`` returns fresh instances of Read, Write, Edit, Bash, Glob and
Grep — fresh because Bash keeps a per-instance log directory for background
commands and Grep remembers which backend it chose.
"""

from __future__ import annotations

from typing import Any

from swarm.agent.tool_api.base import Tool
from swarm.agent.tool_api.context import ToolContext, ToolError
from swarm.agent.tools.files import (
    EditInput,
    EditTool,
    ReadInput,
    ReadTool,
    WriteInput,
    WriteTool,
)
from swarm.agent.tools.search import GlobInput, GlobTool, GrepInput, GrepTool
from swarm.agent.tool_api.processes import stop_background, stop_command
from swarm.agent.tools.shell import BashInput, BashTool

__all__ = [
    "BashInput",
    "BashTool",
    "EditInput",
    "EditTool",
    "GlobInput",
    "GlobTool",
    "GrepInput",
    "GrepTool",
    "ReadInput",
    "ReadTool",
    "Tool",
    "ToolContext",
    "ToolError",
    "WriteInput",
    "WriteTool",
    "core_tools",
    "stop_background",
    "stop_command",
]


def core_tools() -> list[Tool[Any]]:
    """New instances of the six core tools, in the order the model sees them."""
    return [ReadTool(), WriteTool(), EditTool(), BashTool(), GlobTool(), GrepTool()]
