"""The sandbox's proxy on its Unix socket: HTTP CONNECT, plain HTTP and SOCKS5 to an allowed host reach a loopback
server; a refused host gets a 403 (SOCKS: "not allowed by ruleset") with the reason, and nothing connects."""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from swarm.backends.sandbox_proxy import SandboxProxy
from tests.fakes.web_site import local_site


@pytest.fixture
def proxy(tmp_path: Path) -> Iterator[tuple[SandboxProxy, int, list[str]]]:
    with local_site(lambda path: f"path={path}".encode()) as port:
        yield from _proxied(tmp_path, port)


def _proxied(tmp_path: Path, port: int) -> Iterator[tuple[SandboxProxy, int, list[str]]]:
    asked: list[str] = []

    def decide(host: str, port: int) -> str | None:
        asked.append(f"{host}:{port}")
        return None if host == "ok.test" else "it is not in sandbox.network.allowedDomains"

    box = SandboxProxy(tmp_path / "p.sock", decide, {"ok.test": "127.0.0.1"})
    yield box, port, asked
    box.close()
    assert not (tmp_path / "p.sock").exists()


def _talk(path: Path, data: bytes, *, then: bytes = b"", whole: bool = False) -> bytes:
    """Send ``data`` and read the first reply (``whole``: everything until the proxy closes, since a response's
    head and body may come in separate reads); ``then`` is sent next and read to the end."""
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(10)
        sock.connect(str(path))
        sock.sendall(data)
        reply = _read_all(sock) if whole else sock.recv(65536)
        if then:
            sock.sendall(then)
            reply += b"|" + _read_all(sock)
        return reply


def _read_all(sock: socket.socket) -> bytes:
    out = b""
    while chunk := sock.recv(65536):
        out += chunk
    return out


def test_plain_http_and_connect_reach_an_allowed_host(proxy: tuple[SandboxProxy, int, list[str]]) -> None:
    box, port, asked = proxy
    plain = _talk(box.socket_path, f"GET http://ok.test:{port}/a?b HTTP/1.1\r\nHost: ok.test\r\n\r\n".encode(),
                  whole=True)
    assert plain.startswith(b"HTTP/1.0 200") and plain.endswith(b"path=/a?b")
    tunnel = _talk(box.socket_path, f"CONNECT ok.test:{port} HTTP/1.1\r\n\r\n".encode(),
                   then=b"GET /tunnelled HTTP/1.0\r\n\r\n")
    assert tunnel.startswith(b"HTTP/1.1 200 Connection Established") and tunnel.endswith(b"path=/tunnelled")
    assert asked == [f"ok.test:{port}", f"ok.test:{port}"]


def test_a_refused_host_gets_a_403_that_says_why(proxy: tuple[SandboxProxy, int, list[str]]) -> None:
    box, port, _ = proxy
    for request in (f"GET http://127.0.0.1:{port}/ HTTP/1.1\r\n\r\n", f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n"):
        reply = _talk(box.socket_path, request.encode())
        assert reply.startswith(b"HTTP/1.1 403 Forbidden")
        assert f"network access to 127.0.0.1:{port} is not allowed: it is not in".encode() in reply


def test_socks5_connects_to_an_allowed_host_and_refuses_the_rest(proxy: tuple[SandboxProxy, int, list[str]]) -> None:
    box, port, _ = proxy

    def socks(host: bytes) -> tuple[bytes, socket.socket]:
        sock = socket.socket(socket.AF_UNIX)
        sock.settimeout(10)
        sock.connect(str(box.socket_path))
        sock.sendall(b"\x05\x01\x00")
        assert sock.recv(2) == b"\x05\x00"
        sock.sendall(b"\x05\x01\x00\x03" + bytes([len(host)]) + host + struct.pack("!H", port))
        return sock.recv(10), sock

    granted, sock = socks(b"ok.test")
    with sock:
        assert granted[:2] == b"\x05\x00"
        sock.sendall(b"GET /socks HTTP/1.0\r\n\r\n")
        assert _read_all(sock).endswith(b"path=/socks")
    refused, sock = socks(b"evil.test")
    with sock:
        assert refused[:2] == b"\x05\x02"  # connection not allowed by ruleset
