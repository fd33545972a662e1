"""AnthropicProvider through the real anthropic SDK, over HTTP to a fake server."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace

import pytest

from swarm.errors import ModelError, UsageError
from swarm.models.anthropic_provider import (
    DEFAULT_MODEL,
    AnthropicProvider,
    RetryPolicy,
)
from swarm.models.base import ModelRequest, ToolSpec
from swarm.models.messages import (
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)
from tests.fakes import (
    FakeAnthropicServer,
    ScriptedReply,
    error_reply,
    text_reply,
    tool_use_reply,
    usage_json,
)
from tests.fakes.anthropic_server import unmarked
from tests.models.helpers import SleepRecorder

Make = Callable[..., AnthropicProvider]

BASH = ToolSpec(name="Bash", description="Run a shell command.",
                input_schema={"type": "object", "properties": {"command": {"type": "string"}},
                              "required": ["command"]})


def hello(**kw: object) -> ModelRequest:
    return ModelRequest(messages=[Message.user_text("hello")], **kw)  # type: ignore[arg-type]


def test_request_carries_model_system_messages_and_tools(make_anthropic: Make,
                                                        anthropic_server: FakeAnthropicServer) -> None:
    anthropic_server.enqueue(text_reply("hi"))
    conversation = [
        Message.user_text("list files"),
        Message(role="assistant", content=[ToolUseBlock(id="toolu_1", name="Bash", input={"command": "ls"})]),
        Message(role="user", content=[ToolResultBlock(tool_use_id="toolu_1", content="a.py")]),
    ]
    make_anthropic(model="claude-test-1").complete(
        ModelRequest(system="You are terse.", messages=conversation, tools=[BASH], max_tokens=321))

    (seen,) = anthropic_server.requests
    assert seen.path == "/v1/messages"
    credential = seen.headers.get("x-api-key") or seen.headers.get("authorization", "").removeprefix("Bearer ")
    assert credential == "test-key"  # SDK versions differ in which header carries the key
    assert seen.body["model"] == "claude-test-1"
    assert seen.body["max_tokens"] == 321
    assert seen.body["system"] == [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}]
    assert unmarked(seen.body["messages"]) == [m.model_dump(mode="json") for m in conversation]
    assert seen.body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}  # the breakpoint
    assert seen.body["tools"] == [{"name": "Bash", "description": "Run a shell command.",
                                   "input_schema": BASH.input_schema, "cache_control": {"type": "ephemeral"}}]


def test_empty_system_and_tools_are_omitted(make_anthropic: Make, anthropic_server: FakeAnthropicServer) -> None:
    anthropic_server.enqueue(text_reply("hi"))
    make_anthropic().complete(hello())
    body = anthropic_server.requests[0].body
    assert "system" not in body
    assert "tools" not in body


def test_text_reply_is_parsed(make_anthropic: Make, anthropic_server: FakeAnthropicServer) -> None:
    anthropic_server.enqueue(text_reply("hello back", model="claude-x"))
    response = make_anthropic().complete(hello())
    assert response.content == [TextBlock(text="hello back")]
    assert response.stop_reason == "end_turn"
    assert response.model == "claude-x"


def test_tool_use_reply_becomes_tool_use_block(make_anthropic: Make,
                                               anthropic_server: FakeAnthropicServer) -> None:
    anthropic_server.enqueue(tool_use_reply("Bash", {"command": "pytest -q"}, tool_id="toolu_abc",
                                            text="Running tests."))
    response = make_anthropic().complete(hello(tools=[BASH]))
    assert response.stop_reason == "tool_use"
    assert response.content[0] == TextBlock(text="Running tests.")
    assert response.content[1] == ToolUseBlock(id="toolu_abc", name="Bash", input={"command": "pytest -q"})
    assert response.message().tool_uses()[0].input == {"command": "pytest -q"}


def test_unknown_stop_reason_for_context_window_maps_to_max_tokens(
        make_anthropic: Make, anthropic_server: FakeAnthropicServer) -> None:
    anthropic_server.enqueue(text_reply("cut", stop_reason="model_context_window_exceeded"))
    assert make_anthropic().complete(hello()).stop_reason == "max_tokens"


def test_usage_is_accumulated_with_cache_fields(make_anthropic: Make,
                                                anthropic_server: FakeAnthropicServer) -> None:
    anthropic_server.enqueue(
        text_reply("one", usage=usage_json(100, 20, cache_read=300, cache_creation=40)),
        text_reply("two", usage=usage_json(7, 3)),  # cache fields null → 0
    )
    provider = make_anthropic()
    first = provider.complete(hello())
    second = provider.complete(hello())
    assert first.usage == Usage(input_tokens=100, output_tokens=20,
                                cache_read_input_tokens=300, cache_creation_input_tokens=40)
    assert second.usage == Usage(input_tokens=7, output_tokens=3)
    assert provider.usage == Usage(input_tokens=107, output_tokens=23,
                                   cache_read_input_tokens=300, cache_creation_input_tokens=40)


def test_rate_limit_then_success_is_retried(make_anthropic: Make, anthropic_server: FakeAnthropicServer,
                                            sleeps: SleepRecorder) -> None:
    anthropic_server.enqueue(error_reply(429, "rate_limit_error", "slow down"), text_reply("done"))
    response = make_anthropic().complete(hello())
    assert response.content == [TextBlock(text="done")]
    assert len(anthropic_server.requests) == 2
    assert sleeps.calls == [0.01]


def test_retry_after_header_is_honoured_whole(make_anthropic: Make, anthropic_server: FakeAnthropicServer,
                                              sleeps: SleepRecorder) -> None:
    anthropic_server.enqueue(
        error_reply(429, "rate_limit_error", "wait", headers={"retry-after": "0.25"}),
        error_reply(429, "rate_limit_error", "wait long", headers={"retry-after": "3600"}),
        error_reply(429, "rate_limit_error", "wait ms", headers={"retry-after-ms": "120"}),
        text_reply("done"),
    )
    make_anthropic().complete(hello())
    assert sleeps.calls == [0.25, 3600.0, 0.12]  # the server's word wins over max_delay=0.5 (a computed wait's cap)


def test_overloaded_529_is_retried(make_anthropic: Make, anthropic_server: FakeAnthropicServer,
                                   sleeps: SleepRecorder) -> None:
    anthropic_server.enqueue(error_reply(529, "overloaded_error", "Overloaded"),
                             error_reply(529, "overloaded_error", "Overloaded"), text_reply("ok"))
    assert make_anthropic().complete(hello()).content == [TextBlock(text="ok")]
    assert len(anthropic_server.requests) == 3
    assert sleeps.calls == [0.01, 0.02]  # exponential backoff


def test_repeated_500_gives_model_error_after_all_retries(make_anthropic: Make,
                                                          anthropic_server: FakeAnthropicServer) -> None:
    anthropic_server.enqueue(*[error_reply(500, "api_error", "Internal\nboom")] * 10)
    provider = make_anthropic(retry=RetryPolicy(max_retries=3, base_delay=0.0))
    with pytest.raises(ModelError) as caught:
        provider.complete(hello())
    assert len(anthropic_server.requests) == 4
    message = str(caught.value)
    assert "500" in message and "4 times" in message and "retry later" in message
    assert "\n" not in message
    assert type(caught.value) is ModelError  # not an SDK exception
    assert provider.usage == Usage()


def test_overloaded_exhausted_says_overloaded(make_anthropic: Make, anthropic_server: FakeAnthropicServer) -> None:
    anthropic_server.enqueue(*[error_reply(529, "overloaded_error", "Overloaded")] * 4)
    with pytest.raises(ModelError, match="529 Overloaded 4 times.*overloaded; retry later"):
        make_anthropic(retry=RetryPolicy(max_retries=1, overloaded_retries=3, base_delay=0.0)).complete(hello())
    assert len(anthropic_server.requests) == 4  # an overloaded API gets more patience than max_retries=1


def test_authentication_error_is_not_retried(make_anthropic: Make, anthropic_server: FakeAnthropicServer,
                                             sleeps: SleepRecorder) -> None:
    anthropic_server.enqueue(error_reply(401, "authentication_error", "invalid x-api-key"), text_reply("never"))
    with pytest.raises(ModelError, match="401.*invalid x-api-key.*ANTHROPIC_API_KEY"):
        make_anthropic().complete(hello())
    assert len(anthropic_server.requests) == 1
    assert sleeps.calls == []


@pytest.mark.parametrize(("status", "error_type"), [
    (400, "invalid_request_error"), (403, "permission_error"), (404, "not_found_error"),
    (413, "request_too_large"), (422, "invalid_request_error"),
])
def test_do_not_retry_list(make_anthropic: Make, anthropic_server: FakeAnthropicServer,
                           status: int, error_type: str) -> None:
    anthropic_server.enqueue(error_reply(status, error_type, "no"), text_reply("never"))
    with pytest.raises(ModelError, match=str(status)):
        make_anthropic().complete(hello())
    assert len(anthropic_server.requests) == 1


def test_not_found_names_the_model(make_anthropic: Make, anthropic_server: FakeAnthropicServer) -> None:
    anthropic_server.enqueue(error_reply(404, "not_found_error", "model: claude-nope"))
    with pytest.raises(ModelError, match=r"check the model id \(claude-nope\)"):
        make_anthropic(model="claude-nope").complete(hello())


def test_connection_refused_is_retried_then_model_error(sleeps: SleepRecorder) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    provider = AnthropicProvider(
        env={"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}"},
        retry=RetryPolicy(max_retries=2, base_delay=0.0), sleep=sleeps, timeout=2.0)
    with provider, pytest.raises(ModelError, match=f"could not be reached at http://127.0.0.1:{port}"):
        provider.complete(hello())
    assert len(sleeps.calls) == 2


def test_timeout_is_retried(make_anthropic: Make, anthropic_server: FakeAnthropicServer,
                            sleeps: SleepRecorder) -> None:
    slow = ScriptedReply(200, text_reply("late").body, delay=2.0)
    anthropic_server.enqueue(slow, text_reply("on time"))
    response = make_anthropic(timeout=0.2).complete(hello())
    assert response.content == [TextBlock(text="on time")]
    assert len(sleeps.calls) == 1


def test_empty_queue_answers_clear_500(make_anthropic: Make, anthropic_server: FakeAnthropicServer) -> None:
    with pytest.raises(ModelError, match="no scripted reply left"):
        make_anthropic(retry=RetryPolicy(max_retries=0)).complete(hello())


def test_configuration_precedence() -> None:
    env = {"ANTHROPIC_API_KEY": "k", "ANTHROPIC_MODEL": "claude-env", "ANTHROPIC_BASE_URL": "http://h:1"}
    assert AnthropicProvider(env=env).model == "claude-env"
    assert AnthropicProvider(env=env, model="claude-arg").model == "claude-arg"
    assert AnthropicProvider(env={"ANTHROPIC_API_KEY": "k"}).model == DEFAULT_MODEL
    assert AnthropicProvider(env=env).base_url == "http://h:1"
    assert AnthropicProvider(env={}, api_key="explicit").name == "anthropic"


def test_missing_api_key_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="no credentials for Claude; export ANTHROPIC_API_KEY"):
        AnthropicProvider(env={"ANTHROPIC_MODEL": "claude-x"})


def test_backoff_is_exponential_jittered_and_capped() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=10.0, jitter=0.5)
    assert [policy.delay(i, None, 0.0) for i in range(5)] == [1.0, 2.0, 4.0, 8.0, 10.0]
    assert policy.delay(1, None, 0.999) == pytest.approx(1.001)
    assert policy.delay(0, 99.0, 0.5) == 99.0  # a server's retry-after is not capped
    assert policy.delay(0, -3.0, 0.5) == 0.0


def test_importing_the_module_does_not_import_the_sdk() -> None:
    code = ("import sys, swarm.models.anthropic_provider, swarm.models.factory; "
            "sys.exit(1 if 'anthropic' in sys.modules else 0)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr or "anthropic was imported at module import time"


def test_requests_stream_and_the_text_arrives_in_pieces(make_anthropic: Make,
                                                        anthropic_server: FakeAnthropicServer) -> None:
    both = tool_use_reply("Bash", {"command": "ls -la", "description": "list"}, tool_id="toolu_9",
                          text="Let me look at the files first, then decide.",
                          usage=usage_json(120, 30, cache_read=100, cache_creation=7))
    anthropic_server.enqueue(both)
    pieces: list[str] = []
    response = make_anthropic(on_text=pieces.append).complete(hello())
    [seen] = anthropic_server.requests
    assert seen.body["stream"] is True
    assert len(pieces) > 1 and "".join(pieces) == "Let me look at the files first, then decide."
    assert [b.type for b in response.content] == ["text", "tool_use"]
    assert response.content[1].input == {"command": "ls -la", "description": "list"}
    assert response.stop_reason == "tool_use"
    usage = response.usage
    assert (usage.input_tokens, usage.output_tokens) == (120, 30)
    assert (usage.cache_read_input_tokens, usage.cache_creation_input_tokens) == (100, 7)


# -- the API as it behaves: broken streams, stop reasons --------------------------------------------------------

OVERLOADED_EVENT = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}


@pytest.mark.parametrize(("kind", "retried"), [
    ("overloaded_error", True), ("api_error", True), ("rate_limit_error", True), ("invalid_request_error", False)])
def test_an_error_event_after_the_200_is_retried_as_its_kind(make_anthropic: Make,
                                                              anthropic_server: FakeAnthropicServer,
                                                              kind: str, retried: bool) -> None:
    event = {"type": "error", "error": {"type": kind, "message": "mid-stream"}}
    anthropic_server.enqueue(replace(text_reply("partial answer that never finished"), stream_cut=3,
                                     stream_error=event), text_reply("whole answer"))
    provider = make_anthropic()
    if not retried:
        with pytest.raises(ModelError, match=f"{kind}: mid-stream"):
            provider.complete(hello())
        return
    assert provider.complete(hello()).content == [TextBlock(text="whole answer")]
    assert len(anthropic_server.requests) == 2


def test_a_stream_that_ends_without_message_stop_is_retried_not_taken_as_the_answer(
        make_anthropic: Make, anthropic_server: FakeAnthropicServer) -> None:
    anthropic_server.enqueue(replace(text_reply("half of the ans"), stream_cut=4), text_reply("the whole answer"))
    assert make_anthropic().complete(hello()).content == [TextBlock(text="the whole answer")]
    assert len(anthropic_server.requests) == 2


def test_a_stream_that_keeps_breaking_is_a_model_error_that_says_so(make_anthropic: Make,
                                                                     anthropic_server: FakeAnthropicServer) -> None:
    anthropic_server.enqueue(*[replace(text_reply("half"), stream_cut=4)] * 4)
    with pytest.raises(ModelError, match="before message_stop 4 times"):
        make_anthropic().complete(hello())


def test_a_stalled_stream_times_out_on_read_and_is_retried(make_anthropic: Make,
                                                            anthropic_server: FakeAnthropicServer) -> None:
    anthropic_server.enqueue(replace(text_reply("slow words arrive one by one"), pace=1.0), text_reply("fast"))
    policy = RetryPolicy(max_retries=2, base_delay=0.0, read_timeout=0.3)
    assert make_anthropic(retry=policy).complete(hello()).content == [TextBlock(text="fast")]


def test_retry_counts_and_waits_come_from_the_environment() -> None:
    policy = RetryPolicy.from_env({"SWARM_API_MAX_RETRIES": "7", "SWARM_API_OVERLOADED_RETRIES": "20",
                                   "SWARM_API_MAX_DELAY": "5", "SWARM_API_READ_TIMEOUT": "30"})
    assert (policy.max_retries, policy.overloaded_retries, policy.max_delay, policy.read_timeout) == (7, 20, 5.0, 30.0)
    assert policy.attempts(overloaded=False) == 8 and policy.attempts(overloaded=True) == 21
    with pytest.raises(UsageError, match="SWARM_API_MAX_RETRIES='many' is not a number of retries"):
        RetryPolicy.from_env({"SWARM_API_MAX_RETRIES": "many"})
