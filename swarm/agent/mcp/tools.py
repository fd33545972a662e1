"""MCP tools as swarm tools: ``mcp__<server>__<tool>``, the server's schema and description, results as blocks.

Each tool of a connected server becomes one ``Tool`` (a class made for it,
so the name, description and schema are the server's, fixed for the
connection). Its input is the server's JSON object, passed through as is;
the server validates it. Results: text → text blocks, images → image blocks
(the formats the Messages API takes; others are described in text),
embedded resources → their text (binary ones described), resource links →
their URI. ``isError`` and every failure to reach the server are tool
errors (``ToolError``): the model reads them, the agent goes on.

MCP tools are never read-only: with no rule allowing them they ask (the
lead, for a teammate), as in Claude Code.

**Cache safety** (``LiveTools``): an agent's tool list is its own tools
followed by the MCP tools, sorted by name. ``run_agent`` takes the list once
per call, so within a turn the tools part of every request is the same
bytes; the MCP tools of a server that connects late (or comes back after a
failure) join at the start of the agent's next turn, never in the middle
of one. A tool object is made once per listing of a server's tools, so its
bytes stay the same from turn to turn; a server that fails keeps its tools
in the list (they answer with an error until it is back), so a crash does
not change the tools part either.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar, overload

from pydantic import BaseModel, ConfigDict

from swarm.agent.mcp.connections import McpCallError, McpConnections
from swarm.agent.output_cap import ToolOutput
from swarm.agent.tool_api.base import Tool
from swarm.agent.tool_api.context import ToolContext, ToolError
from swarm.models.base import ToolSpec
from swarm.models.messages import DocumentBlock, ImageBlock, ImageSource, TextBlock

PREFIX = "mcp__"
DESCRIPTION_LIMIT = 2048
"""Characters of a server's tool description kept (Claude Code caps them too: a server's text is not the prompt)."""
API_NAME_LIMIT = 64
"""Characters the Messages API allows in a tool name."""
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def normalized(name: str) -> str:
    """A server or tool name as it appears in a tool name (Claude Code's rule: other characters become ``_``)."""
    return _UNSAFE.sub("_", name)


def tool_name(server: str, tool: str) -> str:
    return f"{PREFIX}{normalized(server)}__{normalized(tool)}"


class McpInput(BaseModel):
    """Whatever object the model sends: the server validates it against its own schema."""

    model_config = ConfigDict(extra="allow")


class McpTool(Tool[McpInput]):
    """One tool of one MCP server (see the module docstring); made by ``mcp_tool``."""

    input_model: ClassVar[type[BaseModel]] = McpInput
    server: ClassVar[str]
    remote_name: ClassVar[str]
    schema: ClassVar[dict[str, Any]]

    def __init__(self, connections: McpConnections) -> None:
        self.connections = connections

    def spec(self) -> ToolSpec:
        if self._spec is None:
            self._spec = ToolSpec(name=self.name, description=self.description, input_schema=self.schema)
        return self._spec

    def run(self, args: McpInput, ctx: ToolContext) -> ToolOutput:
        try:
            result = self.connections.call(self.server, self.remote_name, dict(args.model_extra or {}))
        except McpCallError as exc:
            raise ToolError(str(exc)) from None
        blocks = result_blocks(result.content, structured=getattr(result, "structured_content", None))
        if result.is_error:
            text = "\n".join(b.text for b in blocks if isinstance(b, TextBlock)) or "the tool reported an error"
            raise ToolError(text)
        if all(isinstance(b, TextBlock) for b in blocks):
            return "\n".join(b.text for b in blocks if isinstance(b, TextBlock)) or "(no output)"
        return blocks


def mcp_tool(connections: McpConnections, server: str, remote: Any) -> McpTool:
    """The swarm tool for ``remote`` (an ``mcp.types.Tool``) of ``server``."""
    schema = dict(remote.input_schema or {})
    schema.setdefault("type", "object")
    if schema.get("type") != "object":
        schema = {"type": "object", "properties": {}}
    name = tool_name(server, remote.name)[:API_NAME_LIMIT]
    description = (remote.description or remote.name).strip()[:DESCRIPTION_LIMIT]
    kind = type(f"McpTool_{normalized(server)}_{normalized(remote.name)}", (McpTool,), {
        "name": name, "description": description, "server": server, "remote_name": remote.name, "schema": schema,
    })
    return kind(connections)


def result_blocks(content: Sequence[Any], *,
                  structured: Any = None) -> list[TextBlock | ImageBlock | DocumentBlock]:
    """An MCP result's content as tool-result blocks (see the module docstring)."""
    blocks: list[TextBlock | ImageBlock | DocumentBlock] = []
    for item in content:
        kind = getattr(item, "type", "")
        if kind == "text":
            blocks.append(TextBlock(text=item.text))
        elif kind == "image" and item.mime_type in IMAGE_TYPES:
            blocks.append(ImageBlock(source=ImageSource(media_type=item.mime_type, data=item.data)))
        elif kind in ("image", "audio"):
            blocks.append(TextBlock(text=f"[{kind} of type {item.mime_type}, {len(item.data) * 3 // 4} bytes: "
                                         "not shown]"))
        elif kind == "resource":
            resource = item.resource
            text = getattr(resource, "text", None)
            blocks.append(TextBlock(text=text if text is not None else
                                    f"[resource {resource.uri} ({resource.mime_type or 'binary'}): not shown]"))
        elif kind == "resource_link":
            blocks.append(TextBlock(text=f"[resource {item.uri}{': ' + item.name if item.name else ''}]"))
    if not blocks and structured is not None:
        import json

        blocks.append(TextBlock(text=json.dumps(structured, ensure_ascii=False)))
    return blocks


class McpToolset:
    """The MCP tools of one or more connection sets, made once per listing, sorted by name."""

    def __init__(self, *connections: McpConnections) -> None:
        self.connections = [c for c in connections if c is not None]
        self._made: dict[tuple[int, str, int], list[McpTool]] = {}

    def tools(self) -> list[McpTool]:
        found: dict[str, McpTool] = {}
        for conns in self.connections:
            for server, listing, remote in conns.known_tools():
                key = (id(conns), server, listing)
                if key not in self._made:
                    self._made[key] = [mcp_tool(conns, server, r) for r in remote]
                for tool in self._made[key]:
                    found.setdefault(tool.name, tool)
        return [found[name] for name in sorted(found)]


class LiveTools(Sequence[Tool[Any]]):
    """An agent's own tools, then the MCP tools it may use now (``keep``: the definition's filter), sorted.

    Read once per ``run_agent`` call (a turn): see the module docstring.
    """

    def __init__(self, base: Sequence[Tool[Any]], toolset: McpToolset, keep: Callable[[str], bool]) -> None:
        self.base = list(base)
        self.toolset = toolset
        self.keep = keep

    def current(self) -> list[Tool[Any]]:
        taken = {t.name for t in self.base}
        return [*self.base, *(t for t in self.toolset.tools() if t.name not in taken and self.keep(t.name))]

    def __iter__(self) -> Iterator[Tool[Any]]:
        return iter(self.current())

    def __len__(self) -> int:
        return len(self.current())

    @overload
    def __getitem__(self, index: int) -> Tool[Any]: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Tool[Any]]: ...

    def __getitem__(self, index: int | slice) -> Tool[Any] | Sequence[Tool[Any]]:
        return self.current()[index]
