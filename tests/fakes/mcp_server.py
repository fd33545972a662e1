"""A real MCP server for tests, written with the SDK's own server API: ``python mcp_server.py [--http PORT | --sse PORT]``.

Tools: ``echo`` (text back), ``add`` (two numbers), ``fail`` (an ``isError`` result), ``picture`` (a PNG),
``crash`` (the process exits mid-call), ``pid`` (its process id). ``MCP_TEST_DELAY`` seconds pass before it
serves (a server that connects late). Each call is appended to the file named by
``MCP_TEST_LOG`` (when set), so a test can see which server ran a call.
"""

from __future__ import annotations

import base64
import os
import sys
import time

from mcp.server.mcpserver import MCPServer
from mcp.types import ImageContent

PNG = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")).decode()

server = MCPServer(os.environ.get("MCP_TEST_NAME", "test"))


def _log(text: str) -> None:
    path = os.environ.get("MCP_TEST_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(text + "\n")


@server.tool(description="Echo the text back, prefixed with the server's tag.")
def echo(text: str) -> str:
    _log(f"echo {text} pid={os.getpid()}")
    return f"{os.environ.get('MCP_TEST_TAG', 'echo')}: {text}"


@server.tool(description="Add two numbers.")
def add(a: int, b: int) -> str:
    return str(a + b)


@server.tool(description="Always fails.")
def fail() -> str:
    raise ValueError("this tool always fails")


@server.tool(description="A tiny picture.")
def picture() -> ImageContent:
    return ImageContent(type="image", data=PNG, mime_type="image/png")


@server.tool(description="The server process exits in the middle of this call.")
def crash() -> str:
    _log("crash")
    os._exit(3)


@server.tool(description="The server's process id.")
def pid() -> str:
    return str(os.getpid())


if __name__ == "__main__":
    time.sleep(float(os.environ.get("MCP_TEST_DELAY", "0")))  # a server that is slow to start
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    elif len(sys.argv) == 3 and sys.argv[1] == "--sse":
        server.run("sse", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
