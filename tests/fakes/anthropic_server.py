"""A fake Anthropic Messages API on loopback, for driving the real SDK over HTTP.

``POST /v1/messages`` answers from a queue of scripted replies (status, JSON
body, headers, optional delay) and records every request (parsed JSON body and
lower-cased headers). An empty queue answers a clear 500 in Anthropic's error
shape, so a test that forgot a reply fails loudly instead of hanging.

Like the real API, a request whose conversation breaks the tool-use contract
(a ``tool_use`` without a ``tool_result`` right after it, a result for no
call, a result whose blocks are not text, images and PDFs as the API takes them,
an image over 5 MB) is refused with a 400 ``invalid_request_error`` (``conversation_error``),
so every test that talks to this server checks what swarm sends. Thinking
is checked the same way: a thinking block must be one this server sent, with
its signature unchanged, and thinking blocks must come before an assistant
message's text and tool calls (``thinking_error``). A request
with ``"stream": true`` is answered with server-sent events (``sse_events``),
as the real API does.

For a client that sends many requests of its own (Claude Code: title generation,
``count_tokens``, a ``HEAD`` probe), ``after`` matches a reply to the messages that
follow the model's last turn only (the step a conversation is at, not its history), ``body`` may be a
function of the request body (to echo an id the client made up), ``otherwise`` sets
the answer to any request nothing queued matches, ``POST /v1/messages/count_tokens``
is answered with an estimate and ``HEAD`` with an empty 200.

Like an API key's rate limit, ``limit_concurrency(n, retry_after)`` answers a
``POST /v1/messages`` that would make more than ``n`` in flight with a 429
``rate_limit_error`` and a ``retry-after`` header; ``max_in_flight`` and
``rejected`` tell what clients did.

    with FakeAnthropicServer() as server:
        server.enqueue(text_reply("hi"))
        provider = AnthropicProvider(env={"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": server.base_url})
"""

from __future__ import annotations

import itertools
import json
import threading
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MESSAGES_PATH = "/v1/messages"
COUNT_TOKENS_PATH = "/v1/messages/count_tokens"
_ids = itertools.count(1)


@dataclass(frozen=True)
class ScriptedReply:
    """One HTTP answer the fake server will give."""

    status: int
    body: Any
    """The JSON body, or a function of the request's JSON body that returns it."""
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0
    """Seconds to wait before answering (to provoke client timeouts)."""
    when: str | None = None
    """Serve this reply only to a request whose JSON body contains this text (agents talking at once)."""
    repeat: bool = False
    """Stay in the queue after being served (the answer to every further matching request)."""
    pace: float = 0.0
    """Seconds between the server-sent events of a streamed answer (text that arrives over time)."""
    after: str | None = None
    """Serve this reply only to a request whose messages since the model's last turn contain this text
    (the step a conversation is at, not its history)."""
    stream_cut: int | None = None
    """A streamed answer stops after this many events (no ``message_stop``: a connection that dropped)."""
    stream_error: dict[str, Any] | None = None
    """A streamed answer then sends this ``error`` event (the API's way to fail after its 200), e.g.
    ``{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}``."""

    gate: threading.Event | None = None
    """Answer only once this is set (by another reply's ``opens``): one agent's step waits for another's request."""
    opens: threading.Event | None = None
    """Set when this reply is served, i.e. its request has arrived: what another reply's ``gate`` waits for."""

    def matches(self, body: Any) -> bool:
        if self.when is not None and self.when not in json.dumps(body):
            return False
        if self.after is not None:
            return self.after in json.dumps(since_model(body))
        return True

    def answer(self, body: Any) -> ScriptedReply:
        """This reply with its body computed for ``body`` (the request's) when it is a function."""
        return replace(self, body=self.body(body)) if callable(self.body) else self


@dataclass(frozen=True)
class RecordedRequest:
    """One request the fake server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


def usage_json(input_tokens: int = 10, output_tokens: int = 5, *, cache_read: int | None = None,
               cache_creation: int | None = None) -> dict[str, Any]:
    return {"input_tokens": input_tokens, "output_tokens": output_tokens,
            "cache_read_input_tokens": cache_read, "cache_creation_input_tokens": cache_creation}


def message_json(content: list[dict[str, Any]], *, stop_reason: str = "end_turn",
                 usage: dict[str, Any] | None = None, model: str = "claude-sonnet-4-6") -> dict[str, Any]:
    """A Messages API response body."""
    return {"id": f"msg_fake_{next(_ids):04d}", "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": stop_reason, "stop_sequence": None,
            "usage": usage or usage_json()}


def text_reply(text: str, *, usage: dict[str, Any] | None = None, stop_reason: str = "end_turn",
               model: str = "claude-sonnet-4-6") -> ScriptedReply:
    body = message_json([{"type": "text", "text": text}], stop_reason=stop_reason, usage=usage, model=model)
    return ScriptedReply(200, body)


def tool_use_reply(name: str, tool_input: dict[str, Any], *, tool_id: str = "toolu_fake_01",
                   text: str | None = None, usage: dict[str, Any] | None = None) -> ScriptedReply:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content.append({"type": "tool_use", "id": tool_id, "name": name, "input": tool_input})
    return ScriptedReply(200, message_json(content, stop_reason="tool_use", usage=usage))


def error_reply(status: int, error_type: str, message: str, *,
                headers: Mapping[str, str] | None = None) -> ScriptedReply:
    """An error in Anthropic's shape: {"type": "error", "error": {"type": ..., "message": ...}}."""
    body = {"type": "error", "error": {"type": error_type, "message": message}}
    return ScriptedReply(status, body, dict(headers or {}))


class FakeAnthropicServer:
    """A ThreadingHTTPServer on 127.0.0.1 with an ephemeral port; ``stop`` is safe to call twice."""

    def __init__(self) -> None:
        self._replies: deque[ScriptedReply] = deque()
        self._otherwise: ScriptedReply | None = None
        self._requests: list[RecordedRequest] = []
        self._abandoned = 0
        self._signed: set[tuple[str, str]] = set()
        """(thinking, signature) of every thinking block served: only these may come back."""
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._limit: tuple[int, float] | None = None
        self._in_flight = 0
        self.max_in_flight = 0
        """The most ``POST /v1/messages`` requests admitted at one time (rejected ones not counted)."""
        self.rejected = 0
        """Requests answered 429 by ``limit_concurrency``."""

    def limit_concurrency(self, limit: int | None, retry_after: float = 1.0) -> None:
        """Answer 429 with ``retry-after`` to a model request above ``limit`` in flight (None: no limit)."""
        with self._lock:
            self._limit = None if limit is None else (limit, retry_after)

    def _admit(self) -> ScriptedReply | None:
        """Count a model request in; the 429 to answer instead when it is over the limit."""
        with self._lock:
            if self._limit is not None and self._in_flight >= self._limit[0]:
                self.rejected += 1
                return error_reply(429, "rate_limit_error", "Number of concurrent requests exceeds your limit",
                                   headers={"retry-after": f"{self._limit[1]:g}"})
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            return None

    def _done(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def start(self) -> FakeAnthropicServer:
        httpd = _Server(("127.0.0.1", 0), _Handler)
        httpd.fake = self
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02},
                                        name="fake-anthropic", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        httpd, self._httpd = self._httpd, None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeAnthropicServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("fake anthropic server is not running; call start() first")
        port = self._httpd.server_address[1]
        return f"http://127.0.0.1:{port}"

    def enqueue(self, *replies: ScriptedReply, when: str | None = None, repeat: bool = False,
                after: str | None = None) -> None:
        """Queue replies, in order; with ``when``, only for requests whose body contains that text;
        with ``after``, only for requests whose last message does; with ``repeat``, each stays to
        answer every later request it matches."""
        with self._lock:
            self._replies.extend(replace(r, when=when if when is not None else r.when, repeat=repeat or r.repeat,
                                         after=after if after is not None else r.after)
                                 for r in replies)

    def otherwise(self, reply: ScriptedReply | None) -> None:
        """Answer every request no queued reply matches with ``reply`` (None: the clear 500 again)."""
        with self._lock:
            self._otherwise = reply

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def abandoned(self) -> int:
        """Streamed answers whose client hung up before their last event (as the API sees an aborted request)."""
        with self._lock:
            return self._abandoned

    @property
    def pending(self) -> int:
        """Scripted replies not served yet."""
        with self._lock:
            return len(self._replies)

    def _serve(self, request: RecordedRequest) -> ScriptedReply:
        with self._lock:
            self._requests.append(request)
            if request.method == "HEAD":
                return ScriptedReply(200, "")
            if request.method == "POST" and request.path == COUNT_TOKENS_PATH:
                return ScriptedReply(200, {"input_tokens": max(1, len(json.dumps(request.body)) // 4)})
            if request.method != "POST" or request.path != MESSAGES_PATH:
                return error_reply(404, "not_found_error", f"fake server serves POST {MESSAGES_PATH} only")
            messages = request.body.get("messages") if isinstance(request.body, dict) else None
            problem = conversation_error(messages) or thinking_error(messages, self._signed)
            if problem is not None:
                return error_reply(400, "invalid_request_error", problem)
            for reply in self._replies:
                if reply.matches(request.body):
                    if not reply.repeat:
                        self._replies.remove(reply)
                    if reply.opens is not None:
                        reply.opens.set()
                    return self._signing(reply.answer(request.body))
            if self._otherwise is not None:
                return self._signing(self._otherwise.answer(request.body))
            return error_reply(500, "api_error", f"fake anthropic server: no scripted reply left "
                                                 f"for request #{len(self._requests)}")

    def _signing(self, reply: ScriptedReply) -> ScriptedReply:
        """``reply``, its thinking blocks noted as this server's (called under the lock)."""
        content = reply.body.get("content") if isinstance(reply.body, dict) else None
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "thinking":
                self._signed.add((block.get("thinking", ""), block.get("signature", "")))
        return reply

    def _wait(self, seconds: float) -> None:
        self._stopping.wait(seconds)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeAnthropicServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet: a client that timed out and hung up is expected in tests."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as separate writes
    server: _Server

    def do_POST(self) -> None:  # noqa: N802 (http.server naming)
        self._answer()

    def do_GET(self) -> None:  # noqa: N802
        self._answer()

    def do_HEAD(self) -> None:  # noqa: N802
        self._answer()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        """Silence per-request logging."""

    def _stream(self, reply: ScriptedReply) -> None:
        """Answer a ``"stream": true`` request with server-sent events (``sse_events``), then close; cut short
        (``stream_cut``) and ended by an ``error`` event (``stream_error``) when the reply says so."""
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")
        self.end_headers()
        events = sse_events(reply.body)
        if reply.stream_cut is not None:
            events = events[:reply.stream_cut]
        if reply.stream_error is not None:
            events.append(("error", reply.stream_error))
        pace = reply.pace
        try:
            for name, data in events:
                if pace:
                    self.server.fake._wait(pace)
                self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            with self.server.fake._lock:
                self.server.fake._abandoned += 1  # the client closed the connection before the answer's end
        self.close_connection = True

    def _answer(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        recorded = RecordedRequest(
            method=self.command, path=self.path.split("?", 1)[0],
            headers={k.lower(): v for k, v in self.headers.items()}, body=_parse(raw))
        if recorded.method == "POST" and recorded.path == MESSAGES_PATH:
            refused = self.server.fake._admit()
            if refused is not None:
                with self.server.fake._lock:
                    self.server.fake._requests.append(recorded)
                self._send(refused)
                return
            try:
                self._reply(recorded)
            finally:
                self.server.fake._done()
            return
        self._reply(recorded)

    def _reply(self, recorded: RecordedRequest) -> None:
        reply = self.server.fake._serve(recorded)
        while reply.gate is not None and not reply.gate.wait(0.05) and not self.server.fake._stopping.is_set():
            pass
        if reply.delay:
            self.server.fake._wait(reply.delay)
        if reply.status == 200 and isinstance(recorded.body, dict) and recorded.body.get("stream"):
            self._stream(reply)
            return
        self._send(reply)

    def _send(self, reply: ScriptedReply) -> None:
        payload = reply.body.encode() if isinstance(reply.body, str) else json.dumps(reply.body).encode()
        self.send_response(reply.status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)


def unmarked(value: Any) -> Any:
    """``value`` without prompt-cache markers (``cache_control``): the content the cache compares."""
    if isinstance(value, dict):
        return {k: unmarked(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [unmarked(v) for v in value]
    return value


def conversation_error(messages: Any) -> str | None:
    """What the Messages API would refuse in ``messages`` (the tool-use pairing rules), or None."""
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    if messages[0].get("role") != "user":
        return "messages.0: the first message must use the user role"
    open_calls: set[str] = set()
    for index, message in enumerate(messages):
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        if message.get("role") == "assistant":
            if open_calls:
                return f"messages.{index}: tool_use ids without tool_result right after: {sorted(open_calls)}"
            open_calls = {b["id"] for b in blocks if b.get("type") == "tool_use"}
            continue
        results = {b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"}
        for block in blocks:
            problem = result_content_error(block) if block.get("type") == "tool_result" else None
            if problem is not None:
                return f"messages.{index}.content: {problem}"
        if results - open_calls:
            return f"messages.{index}: tool_result for unknown tool_use ids {sorted(results - open_calls)}"
        if open_calls - results:
            return f"messages.{index}: tool_use ids without tool_result right after: {sorted(open_calls - results)}"
        open_calls = set()
    return None


IMAGE_MEDIA_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
MAX_IMAGE_BASE64 = 5 * 1024 * 1024
"""The API's limit for one image: 5 MB of base64 data."""


def result_content_error(block: dict[str, Any]) -> str | None:
    """What the API would refuse in a tool_result's content (a string, or text, image and document blocks)."""
    content = block.get("content", "")
    if isinstance(content, str):
        return None
    if not isinstance(content, list):
        return "tool_result.content: must be a string or a list of blocks"
    for number, item in enumerate(content):
        where = f"tool_result.content.{number}"
        kind = item.get("type") if isinstance(item, dict) else None
        source = item.get("source") if isinstance(item, dict) else None
        if kind == "text":
            if not isinstance(item.get("text"), str):
                return f"{where}.text: Field required"
        elif kind in ("image", "document"):
            if not isinstance(source, dict):
                return f"{where}.source: Field required"
            if source.get("type") == "url":
                if not isinstance(source.get("url"), str):
                    return f"{where}.source.url: Field required"
                continue
            if kind == "document" and source.get("type") == "text":  # plain text as a document
                if not isinstance(source.get("data"), str):
                    return f"{where}.source.data: Field required"
                continue
            if source.get("type") != "base64" or not isinstance(source.get("data"), str) or not source["data"]:
                return f"{where}.source: a base64 source with data is required"
            allowed = IMAGE_MEDIA_TYPES if kind == "image" else ("application/pdf",)
            if source.get("media_type") not in allowed:
                return f"{where}.source.media_type: Input should be {' or '.join(map(repr, allowed))}"
            if kind == "image" and len(source["data"]) > MAX_IMAGE_BASE64:
                return f"{where}.source.base64: image exceeds 5 MB maximum: {len(source['data'])} bytes > " \
                       f"{MAX_IMAGE_BASE64} bytes"
        else:
            return f"{where}.type: Input tag {kind!r} does not match 'text', 'image', 'document'"


def thinking_error(messages: Any, signed: set[tuple[str, str]]) -> str | None:
    """What the Messages API would refuse in ``messages``'s thinking: a block it did not send or whose signature
    changed, or thinking after an assistant message's text or tool calls; None when there is none."""
    if not isinstance(messages, list):
        return None
    for index, message in enumerate(messages):
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list) or message.get("role") != "assistant":
            continue
        seen_other = False
        for block in content:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind in ("thinking", "redacted_thinking"):
                if seen_other:
                    return f"messages.{index}: thinking blocks must come before text and tool_use blocks"
                if kind == "thinking" and (block.get("thinking"), block.get("signature")) not in signed:
                    return f"messages.{index}: Invalid `signature` in `thinking` block"
            else:
                seen_other = True
    return None


def sse_events(message: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """A Messages API response as the server-sent events a streaming request gets (text cut in pieces).

    As the API streams them: a thinking block starts empty, its text arrives
    as ``thinking_delta`` pieces and its signature as one ``signature_delta``
    before the block stops; a ``redacted_thinking`` block arrives whole in its
    ``content_block_start``.
    """
    usage = dict(message.get("usage") or {})
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 0}}
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(message.get("content", [])):
        if block["type"] == "text":
            events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                                   "content_block": {"type": "text", "text": ""}}))
            text = block["text"]
            for piece in [text[i:i + 7] for i in range(0, len(text), 7)] or [""]:
                events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                                       "delta": {"type": "text_delta", "text": piece}}))
        elif block["type"] == "thinking":
            events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                                   "content_block": {"type": "thinking", "thinking": "",
                                                                     "signature": ""}}))
            thinking = block["thinking"]
            for piece in [thinking[i:i + 7] for i in range(0, len(thinking), 7)] or [""]:
                events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                                       "delta": {"type": "thinking_delta", "thinking": piece}}))
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                                   "delta": {"type": "signature_delta",
                                                             "signature": block["signature"]}}))
        elif block["type"] == "redacted_thinking":
            events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                                   "content_block": dict(block)}))
        else:
            events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                                   "content_block": {**block, "input": {}}}))
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                                   "delta": {"type": "input_json_delta",
                                                             "partial_json": json.dumps(block.get("input", {}))}}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": message.get("stop_reason"), "stop_sequence": None},
                                     "usage": {"output_tokens": usage.get("output_tokens", 0)}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def since_model(body: Any) -> list[Any]:
    """The request's messages after the last assistant message: what the model is asked to answer now."""
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list):
        return []
    last = max((i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "assistant"), default=-1)
    return messages[last + 1:]


def _parse(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")
