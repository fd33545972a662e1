"""Starting the test MCP server (``tests/fakes/mcp_server.py``, the SDK's own server API) and declaring it.

``stdio_entry`` is a config entry that runs the script as a stdio server;
``HttpMcpServer`` runs it as a streamable-HTTP (or SSE) server on 127.0.0.1 on a
free port, stopped by its owner (a session fixture in ``tests/conftest.py``).
``declare_user_servers`` writes Claude Code's user-scope ``mcpServers`` into the
test's Claude config dir.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).with_name("mcp_server.py")


def stdio_entry(tag: str = "echo", log: Path | None = None) -> dict[str, Any]:
    env = {"MCP_TEST_TAG": tag, **({"MCP_TEST_LOG": str(log)} if log else {})}
    return {"command": sys.executable, "args": [str(SCRIPT)], "env": env}


def declare_user_servers(servers: dict[str, Any], env: dict[str, str] | None = None) -> Path:
    """Add ``servers`` to ``mcpServers`` of the test's ``.claude.json`` (the trust entries stay)."""
    path = Path((env or os.environ)["CLAUDE_CONFIG_DIR"]) / ".claude.json"
    doc = json.loads(path.read_text()) if path.exists() else {}
    doc.setdefault("mcpServers", {}).update(servers)
    path.write_text(json.dumps(doc))
    return path


class HttpMcpServer:
    """The test server over streamable HTTP on a free loopback port."""

    def __init__(self, log: Path, transport: str = "http") -> None:
        self.transport = transport
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/{'sse' if self.transport == 'sse' else 'mcp'}"

    def start(self, timeout: float = 60.0) -> HttpMcpServer:
        env = {**os.environ, "MCP_TEST_TAG": "web", "MCP_TEST_LOG": str(self.log)}
        self.proc = subprocess.Popen([sys.executable, str(SCRIPT), f"--{self.transport}", str(self.port)], env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return self
            except OSError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("the HTTP MCP test server did not start")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
