"""The sandbox's way out: an HTTP and SOCKS5 proxy on a Unix socket, outside the sandbox, that asks per host.

A sandboxed command has no network of its own (``swarm.backends.sandbox``):
socat inside bridges ``127.0.0.1:3128`` to this proxy's Unix socket. The
proxy speaks

- HTTP ``CONNECT host:port`` (what ``curl``, ``pip``, ``git`` use for https),
- plain HTTP forwarding (``GET http://host/path``, rewritten to origin form),
- SOCKS5 with no authentication, ``CONNECT`` only (domain names, IPv4, IPv6).

Every connection names a host; ``decide(host, port)`` (the agent layer's
domain policy, which may ask) returns None to let it through or the reason
it is refused. A refusal is an HTTP ``403`` whose body says why (SOCKS:
"connection not allowed by ruleset"), so the command fails fast with a
clear message instead of hanging. The proxy resolves names itself;
``resolve`` maps a name to an address first (tests stand a loopback server
in for a domain).
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import socket
import socketserver
import struct
import threading
from collections.abc import Callable, Mapping
from pathlib import Path

log = logging.getLogger(__name__)

Decide = Callable[[str, int], str | None]
"""``(host, port)`` -> None to allow, or the reason it is refused."""
MAX_HEAD = 65536
CONNECT_TIMEOUT = 10.0
_HOP_HEADERS = (b"proxy-connection", b"proxy-authorization", b"connection", b"keep-alive")


class SandboxProxy:
    """The proxy one agent's sandboxed commands share; ``close`` stops it and removes its socket."""

    def __init__(self, socket_path: Path, decide: Decide, resolve: Mapping[str, str] | None = None) -> None:
        self.socket_path = socket_path
        self.decide = decide
        self.resolve = dict(resolve or {})
        with contextlib.suppress(FileNotFoundError):
            socket_path.unlink()
        proxy = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                proxy._serve(self.request)

        self._server = socketserver.ThreadingUnixStreamServer(str(socket_path), Handler)
        self._server.daemon_threads = True
        os.chmod(socket_path, 0o600)
        self._thread = threading.Thread(target=self._server.serve_forever, name="sandbox-proxy", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()

    # -- one connection -------------------------------------------------------

    def _serve(self, client: socket.socket) -> None:
        try:
            first = client.recv(1, socket.MSG_PEEK)
            if first == b"\x05":
                self._socks(client)
            elif first:
                self._http(client)
        except OSError as exc:
            log.debug("sandbox proxy connection ended", extra={"error": str(exc)})

    def _http(self, client: socket.socket) -> None:
        head, rest = _read_head(client)
        if head is None:
            return _send_refusal(client, 400, "Bad Request", "swarm sandbox proxy: could not read the request")
        line, _, headers = head.partition(b"\r\n")
        parts = line.split()
        if len(parts) != 3:
            return _send_refusal(client, 400, "Bad Request", "swarm sandbox proxy: malformed request line")
        method, target, version = parts
        if method.upper() == b"CONNECT":
            host, port = _host_port(target.decode("latin-1"), 443)
            upstream = self._open(client, host, port, http=True)
            if upstream is not None:
                client.sendall(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                _pipe(client, upstream, rest)
            return None
        url = target.decode("latin-1")
        if not url.lower().startswith("http://"):
            return _send_refusal(client, 400, "Bad Request",
                                 "swarm sandbox proxy: only http:// URLs are forwarded (use CONNECT for https)")
        authority, slash, path = url[7:].partition("/")
        host, port = _host_port(authority, 80)
        upstream = self._open(client, host, port, http=True)
        if upstream is None:
            return None
        kept = [h for h in headers.split(b"\r\n") if h and h.split(b":", 1)[0].strip().lower() not in _HOP_HEADERS]
        request = b"\r\n".join([b" ".join([method, ("/" + path if slash else "/").encode("latin-1"), version]),
                                *kept, b"Connection: close"]) + b"\r\n\r\n"
        upstream.sendall(request)
        _pipe(client, upstream, rest)
        return None

    def _socks(self, client: socket.socket) -> None:
        greeting = _recv_exact(client, 2)
        _recv_exact(client, greeting[1])
        client.sendall(b"\x05\x00")  # no authentication
        ver, cmd, _, kind = _recv_exact(client, 4)
        if kind == 1:
            host = socket.inet_ntoa(_recv_exact(client, 4))
        elif kind == 3:
            host = _recv_exact(client, _recv_exact(client, 1)[0]).decode("idna")
        elif kind == 4:
            host = socket.inet_ntop(socket.AF_INET6, _recv_exact(client, 16))
        else:
            client.sendall(b"\x05\x08\x00\x01" + bytes(6))
            return
        (port,) = struct.unpack("!H", _recv_exact(client, 2))
        if ver != 5 or cmd != 1:
            client.sendall(b"\x05\x07\x00\x01" + bytes(6))
            return
        upstream = self._open(client, host, port, http=False)
        if upstream is not None:
            client.sendall(b"\x05\x00\x00\x01" + bytes(6))
            _pipe(client, upstream, b"")

    def _open(self, client: socket.socket, host: str, port: int, *, http: bool) -> socket.socket | None:
        """The upstream connection, or None after telling the client why there is none."""
        reason = self.decide(host.lower().rstrip("."), port)
        if reason is not None:
            log.info("sandbox proxy refused a host", extra={"host": host, "port": port})
            if http:
                _send_refusal(client, 403, "Forbidden",
                              f"swarm sandbox: network access to {host}:{port} is not allowed: {reason}")
            else:
                client.sendall(b"\x05\x02\x00\x01" + bytes(6))
            return None
        try:
            return socket.create_connection((self.resolve.get(host.lower(), host), port), timeout=CONNECT_TIMEOUT)
        except OSError as exc:
            if http:
                _send_refusal(client, 502, "Bad Gateway", f"swarm sandbox proxy: cannot reach {host}:{port}: {exc}")
            else:
                client.sendall(b"\x05\x05\x00\x01" + bytes(6))
            return None


def _read_head(client: socket.socket) -> tuple[bytes | None, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = client.recv(4096)
        if not chunk or len(data) > MAX_HEAD:
            return None, b""
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def _recv_exact(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("the client closed the connection")
        data += chunk
    return data


def _host_port(authority: str, default: int) -> tuple[str, int]:
    if authority.startswith("["):  # [v6]:port
        host, _, port = authority[1:].partition("]")
        port = port.lstrip(":")
    else:
        host, _, port = authority.rpartition(":") if authority.count(":") == 1 else (authority, "", "")
    return host, int(port) if port.isdigit() else default


def _send_refusal(client: socket.socket, code: int, status: str, text: str) -> None:
    body = (text + "\n").encode()
    client.sendall(f"HTTP/1.1 {code} {status}\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
                   "Connection: close\r\nX-Swarm-Sandbox: refused\r\n\r\n".encode() + body)


def _pipe(client: socket.socket, upstream: socket.socket, pending: bytes) -> None:
    """Copy bytes both ways until either side closes."""
    with upstream:
        upstream.settimeout(None)
        if pending:
            upstream.sendall(pending)
        sockets = [client, upstream]
        while True:
            ready, _, _ = select.select(sockets, [], [], 300)
            if not ready:
                return
            for sock in ready:
                data = sock.recv(65536)
                if not data:
                    return
                (upstream if sock is client else client).sendall(data)
