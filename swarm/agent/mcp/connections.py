"""Connections to MCP servers: started in parallel on one event loop in a thread, used from the synchronous agent.

swarm's agent loop is synchronous; the ``mcp`` SDK is async. One
``McpConnections`` owns one asyncio loop in a daemon thread; each server is
one task on it that opens the transport (stdio subprocess, streamable HTTP,
SSE), the ``ClientSession``, lists the tools and then holds the connection
open until it is closed, so every context manager is left in the task that
entered it (the SDK's anyio task groups require that).

- ``start`` schedules every startable server at once and returns: nothing
  waits for a server unless it asks (``wait``) — the main agent and a
  teammate settle their servers before their first model call, a subagent
  only the servers its definition names.
- A server that fails to start, or whose connection breaks during a call
  (a crashed process, a closed HTTP session), is ``failed``: reported once
  (``note``); the tools it listed stay (the tool list does not change) and
  answer with an error; a call ``RECONNECT_AFTER`` seconds or more after the
  failure starts it again in the background.
- ``close`` ends every connection (a stdio server gets its stdin closed,
  then SIGTERM, then SIGKILL from the SDK) and stops the loop; a process
  that is killed outright leaves its stdio servers reading EOF on stdin,
  which ends them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from swarm.agent.mcp.config import ServerEntry

log = logging.getLogger(__name__)

State = Literal["pending", "connected", "failed", "closed", "needs approval", "not started", "invalid"]
CONNECT_TIMEOUT = 30.0
"""Seconds a server has to start and answer (Claude Code's ``MCP_TIMEOUT``, in ms, overrides)."""
DEFAULT_CALL_TIMEOUT = 600.0
"""Seconds a tool call may take (``MCP_TOOL_TIMEOUT`` in ms, or the entry's ``timeout``, overrides)."""
RECONNECT_AFTER = 5.0
"""Seconds after a failure before a call starts the server again."""
CLOSE_TIMEOUT = 10.0
"""Seconds ``close`` waits for the connections to end."""


class McpCallError(Exception):
    """A call that could not be made or did not complete: the message is for the model."""


@dataclass
class ServerStatus:
    """What ``swarm mcp list`` and the agent see of one server."""

    name: str
    scope: str
    source: str
    transport: str
    state: State
    error: str = ""
    tools: list[Any] = field(default_factory=list)
    """The server's ``mcp.types.Tool`` list while connected."""


@dataclass
class _Connection:
    entry: ServerEntry
    state: State = "pending"
    error: str = ""
    tools: list[Any] = field(default_factory=list)
    session: Any = None
    settled: threading.Event = field(default_factory=threading.Event)
    stop: asyncio.Event | None = None
    task: concurrent.futures.Future[None] | None = None
    failed_at: float = 0.0
    reported: bool = False
    generation: int = 0
    listing: int = 0
    """Counts the times the server's tools were listed (a reconnect lists them again)."""


def timeout_from(env: Mapping[str, str], var: str, default: float) -> float:
    """Claude Code's millisecond variables (``MCP_TIMEOUT``, ``MCP_TOOL_TIMEOUT``) in seconds."""
    try:
        value = float(env.get(var, "")) / 1000
    except ValueError:
        return default
    return value if value > 0 else default


class McpConnections:
    """The MCP servers of one agent scope (a process, or one subagent's inline servers)."""

    def __init__(self, cwd: Path, env: Mapping[str, str], note: Callable[[str], None] | None = None) -> None:
        self.cwd = cwd
        self.env = dict(env)
        self.note = note or (lambda text: log.warning("%s", text))
        self.connect_timeout = timeout_from(env, "MCP_TIMEOUT", CONNECT_TIMEOUT)
        self.call_timeout = timeout_from(env, "MCP_TOOL_TIMEOUT", DEFAULT_CALL_TIMEOUT)
        self.reconnect_after = RECONNECT_AFTER
        self._lock = threading.Lock()
        self._servers: dict[str, _Connection] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._closed = False

    # -- the person's side ----------------------------------------------------

    def start(self, entries: Iterable[ServerEntry]) -> None:
        """Register ``entries``; start each startable one not already known (a known name is kept: shared)."""
        for entry in entries:
            with self._lock:
                if entry.name in self._servers or self._closed:
                    continue
                conn = _Connection(entry)
                self._servers[entry.name] = conn
            if entry.problem:
                self._settle(conn, "invalid", entry.problem)
            elif entry.approval:
                needs = entry.approval == "needs approval"
                self._settle(conn, "needs approval" if needs else "not started", "" if needs else entry.approval)
            else:
                self._launch(conn)

    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._servers)

    def wait(self, names: Sequence[str] | None = None, timeout: float | None = None) -> None:
        """Until each of ``names`` (default: all) has connected or failed, at most ``timeout`` seconds in all."""
        deadline = time.monotonic() + (self.connect_timeout if timeout is None else timeout)
        with self._lock:
            conns = [c for n, c in self._servers.items() if names is None or n in names]
        for conn in conns:
            conn.settled.wait(max(0.0, deadline - time.monotonic()))

    def status(self, name: str) -> ServerStatus | None:
        with self._lock:
            conn = self._servers.get(name)
        if conn is None:
            return None
        e = conn.entry
        return ServerStatus(e.name, e.scope, e.source, e.config.type, conn.state, conn.error,
                            list(conn.tools) if conn.state == "connected" else [])

    def statuses(self) -> list[ServerStatus]:
        return [s for s in (self.status(n) for n in self.names()) if s is not None]

    def known_tools(self) -> list[tuple[str, int, list[Any]]]:
        """(server, listing, tools) of every server that has listed its tools, by name: a server that failed since
        keeps its tools (they answer with an error until it is back); ``listing`` changes when they are listed anew."""
        with self._lock:
            return [(n, c.listing, list(c.tools)) for n, c in sorted(self._servers.items()) if c.tools]

    def close(self) -> None:
        """End every connection and the loop (idempotent)."""
        with self._lock:
            self._closed = True
            conns = list(self._servers.values())
            loop, thread = self._loop, self._thread
        if loop is None:
            return
        for conn in conns:
            self._request_stop(conn.stop)
        deadline = time.monotonic() + CLOSE_TIMEOUT
        for conn in conns:
            if conn.task is not None:
                with contextlib.suppress(Exception):
                    conn.task.result(max(0.1, deadline - time.monotonic()))
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(CLOSE_TIMEOUT)
        with self._lock:
            self._loop = None
        if thread is None or not thread.is_alive():
            loop.close()

    # -- calls ------------------------------------------------------------------

    def call(self, server: str, tool: str, arguments: dict[str, Any]) -> Any:
        """The ``CallToolResult`` of ``tool`` on ``server``; McpCallError when the server cannot answer."""
        with self._lock:
            conn = self._servers.get(server)
        if conn is None:
            raise McpCallError(f"MCP server {server!r} is not configured")
        if conn.state != "connected" or conn.session is None or self._loop is None:
            self._maybe_reconnect(conn)
            raise McpCallError(f"MCP server {server!r} is not connected ({conn.state}"
                               f"{': ' + conn.error if conn.error else ''}); its tools answer once it is back")
        timeout = conn.entry.config.timeout or self.call_timeout
        session, generation = conn.session, conn.generation
        future = asyncio.run_coroutine_threadsafe(session.call_tool(tool, arguments, read_timeout_seconds=timeout),
                                                  self._loop)
        try:
            return future.result(timeout + 5)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise McpCallError(f"MCP server {server!r} did not answer {tool} within {timeout:.0f} s") from None
        except Exception as exc:
            if _is_protocol_error(exc) and not _closed_connection(exc):
                raise McpCallError(f"MCP server {server!r}: {_describe(exc)}") from None
            self._broken(conn, generation, _describe(exc))
            raise McpCallError(f"MCP server {server!r} disconnected: {_describe(exc)}") from None

    # -- the loop's side ----------------------------------------------------------

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                self._thread = threading.Thread(target=loop.run_forever, name="mcp", daemon=True)
                self._thread.start()
                self._loop = loop
            return self._loop

    def _launch(self, conn: _Connection) -> None:
        loop = self._ensure_loop()
        with self._lock:
            conn.state, conn.error, conn.generation = "pending", "", conn.generation + 1
            conn.settled.clear()
        conn.task = asyncio.run_coroutine_threadsafe(self._serve(conn, conn.generation), loop)

    def _maybe_reconnect(self, conn: _Connection) -> None:
        with self._lock:
            due = (conn.state == "failed" and not conn.entry.approval and not self._closed
                   and time.monotonic() - conn.failed_at >= self.reconnect_after)
        if due:
            log.info("reconnecting MCP server", extra={"server": conn.entry.name})
            self._launch(conn)

    async def _serve(self, conn: _Connection, generation: int) -> None:
        stop = asyncio.Event()
        with self._lock:
            if conn.generation == generation:
                conn.stop = stop
        try:
            async with contextlib.AsyncExitStack() as stack:
                session = await self._open(conn.entry, stack)
                with self._lock:
                    current = conn.generation == generation
                    if current:
                        conn.session, conn.state = session, "connected"
                if current:
                    conn.settled.set()
                if self._closed or not current:
                    return
                await stop.wait()
        except TimeoutError:
            self._broken(conn, generation, f"did not start within {self.connect_timeout:.0f} s")
        except Exception as exc:  # any failure of one server is that server's state, never the agent's crash
            self._broken(conn, generation, _describe(exc))
        finally:
            with self._lock:
                current = conn.generation == generation
                if current:
                    conn.session = None
                    if conn.state in ("connected", "pending"):
                        conn.state = "closed"
            if current:  # an older connection ending never marks a newer one settled
                conn.settled.set()

    async def _open(self, entry: ServerEntry, stack: contextlib.AsyncExitStack) -> Any:
        from mcp import ClientSession

        import anyio
        from mcp.types import PaginatedRequestParams

        streams = await stack.enter_async_context(self._transport(entry, stack))
        session = await stack.enter_async_context(ClientSession(streams[0], streams[1]))
        tools: list[Any] = []
        with anyio.fail_after(self.connect_timeout):  # in this task, around nothing left open: the SDK's rule
            await session.initialize()
            cursor = None
            while True:
                page = await session.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
                tools.extend(page.tools)
                cursor = page.next_cursor
                if not cursor:
                    break
        with self._lock:
            conn = self._servers[entry.name]
            if tools != conn.tools:
                conn.tools, conn.listing = tools, conn.listing + 1
        return session

    def _transport(self, entry: ServerEntry, stack: contextlib.AsyncExitStack) -> Any:
        config = entry.config
        if config.type == "stdio":
            from mcp.client.stdio import StdioServerParameters, stdio_client

            errlog = stack.enter_context(open(os.devnull, "w", encoding="utf-8"))  # noqa: SIM115
            cwd = Path(config.cwd) if config.cwd else self.cwd
            return stdio_client(StdioServerParameters(command=config.command, args=config.args,
                                                      env={**self.env, **config.env},
                                                      cwd=cwd if cwd.is_absolute() else self.cwd / cwd),
                                errlog=errlog)
        if config.type == "sse":
            from mcp.client.sse import sse_client

            return sse_client(config.url, headers=dict(config.headers), timeout=self.connect_timeout)
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        return _http(config.url, create_mcp_http_client(headers=dict(config.headers)), streamable_http_client)

    # -- state changes ------------------------------------------------------------

    def _settle(self, conn: _Connection, state: State, error: str) -> None:
        with self._lock:
            conn.state, conn.error = state, error
        conn.settled.set()

    def _broken(self, conn: _Connection, generation: int, error: str) -> None:
        """The connection of ``generation`` failed: report it once, stop its task, let its tools answer errors."""
        with self._lock:
            if conn.generation != generation or conn.state == "failed":
                return
            conn.state, conn.error, conn.failed_at, conn.session = "failed", error, time.monotonic(), None
            first = not conn.reported
            conn.reported = True
            stop = conn.stop  # this generation's (a newer one cannot exist yet: the generation still matches)
        conn.settled.set()
        self._request_stop(stop)
        if first and not self._closed:
            self.note(f"MCP server {conn.entry.name} failed: {error}")

    def _request_stop(self, stop: asyncio.Event | None) -> None:
        loop = self._loop
        if loop is not None and stop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(stop.set)


@contextlib.asynccontextmanager
async def _http(url: str, client: Any, transport: Callable[..., Any]) -> Any:
    async with client, transport(url, http_client=client) as streams:
        yield streams


def _is_protocol_error(exc: BaseException) -> bool:
    from mcp.shared.exceptions import MCPError

    return isinstance(exc, MCPError)


def _closed_connection(exc: BaseException) -> bool:
    from mcp.types import CONNECTION_CLOSED

    return getattr(getattr(exc, "error", None), "code", None) == CONNECTION_CLOSED or \
        getattr(exc, "code", None) == CONNECTION_CLOSED


def _describe(exc: BaseException) -> str:
    """One line for an exception (the first leaf of an exception group)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    message = getattr(exc, "message", None)
    raw = message if isinstance(message, str) else str(exc)
    text = raw.strip().splitlines()[0] if raw.strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
