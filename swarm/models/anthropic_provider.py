"""The Anthropic Messages API provider, through the official ``anthropic`` SDK: sending, streaming, retrying.

What a request and a response look like is ``swarm.models.api_shapes``;
which credentials reach Claude is ``swarm.models.credentials``.

The SDK is imported lazily, inside the first request, so importing this module
(and every command that never talks to Anthropic) stays cheap.

Retries are ours, not the SDK's (the client is built with ``max_retries=0``):

    retried with exponential backoff + jitter, each computed wait capped at max_delay:
        429 rate limited, 408, 409, every 5xx (incl. 529 overloaded),
        connection errors and timeouts, a stream that stalls (no event for
        ``read_timeout`` seconds) or ends without ``message_stop``, and an
        ``error`` event after the 200 (``overloaded_error`` as 529,
        ``api_error`` as 500, ``rate_limit_error`` as 429); a
        ``retry-after-ms`` / ``retry-after`` header replaces the computed wait
        and is honoured whole
    an overloaded API (529, ``overloaded_error``) gets more attempts
    (``RetryPolicy.overloaded_retries``) than other failures
    never retried (explicit list): 400, 401, 403, 404, 413, 422; a 400 that says
    the prompt is too long is ``PromptTooLong`` (the loop compacts and tries once more)
    never retried either: any other 4xx, other SDK errors

Every attempt goes through the team's gate (``swarm.models.team_gate``) when
the provider has one: the budget is checked before each request, an attempt
holds one of the team's slots while in flight, a ``retry-after`` the API sends
makes the whole team wait it out, and each answer's tokens are charged to the
member at the model table's prices.

The counts and waits come from ``RetryPolicy.from_env`` (``SWARM_API_MAX_RETRIES``,
``SWARM_API_OVERLOADED_RETRIES``, ``SWARM_API_MAX_DELAY``, ``SWARM_API_READ_TIMEOUT``).

Errors are translated at one boundary, ``_call_with_retries``:

    anthropic.AnthropicError ──► swarm.errors.ModelError   (raise ... from exc)

The ``ModelError`` message is one line: what failed, how often, what to do.
"""

from __future__ import annotations

import contextlib
import email.utils
import logging
import os
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from types import ModuleType
from typing import TYPE_CHECKING, Any

from swarm.core.text import flat
from swarm.errors import AnswerInterrupted, ModelError, PromptTooLong, UsageError
from swarm.models.base import ModelRequest, ModelResponse
from swarm.models.catalog import ALIASES, DEFAULT_ALIAS
from swarm.models.api_shapes import build_params, to_model_response
from swarm.models.credentials import HOW_TO_SET, Credentials, find_credentials
from swarm.models.retry_policy import RetryPolicy
from swarm.models.messages import (
    Message,
    TextBlock,
    Usage,
)
from swarm.models.team_gate import TeamGate

if TYPE_CHECKING:
    import anthropic

log = logging.getLogger(__name__)

DEFAULT_MODEL = ALIASES[DEFAULT_ALIAS]
"""What runs when nothing names a model: the ``sonnet`` alias's model (``swarm.models.catalog``)."""
OUTPUT_LIMIT_VARIABLES = ("SWARM_MAX_OUTPUT_TOKENS", "CLAUDE_CODE_MAX_OUTPUT_TOKENS")
"""Caps on a request's ``max_tokens`` below the model's own output limit (Claude Code's variable works too)."""
DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_TIMEOUT = 600.0
"""Seconds one HTTP request may take before it counts as a (retryable) timeout."""
STREAM_ERRORS = {"overloaded_error": 529, "api_error": 500, "rate_limit_error": 429, "timeout_error": 504}
"""An ``error`` event after the 200, by its type: the status it is retried as (other types are not retried)."""

RETRY_STATUSES = frozenset({408, 409, 429})
"""Retried 4xx statuses; every status >= 500 is retried as well."""
DO_NOT_RETRY_STATUSES = frozenset({400, 401, 403, 404, 413, 422})
"""Never retried: the same request would fail the same way."""
PROMPT_TOO_LONG = "prompt is too long"
"""What the API's 400 says when the request does not fit the model's window (``PromptTooLong``)."""
_ADVICE = {
    400: "fix the request (model, max_tokens, messages, tools); it is not retried",
    401: "check {credentials}",
    403: "check that the API key may use model {model}",
    404: "check the model id ({model}) and ANTHROPIC_BASE_URL ({base_url})",
    413: "the request is too large; shorten the conversation or tool results",
    422: "the request could not be processed; check the messages and tools",
    429: "the API is rate-limiting; wait and retry later, or run fewer agents at once",
    529: "the API is overloaded; retry later",
}


@dataclass(frozen=True)
class _Failure:
    """One failed attempt, classified."""

    retryable: bool
    what: str
    advice: str
    detail: str = ""
    retry_after: float | None = None
    overloaded: bool = False
    too_long: bool = False
    """A 400 whose message says the prompt is too long (``PromptTooLong``)."""

    def message(self, attempts: int) -> str:
        """One line: ``anthropic API <what> [N times] [(detail)]; <advice>``."""
        times = f" {attempts} times" if attempts > 1 else ""
        detail = f" ({self.detail})" if self.detail else ""
        return f"anthropic API {self.what}{times}{detail}; {self.advice}"


class AnthropicProvider:
    """``ModelProvider`` for the Anthropic Messages API; every call streams (``complete``).

    Configuration: explicit argument > ``env`` (the credentials
    ``swarm.models.credentials`` finds: ``ANTHROPIC_API_KEY``,
    ``ANTHROPIC_AUTH_TOKEN``, Bedrock, Vertex; ``ANTHROPIC_BASE_URL``,
    ``ANTHROPIC_MODEL``) > default. ``env`` defaults to ``os.environ``, read
    once here; no credentials, or a cloud whose SDK extra is missing, is a
    one-line UsageError. ``usage`` accumulates over every call.
    """

    def __init__(
        self,
        *,
        model: str | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        env: Mapping[str, str] | None = None,
        retry: RetryPolicy | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        sleep: Callable[[float], None] = time.sleep,
        rand: Callable[[], float] = random.random,
        on_text: Callable[[str], None] = lambda _: None,
        gate: TeamGate | None = None,
    ) -> None:
        source = os.environ if env is None else env
        credentials = Credentials("api", api_key=api_key, source="the API key") if api_key \
            else find_credentials(source)
        if credentials is None:
            raise UsageError(f"no credentials for Claude; {HOW_TO_SET}, or use the offline model 'scripted'")
        credentials.check_extras()
        self._credentials = credentials
        self._env = source
        self._base_url = base_url or source.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL
        self._model = model or source.get("ANTHROPIC_MODEL") or DEFAULT_MODEL
        self._output_cap = _output_cap(source)
        self._retry = retry or RetryPolicy.from_env(source)
        self._timeout = timeout
        self._sleep = sleep
        self._rand = rand
        self.on_text = on_text
        """Called with each piece of text as the model produces it (a live view; the default ignores it)."""
        self.gate = gate
        """The team's budget, request slots and shared backoff (None: nothing shared, nothing charged)."""
        self._client: anthropic.Anthropic | None = None
        self._lock = threading.Lock()
        self.usage = Usage()

    @property
    def name(self) -> str:
        return "anthropic"

    @property
    def model(self) -> str:
        return self._model

    @property
    def base_url(self) -> str:
        return self._base_url

    def complete(self, request: ModelRequest, stop: threading.Event | None = None) -> ModelResponse:
        """Send ``request`` as a streaming call; retry transient failures; raise ``ModelError`` when done trying.

        Streaming (server-sent events) keeps long answers from hitting the
        non-streaming time limit, and ``on_text`` hears the text as it arrives.
        Once ``stop`` is set, the answer is abandoned at its next event: the
        connection is closed (the API stops writing it) and ``AnswerInterrupted``
        raised; no retry starts after it.
        """
        if self._output_cap is not None and request.max_tokens > self._output_cap:
            request = request.model_copy(update={"max_tokens": self._output_cap})
        if self.gate is not None:
            self.gate.check_budget()
        raw = self._call_with_retries(build_params(self._model, request), stop)
        response = to_model_response(raw)
        with self._lock:
            self.usage = self.usage + response.usage
        if self.gate is not None:
            self.gate.charge(self._model, response.usage)
        return response

    def close(self) -> None:
        """Release the HTTP connection pool; safe to call twice."""
        client, self._client = self._client, None
        if client is not None:
            client.close()

    def __enter__(self) -> AnthropicProvider:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _sdk_client(self) -> anthropic.Anthropic:
        if self._client is None:
            sdk = _sdk()
            # a stalled stream is a read timeout, far below the whole request's
            timeout = sdk.Timeout(self._timeout, read=min(self._timeout, self._retry.read_timeout))
            self._client = self._credentials.client(sdk, base_url=self._base_url, env=self._env, max_retries=0,
                                                    timeout=timeout)
        return self._client

    def _call_with_retries(self, params: dict[str, Any], stop: threading.Event | None) -> Any:
        sdk, client = _sdk(), self._sdk_client()
        attempt = 0
        while True:
            attempt += 1
            _unless_interrupted(stop, "before the model was asked")
            try:
                with self._in_flight(stop):
                    return self._stream(client, params, stop)
            except InterruptedError as exc:  # the team's slot or backoff was still being waited for
                raise AnswerInterrupted("the turn was interrupted before the model was asked") from exc
            except (sdk.AnthropicError, _Cut) as exc:
                failure = self._classify(exc, sdk)
                if failure.retry_after is not None and self.gate is not None:
                    self.gate.back_off(failure.retry_after)  # the whole team waits it out, not this member alone
                if not failure.retryable or attempt >= self._retry.attempts(failure.overloaded):
                    kind = PromptTooLong if failure.too_long else ModelError
                    raise kind(failure.message(attempt)) from exc
            delay = self._retry.delay(attempt - 1, failure.retry_after, self._rand())
            log.warning("retried model request", extra={
                "provider": "anthropic", "model": self._model, "attempt": attempt,
                "reason": failure.what, "delay_s": round(delay, 3)})
            self._pause(delay, stop)

    def _pause(self, delay: float, stop: threading.Event | None) -> None:
        """The wait before a retry; an interrupt ends it, and the call."""
        if stop is None:
            self._sleep(delay)
        elif stop.wait(delay):
            raise AnswerInterrupted("the turn was interrupted while the model's answer was retried")

    def _in_flight(self, stop: threading.Event | None) -> contextlib.AbstractContextManager[None]:
        return self.gate.in_flight(stop) if self.gate is not None else contextlib.nullcontext()

    def _stream(self, client: anthropic.Anthropic, params: dict[str, Any], stop: threading.Event | None) -> Any:
        with client.messages.stream(**params) as stream:  # its exit closes the connection, however the block ends
            stopped = False
            for event in stream:
                _unless_interrupted(stop, "while the model answered")
                if event.type == "text":
                    self.on_text(event.text)
                elif event.type == "message_stop":
                    stopped = True
            if not stopped:
                raise _Cut()
            return stream.get_final_message()

    def _classify(self, exc: Exception, sdk: ModuleType) -> _Failure:
        if isinstance(exc, _Cut):
            return _Failure(True, "ended its streamed answer before message_stop",
                            "retry later; the connection may have dropped")
        if isinstance(exc, sdk.APIStatusError) and exc.status_code < 400:
            return self._classify_stream_error(exc)
        if isinstance(exc, sdk.APIStatusError):
            return self._classify_status(exc)
        if isinstance(exc, sdk.APITimeoutError):
            return _Failure(True, f"did not answer within {self._timeout:g} s",
                            "retry later, or raise the timeout")
        if isinstance(exc, sdk.APIConnectionError):
            return _Failure(True, f"could not be reached at {self._base_url}",
                            "check the network and ANTHROPIC_BASE_URL", flat(str(exc.__cause__ or exc)))
        return _Failure(False, "call failed in the SDK", "check the anthropic package version and the request",
                        f"{type(exc).__name__}: {flat(str(exc))}")

    def _classify_stream_error(self, exc: Any) -> _Failure:
        """An ``error`` event after the 200: retried as the status its type stands for (``STREAM_ERRORS``)."""
        error = exc.body.get("error") if isinstance(exc.body, dict) else None
        kind = error.get("type") if isinstance(error, dict) else None
        status = STREAM_ERRORS.get(kind or "")
        detail = _error_detail(exc.body)
        if status is None:
            return _Failure(False, "sent an error event in its streamed answer", "it is not retried", detail)
        advice = _ADVICE.get(status, "check https://status.anthropic.com or retry later")
        return _Failure(True, f"sent {kind} in its streamed answer", advice, detail, overloaded=status == 529)

    def _classify_status(self, exc: Any) -> _Failure:
        status: int = exc.status_code
        what = f"returned {status} {_reason(status)}"
        advice = _ADVICE.get(status)
        if advice is None:
            advice = "check https://status.anthropic.com or retry later" if status >= 500 else "it is not retried"
        advice = advice.format(model=self._model, base_url=self._base_url, credentials=self._credentials.source)
        retryable = status not in DO_NOT_RETRY_STATUSES and (status in RETRY_STATUSES or status >= 500)
        detail = _error_detail(exc.body)
        too_long = status == 400 and PROMPT_TOO_LONG in detail.lower()
        if too_long:
            advice = "the conversation does not fit the model's window; compact it or start anew"
        return _Failure(retryable, what, advice, detail, _retry_after(exc.response.headers),
                        overloaded=status == 529, too_long=too_long)


def _unless_interrupted(stop: threading.Event | None, when: str) -> None:
    if stop is not None and stop.is_set():
        raise AnswerInterrupted(f"the turn was interrupted {when}")


class _Cut(Exception):
    """A streamed answer ended without ``message_stop`` (retried: the message may be incomplete)."""


def _error_detail(body: object) -> str:
    """``"<type>: <message>"`` from Anthropic's error body, or the raw body, on one line."""
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        kind, message = error.get("type") or "error", error.get("message") or ""
        return flat(f"{kind}: {message}" if message else str(kind))
    return flat(str(body)) if body else ""


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from ``retry-after-ms`` or ``retry-after`` (seconds or HTTP date)."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return float(millis) / 1000.0
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return when.timestamp() - time.time()


def _output_cap(env: Mapping[str, str]) -> int | None:
    """The first of ``OUTPUT_LIMIT_VARIABLES`` set to a positive whole number (a bad value is a UsageError)."""
    for variable in OUTPUT_LIMIT_VARIABLES:
        raw = env.get(variable, "").strip()
        if not raw:
            continue
        if not raw.isdigit() or int(raw) < 1:
            raise UsageError(f"{variable}={raw!r} is not a positive number of tokens; fix or unset it")
        return int(raw)
    return None


def _reason(status: int) -> str:
    if status == 529:
        return "Overloaded"
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def preload_sdk() -> None:
    """Import the SDK and run one streamed request through it, answered in-process (no network), so that what
    a first request loads and builds (the client, its HTTP stack, the Messages resource, the pydantic schemas
    of the stream's events) exists before the CLI server forks: every teammate forked from it shares those
    pages and spares ~1 s of CPU at its first request. Nothing is kept."""
    sdk = _sdk()
    import httpx2

    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=_PRELOAD_STREAM)

    provider = AnthropicProvider(api_key="preload", base_url="http://127.0.0.1:9", env={})
    provider._client = sdk.Anthropic(api_key="preload", base_url="http://127.0.0.1:9", max_retries=0,
                                     http_client=httpx2.Client(transport=httpx2.MockTransport(answer)))
    try:
        provider.complete(ModelRequest(messages=[Message(role="user", content=[TextBlock(text="preload")])],
                                       max_tokens=1))
    finally:
        provider.close()
    Credentials("api", api_key="preload").client(sdk, base_url="http://127.0.0.1:9", env={}, max_retries=0).close()
    # ^ the real transport, as a teammate builds it: its TLS context (swarm.models.tls) stays, shared after the fork
    "preload".encode("idna")  # the codec a first connection's host lookup imports (encodings.idna, stringprep)


_PRELOAD_STREAM = b"".join(
    b"event: %s\ndata: %s\n\n" % (kind.encode(), data.encode()) for kind, data in (
        ("message_start", '{"type":"message_start","message":{"id":"msg_preload","type":"message","role":'
                          '"assistant","model":"preload","content":[],"stop_reason":null,"stop_sequence":null,'
                          '"usage":{"input_tokens":1,"output_tokens":0}}}'),
        ("content_block_start", '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}'),
        ("content_block_delta", '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}}'),
        ("content_block_stop", '{"type":"content_block_stop","index":0}'),
        ("message_delta", '{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},'
                          '"usage":{"output_tokens":1}}'),
        ("message_stop", '{"type":"message_stop"}'),
    ))
"""A whole streamed answer ("ok"), as the Messages API sends it: what ``preload_sdk`` feeds the SDK."""


def _sdk() -> ModuleType:
    """The ``anthropic`` module, imported on first use."""
    import anthropic

    return anthropic
