"""ScriptedProvider: matching, steps, templating, once, default, usage."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from swarm.errors import UsageError
from swarm.models.base import ModelRequest, ModelResponse, ToolSpec
from swarm.models.messages import (
    ContentBlock,
    Message,
    TextBlock,
    ToolResultBlock,
    Usage,
)
from swarm.models.playbook import parse_playbook
from swarm.models.scripted import ScriptedProvider, approx_tokens, request_text

DOCS = Path(__file__).resolve().parents[2] / "docs" / "playbook.md"


def scripted(data: dict[str, Any], **variables: str) -> ScriptedProvider:
    return ScriptedProvider(parse_playbook(data, source="test.toml"), variables=variables)


class Chat:
    """Drives a provider like the agent loop does: keeps the conversation, answers tool calls."""

    def __init__(self, provider: ScriptedProvider) -> None:
        self.provider = provider
        self.messages: list[Message] = []

    def say(self, text: str) -> ModelResponse:
        return self._call(Message.user_text(text))

    def results(self, *contents: str) -> ModelResponse:
        uses = self.messages[-1].tool_uses()
        blocks: list[ContentBlock] = [
            ToolResultBlock(tool_use_id=u.id, content=c) for u, c in zip(uses, contents, strict=True)]
        return self._call(Message(role="user", content=blocks))

    def _call(self, message: Message) -> ModelResponse:
        self.messages.append(message)
        response = self.provider.complete(ModelRequest(messages=list(self.messages)))
        self.messages.append(response.message())
        return response


def text_of(response: ModelResponse) -> str:
    return response.message().text()


def calls(response: ModelResponse) -> list[tuple[str, dict[str, Any]]]:
    return [(u.name, u.input) for u in response.message().tool_uses()]


def test_first_matching_rule_wins() -> None:
    chat = Chat(scripted({"rules": [
        {"match": "deploy", "text": "first"},
        {"match": "deploy now", "text": "second"},
        {"match": "now", "text": "third"},
    ]}))
    assert text_of(chat.say("please deploy now")) == "first"
    assert text_of(chat.say("now")) == "third"


def test_on_filters_prompt_and_tool_result() -> None:
    chat = Chat(scripted({"rules": [
        {"match": "ok", "on": "tool_result", "text": "saw a tool result"},
        {"match": "ok", "on": "prompt", "tool_calls": [{"name": "Bash", "input": {"command": "echo ok"}}]},
    ]}))
    first = chat.say("ok?")
    assert calls(first) == [("Bash", {"command": "echo ok"})]
    assert first.stop_reason == "tool_use"
    second = chat.results("ok")
    assert text_of(second) == "saw a tool result"
    assert second.stop_reason == "end_turn"


def test_incoming_joins_text_and_tool_result_contents() -> None:
    provider = scripted({"rules": [{"match": "alpha\nbeta", "text": "joined"}]})
    message = Message(role="user", content=[
        ToolResultBlock(tool_use_id="t1", content="alpha"), TextBlock(text="beta")])
    response = provider.complete(ModelRequest(messages=[Message.user_text("older beta"), message]))
    assert text_of(response) == "joined"


def test_steps_continue_across_calls_whatever_the_results_say() -> None:
    chat = Chat(scripted({"rules": [
        {"match": "fix (?P<file>\\S+)", "steps": [
            {"tool_calls": [{"name": "Edit", "input": {"file_path": "{file}"}}]},
            {"tool_calls": [{"name": "Bash", "input": {"command": "pytest {file}"}}]},
            {"text": "done with {file}"},
        ]},
        {"match": "error", "text": "a rule that would otherwise match the tool result"},
    ]}))
    assert calls(chat.say("fix calc.py")) == [("Edit", {"file_path": "calc.py"})]
    assert calls(chat.results("error: old_string not found")) == [("Bash", {"command": "pytest calc.py"})]
    assert text_of(chat.results("error: 1 failed")) == "done with calc.py"
    assert text_of(chat.say("error again")) == "a rule that would otherwise match the tool result"


def test_text_only_step_continues_on_the_next_call() -> None:
    chat = Chat(scripted({"rules": [{"match": "start", "steps": [{"text": "one"}, {"text": "two"}]}]}))
    assert text_of(chat.say("start")) == "one"
    assert text_of(chat.say("anything")) == "two"
    assert text_of(chat.say("anything")) == 'Received: "anything"'


def test_steps_follow_their_own_tool_ids_when_conversations_interleave() -> None:
    provider = scripted({"rules": [
        {"match": "parent", "steps": [{"tool_calls": [{"name": "Task", "input": {}}]}, {"text": "parent done"}]},
        {"match": "child", "text": "child answer"},
    ]})
    parent, child = Chat(provider), Chat(provider)
    parent.say("parent task")
    assert text_of(child.say("child task")) == "child answer"  # not the parent's step 2
    assert text_of(parent.results("child answer")) == "parent done"


def test_templating_from_named_numbered_groups_and_variables() -> None:
    chat = Chat(scripted({"vars": {"greeting": "hi", "team": "default-team"}, "rules": [{
        "match": "(\\w+) to (?P<who>\\w+)",
        "text": "{greeting} {who} from {agent_name} in {team}: {0} / {1} {{literal}}",
        "tool_calls": [{"name": "SendMessage", "input": {
            "to": "{who}", "message": {"body": ["{1} \"quoted\"", 3, True]}, "raw": '{"a": 1}'}}],
    }]}, agent_name="alice", team="red"))
    response = chat.say("please ship to bob")
    assert text_of(response) == "hi bob from alice in red: ship to bob / ship {literal}"
    assert calls(response) == [("SendMessage", {
        "to": "bob", "message": {"body": ['ship "quoted"', 3, True]}, "raw": '{"a": 1}'})]


def test_group_values_override_variables_and_optional_groups_are_empty() -> None:
    chat = Chat(scripted({"rules": [{"match": "(?P<agent_name>x)(?P<opt>y)?", "text": "[{agent_name}][{opt}]"}]},
                         agent_name="alice"))
    assert text_of(chat.say("x")) == "[x][]"


def test_unknown_slot_is_a_usage_error_at_build_time() -> None:
    data = {"rules": [{"match": "(?P<file>\\S+)", "steps": [
        {"text": "ok {file}"},
        {"tool_calls": [{"name": "Edit", "input": {"file_path": "{fiel}"}}]}]}]}
    with pytest.raises(UsageError, match=re.escape("rules[0].steps[1].tool_calls[0].input.file_path")
                       + ".*{fiel}") as caught:
        scripted(data)
    assert "test.toml" in str(caught.value)
    assert scripted({"vars": {"fiel": "x"}, **data}).playbook.rules  # a [vars] default makes it known
    scripted(data, fiel="from-provider")  # so does a provider variable


def test_once_rule_fires_once() -> None:
    chat = Chat(scripted({"rules": [{"match": "hello", "once": True, "text": "welcome"},
                                    {"match": "hello", "text": "again"}]}))
    assert text_of(chat.say("hello")) == "welcome"
    assert text_of(chat.say("hello")) == "again"


def test_default_reply_quotes_the_first_line_without_a_playbook() -> None:
    provider = ScriptedProvider()
    response = provider.complete(ModelRequest(messages=[Message.user_text("\n  do the thing  \nmore detail")]))
    assert response.content == [TextBlock(text='Received: "do the thing"')]
    assert response.stop_reason == "end_turn"
    assert provider.name == provider.model == "scripted"


def test_default_reply_is_configurable() -> None:
    chat = Chat(scripted({"default": {"text": "{agent_name} says: {first_line}"}}, agent_name="bob"))
    assert text_of(chat.say("ping\npong")) == "bob says: ping"


def test_tool_use_ids_are_deterministic_and_count_per_provider() -> None:
    data = {"rules": [{"match": "", "tool_calls": [{"name": "A"}, {"name": "B"}]}]}
    ids = [u.id for u in Chat(scripted(data)).say("x").message().tool_uses()]
    assert ids == ["toolu_scripted_0001", "toolu_scripted_0002"]
    chat = Chat(scripted(data))
    chat.say("x")
    assert [u.id for u in chat.results("a", "b").message().tool_uses()] == [
        "toolu_scripted_0003", "toolu_scripted_0004"]


def test_usage_is_approximate_and_accumulates() -> None:
    provider = ScriptedProvider(parse_playbook({"rules": [{"text": "abcdefgh"}]}))
    request = ModelRequest(system="s" * 40, messages=[Message.user_text("x" * 9)],
                           tools=[ToolSpec(name="T", description="d", input_schema={})])
    response = provider.complete(request)
    assert response.usage.output_tokens == 2
    assert response.usage.input_tokens >= 13  # 40 + 9 chars of text alone
    provider.complete(request)
    assert provider.usage == Usage(input_tokens=2 * response.usage.input_tokens, output_tokens=4)
    assert [approx_tokens(t) for t in ("", "a", "abcd", "abcde")] == [1, 1, 1, 2]


SHUTDOWN_RULE = {
    "match": '(?s)"type":\\s*"shutdown_request".*?"requestId":\\s*"(?P<rid>[^"]+)"',
    "on": "prompt",
    "tool_calls": [{"name": "SendMessage", "input": {
        "to": "team-lead", "message": {"type": "shutdown_response", "request_id": "{rid}", "approve": True}}}],
}


def test_shutdown_request_is_answered_with_structured_send_message() -> None:
    frame = {"type": "shutdown_request", "requestId": "shutdown-1764478958123@fixer", "from": "team-lead",
             "timestamp": "2026-11-30T04:22:38.123Z"}
    chat = Chat(scripted({"rules": [SHUTDOWN_RULE]}))
    response = chat.say(f'<teammate-message teammate_id="team-lead">\n{json.dumps(frame)}\n</teammate-message>')
    assert calls(response) == [("SendMessage", {"to": "team-lead", "message": {
        "type": "shutdown_response", "request_id": "shutdown-1764478958123@fixer", "approve": True}})]


def _docs_example() -> str:
    text = DOCS.read_text(encoding="utf-8")
    example = text[text.index("## Worked example"):]
    return example.split("```toml\n", 1)[1].split("```", 1)[0]


def test_the_worked_example_in_the_docs_behaves_as_documented(tmp_path: Path) -> None:
    path = tmp_path / "fixer.toml"
    path.write_text(_docs_example(), encoding="utf-8")
    chat = Chat(ScriptedProvider(path, variables={"agent_name": "fixer", "team": "demo"}))
    assert calls(chat.say("fix the bug in calc.py")) == [("Edit", {
        "file_path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"})]
    assert calls(chat.results("error")) == [("Bash", {"command": "python -m pytest -q"})]
    third = chat.results("1 passed")
    assert text_of(third) == "fixer: fixed calc.py; tests ran."
    assert calls(third) == [("SendMessage", {"to": "team-lead", "message": "Fixed calc.py (team demo).",
                                             "summary": "fixed calc.py"})]
    assert text_of(chat.results("Message sent to team-lead")) == 'fixer got: "Message sent to team-lead"'
    assert text_of(chat.say("hello")).startswith("Hello, I am fixer.")
    assert text_of(chat.say("hello")) == 'fixer got: "hello"'
    frame = json.dumps({"type": "shutdown_request", "requestId": "shutdown-1@fixer", "from": "team-lead"})
    assert calls(chat.say(frame)) == [("SendMessage", {"to": "team-lead", "message": {
        "type": "shutdown_response", "request_id": "shutdown-1@fixer", "approve": True}})]


def test_per_call_work_does_not_grow_with_the_conversation() -> None:
    """The input estimate measures each message once: call 2,000 costs what call 10 costs."""
    provider = ScriptedProvider()
    messages: list[Message] = []

    def call() -> tuple[int, int]:
        before = provider._tally.measured, provider._tally.visited
        messages.append(Message.user_text(f"message {len(messages)}"))
        reply = provider.complete(ModelRequest(messages=messages))
        messages.append(reply.message())
        return provider._tally.measured - before[0], provider._tally.visited - before[1]

    costs = [call() for _ in range(1000)]
    # the new prompt and the last reply, nothing more: neither measured again nor even looked up
    assert costs[5:10] == [(2, 2)] * 5 and costs[-5:] == [(2, 2)] * 5
    whole = ModelRequest(messages=messages)
    assert ScriptedProvider().complete(whole).usage.input_tokens == approx_tokens(request_text(whole))
    assert provider.complete(whole).usage.input_tokens == approx_tokens(request_text(whole)), "the running sum drifted"
    shorter = ModelRequest(messages=messages[:10])  # a compacted conversation: a new list, not a continuation
    assert provider.complete(shorter).usage.input_tokens == approx_tokens(request_text(shorter))


PING_PONG = {"rules": [{"match": r"ping (?P<n>\d+)", "on": "prompt", "steps": [
    {"tool_calls": [{"name": "SendMessage", "input": {"to": "team-lead", "message": "pong {n}"}}]},
    {"text": "answered {n}"}]}]}


def _results_with_arrivals(chat: Chat, content: str, *arrivals: str) -> ModelResponse:
    """Tool results followed by messages that arrived during the turn, as the agent loop sends them."""
    blocks: list[ContentBlock] = [ToolResultBlock(tool_use_id=u.id, content=content)
                                  for u in chat.messages[-1].tool_uses()]
    blocks += [TextBlock(text=f'<teammate-message teammate_id="team-lead">{a}</teammate-message>') for a in arrivals]
    return chat._call(Message(role="user", content=blocks))


def test_a_message_that_arrives_mid_turn_is_answered_in_that_turn() -> None:
    """Left unanswered, a ping sent while the teammate finished the last one waited for ever (the benchmark hung)."""
    chat = Chat(scripted(PING_PONG))
    assert calls(chat.say("ping 1")) == [("SendMessage", {"to": "team-lead", "message": "pong 1"})]
    ended_then_went_on = _results_with_arrivals(chat, "Message sent to team-lead.", "ping 2")
    assert text_of(ended_then_went_on) == "answered 1"  # the run in play finishes...
    assert calls(ended_then_went_on) == [("SendMessage", {"to": "team-lead", "message": "pong 2"})]  # ...and 2 starts
    assert ended_then_went_on.stop_reason == "tool_use"
    last = chat.results("Message sent to team-lead.")
    assert (text_of(last), calls(last), last.stop_reason) == ("answered 2", [], "end_turn")


def test_arrivals_wait_for_the_run_in_play_to_end() -> None:
    chat = Chat(scripted({"rules": [
        {"match": "build", "on": "prompt", "steps": [
            {"tool_calls": [{"name": "Bash", "input": {"command": "make"}}]},
            {"tool_calls": [{"name": "Bash", "input": {"command": "make test"}}]},
            {"text": "built"}]},
        *PING_PONG["rules"]]}))
    chat.say("build")
    going_on = _results_with_arrivals(chat, "ok", "ping 7")
    assert calls(going_on) == [("Bash", {"command": "make test"})]  # the run's own next step, the ping kept
    ending = chat.results("ok")
    assert text_of(ending) == "built"
    assert calls(ending) == [("SendMessage", {"to": "team-lead", "message": "pong 7"})]


def test_only_arrivals_start_a_rule_not_what_a_tool_printed() -> None:
    chat = Chat(scripted(PING_PONG))
    chat.say("ping 1")
    ending = chat.results("ping 99 was printed by a command")
    assert (text_of(ending), calls(ending), ending.stop_reason) == ("answered 1", [], "end_turn")
