"""Skills end to end: the catalog, the Skill tool, slash commands and ``context: fork``.

Model-side behaviour runs over the real SDK against the fake Messages API
(which records every request body; ``_echo`` makes it answer what the last
body asks); exact stdout checks run the installed `swarm run` on the offline
scripted model, whose rule answers what a skill body tells it to ("Respond
with exactly: ...").
"""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
from pathlib import Path
from typing import Any

import pytest

from swarm.agent.definitions import load_agents
from swarm.agent.headless import MainOptions, MainSession, run_headless
from swarm.agent.limits import Limits
from swarm.agent.skills import load_skills
from swarm.agent.transcript import Transcript
from swarm.models.anthropic_provider import AnthropicProvider
from swarm.models.messages import TextBlock
from swarm.models.retry_policy import RetryPolicy
from tests.fakes import (
    FakeAnthropicServer,
    RecordedRequest,
    ScriptedReply,
    message_json,
    text_reply,
    tool_use_reply,
)
from tests.forked import run_swarm

ECHO_RULE = r"Respond with exactly: (?P<answer>.*?)[ \t]*(?:\n|$)"
ECHO = f"""
[[rules]]
match = '{ECHO_RULE}'
text = "{{answer}}"
"""


def _skill(root: Path, name: str, body: str, **front: str) -> Path:
    folder = root / ".claude" / "skills" / name
    folder.mkdir(parents=True)
    meta = "".join(f"{key}: {value}\n" for key, value in {"description": f"the {name} skill", **front}.items())
    (folder / "SKILL.md").write_text(f"---\nname: {name}\n{meta}---\n{body}\n")
    return folder


def _names(count: int) -> list[str]:
    return [f"sk-{secrets.token_hex(3)}" for _ in range(count)]


HAIKU = "claude-haiku-test"
"""What the alias ``haiku`` means in these tests (``SWARM_MODEL_HAIKU``)."""


def _env(api: FakeAnthropicServer) -> dict[str, str]:
    return {"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": api.base_url,
            "CLAUDE_CONFIG_DIR": os.environ["CLAUDE_CONFIG_DIR"], "SWARM_MODEL_HAIKU": HAIKU}


def _provider(env: dict[str, str], model: str) -> AnthropicProvider:
    return AnthropicProvider(model=model, env=env, retry=RetryPolicy(max_retries=0), timeout=10)


def _main(api: FakeAnthropicServer, cwd: Path) -> MainOptions:
    """The main agent's skills and definitions in ``cwd``; every agent talks to the fake API."""
    env = _env(api)
    return MainOptions(catalog=load_agents(cwd, env=env), env=env, make_provider=lambda model: _provider(env, model),
                     agents_dir=cwd / ".agents", skills=load_skills(cwd, env=env))


def _run(api: FakeAnthropicServer, cwd: Path, prompt: str) -> str:
    parent = _provider(_env(api), "claude-parent")
    try:
        return run_headless(prompt, parent, cwd=cwd, limits=Limits(max_turns=10), main=_main(api, cwd)).text
    finally:
        parent.close()


def _results(request: RecordedRequest) -> list[dict[str, Any]]:
    """The tool results a request answers (in its last message)."""
    return [b for b in request.body["messages"][-1]["content"] if b["type"] == "tool_result"]


def _swarm_run(cwd: Path, prompt: str, *options: str) -> subprocess.CompletedProcess[str]:
    book = cwd / "echo.toml"
    book.write_text(ECHO)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    return run_swarm(["run", "-p", prompt, "--playbook", str(book), *options], cwd=cwd, env=env, timeout=60)


def _echo(body: dict[str, Any]) -> dict[str, Any]:
    """A Messages API answer that does what the request's last message asks last ("Respond with exactly: ...")."""
    asked = re.findall(ECHO_RULE, body["messages"][-1]["content"][-1]["text"])
    return message_json([{"type": "text", "text": asked[-1] if asked else "(nothing asked)"}])


def test_the_first_request_lists_every_invocable_skill_and_no_body(api: FakeAnthropicServer,
                                                                   tmp_path: Path) -> None:
    names = _names(4)
    bodies = {name: f"SECRET-BODY-{name}" for name in names}
    for name in names[:3]:
        _skill(tmp_path, name, bodies[name])
    _skill(tmp_path, names[3], bodies[names[3]], **{"disable-model-invocation": "true"})
    api.enqueue(text_reply("three skills"))
    _run(api, tmp_path, "how many skills do you have?")
    first = json.dumps(api.requests[0].body)
    for name in names[:3]:
        assert f"- {name}: the {name} skill" in first
    assert names[3] not in first
    assert not any(body in first for body in bodies.values())


def test_a_model_invoked_skill_returns_its_body_and_a_decoy_never_leaves(api: FakeAnthropicServer,
                                                                        tmp_path: Path) -> None:
    wanted, decoy = _names(2)
    folder = _skill(tmp_path, wanted, "Step one: BODY-OF-WANTED with $ARGUMENTS")
    _skill(tmp_path, decoy, "BODY-OF-DECOY")
    api.enqueue(tool_use_reply("Skill", {"skill": wanted, "args": "7 8"}, tool_id="toolu_s"), text_reply("done"))
    assert _run(api, tmp_path, "do the thing") == "done"
    [result] = [b for b in api.requests[1].body["messages"][-1]["content"] if b["type"] == "tool_result"]
    assert result["content"] == f"Base directory for this skill: {folder}\n\nStep one: BODY-OF-WANTED with 7 8"
    assert not any("BODY-OF-DECOY" in json.dumps(r.body) for r in api.requests)


def test_a_forked_skill_runs_alone_in_a_subagent_and_only_its_answer_comes_back(api: FakeAnthropicServer,
                                                                                tmp_path: Path) -> None:
    apple, decoy = _names(2)
    _skill(tmp_path, apple, "Respond with exactly one word: blueberry", context="fork",
           description="Use this skill when the user asks about the on-call rotation.")
    _skill(tmp_path, decoy, "BODY-OF-DECOY")
    question = "Who is on the on-call rotation right now?"
    api.enqueue(tool_use_reply("Skill", {"skill": apple}, tool_id="toolu_s"), text_reply("blueberry"),
                text_reply("The on-call engineer is blueberry."))
    assert _run(api, tmp_path, question) == "The on-call engineer is blueberry."
    parent, child, back = api.requests
    [only] = child.body["messages"]
    assert only["role"] == "user" and [b["type"] for b in only["content"]] == ["text"]
    assert only["content"][0]["text"].endswith("Respond with exactly one word: blueberry")
    assert question not in json.dumps(child.body)
    [result] = [b for b in back.body["messages"][-1]["content"] if b["type"] == "tool_result"]
    assert result["content"] == f"Skill {apple} ran in a separate context and returned: blueberry"
    assert "Respond with exactly one word" not in json.dumps(back.body["messages"])
    assert not any("BODY-OF-DECOY" in json.dumps(r.body) for r in api.requests)


def test_a_slash_command_runs_a_bundled_script_from_the_skill_directory(api: FakeAnthropicServer,
                                                                        tmp_path: Path) -> None:
    name = _names(1)[0]
    folder = _skill(tmp_path, name, "Run `sh scripts/checksum.sh` from the base directory and answer with its output.")
    (folder / "scripts").mkdir()
    (folder / "data.txt").write_text("some data\n")
    (folder / "scripts" / "checksum.sh").write_text("cksum < data.txt | cut -d' ' -f1\n")
    expected = subprocess.run(["sh", "scripts/checksum.sh"], cwd=folder, capture_output=True, text=True,
                              check=True).stdout
    api.enqueue(tool_use_reply("Bash", {"command": f"cd {folder} && sh scripts/checksum.sh"}, tool_id="toolu_b"),
                text_reply(expected.strip()))
    assert _run(api, tmp_path, f"/{name}") == expected.strip()
    first = api.requests[0].body["messages"][0]["content"][-1]["text"]
    assert first.startswith(f"Base directory for this skill: {folder}")  # expanded before the first model call
    [result] = [b for b in api.requests[1].body["messages"][-1]["content"] if b["type"] == "tool_result"]
    assert result["content"] == expected.strip()  # the script's output, as Bash reports it


@pytest.mark.parametrize(("prompt", "expected"), [
    ("/{a}", "A says hello"),
    ("/{a} 4127", "A says hello 4127"),
    ("/{b} w0 w1", "w1 w0"),
])
def test_slash_commands_print_exactly_what_the_skill_asks(tmp_path: Path, prompt: str, expected: str) -> None:
    a, b = _names(2)
    _skill(tmp_path, a, "Respond with exactly: A says hello $ARGUMENTS")
    _skill(tmp_path, b, "Respond with exactly: $1 $0")
    done = _swarm_run(tmp_path, prompt.format(a=a, b=b))
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{expected}\n"


def test_a_stack_of_slash_commands_shares_the_arguments(tmp_path: Path) -> None:
    a, b = _names(2)
    _skill(tmp_path, a, "First part: $ARGUMENTS.")
    _skill(tmp_path, b, "Respond with exactly: both got $0")
    done = _swarm_run(tmp_path, f"/{a} /{b} 4127")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "both got 4127\n"


@pytest.mark.parametrize(("prompt", "sent", "expected"), [
    ("/{a}", [("a", "Respond with exactly: A says hello ")], "A says hello"),
    ("/{a} 4127", [("a", "Respond with exactly: A says hello 4127")], "A says hello 4127"),
    ("/{b} w0 w1", [("b", "Respond with exactly: w1 w0")], "w1 w0"),
    ("/{b} /{a} 4127", [("b", "Respond with exactly:  4127"), ("a", "Respond with exactly: A says hello 4127")],
     "A says hello 4127"),
])
def test_slash_commands_over_the_sdk_send_only_the_invoked_bodies(
        api: FakeAnthropicServer, tmp_path: Path, prompt: str, sent: list[tuple[str, str]], expected: str) -> None:
    a, b, decoy = _names(3)
    folders = {"a": _skill(tmp_path, a, "Respond with exactly: A says hello $ARGUMENTS"),
               "b": _skill(tmp_path, b, "Respond with exactly: $1 $0")}
    _skill(tmp_path, decoy, "Respond with exactly: BODY-OF-DECOY")
    api.otherwise(ScriptedReply(200, _echo))  # answers what the last body asks, as the scripted echo does
    assert _run(api, tmp_path, prompt.format(a=a, b=b)) == expected
    [request] = api.requests
    assert request.body["messages"][-1]["content"][-1]["text"] == "\n\n".join(
        f"Base directory for this skill: {folders[key]}\n\n{body}" for key, body in sent)
    assert "BODY-OF-DECOY" not in json.dumps(request.body)
    assert f"- {decoy}: the {decoy} skill" in json.dumps(request.body["messages"][0])  # listed, never sent
    assert decoy not in json.dumps(request.body["tools"])  # in an attachment, not in the Skill tool's text


def test_a_fork_started_by_a_slash_command_is_linked_from_the_transcript(tmp_path: Path) -> None:
    name = _names(1)[0]
    _skill(tmp_path, name, "Respond with exactly: forked $0", context="fork")
    transcript = tmp_path / "run.jsonl"
    done = _swarm_run(tmp_path, f"/{name} 4127", "--transcript", str(transcript))
    assert done.returncode == 0, done.stderr
    [link] = Transcript(transcript).events("subagent")
    assert (link["agent_type"], link["description"]) == ("general-purpose", f"skill {name}")
    child = Path(link["transcript"])
    assert child.parent == tmp_path / "run.subagents"
    assert Transcript(child).messages()[-1].text() == "forked 4127"
    first = Transcript(transcript).messages()[0].content[-1]
    assert isinstance(first, TextBlock)
    assert first.text == f"Skill {name} ran in a separate context and returned: forked 4127"


def test_an_unknown_slash_name_stays_text_with_a_note(tmp_path: Path) -> None:
    done = _swarm_run(tmp_path, "/no-such-skill Respond with exactly: plain")
    assert done.returncode == 0 and done.stdout == "plain\n"
    assert "/no-such-skill is not a skill" in done.stderr


def test_an_unknown_skill_is_a_tool_error_naming_only_the_skills_the_model_may_use(
        api: FakeAnthropicServer, tmp_path: Path) -> None:
    shown, hidden = _names(2)
    _skill(tmp_path, shown, "BODY-OF-SHOWN")
    _skill(tmp_path, hidden, "BODY-OF-HIDDEN", **{"disable-model-invocation": "true"})
    api.enqueue(tool_use_reply("Skill", {"skill": "no-such-skill"}, tool_id="toolu_1"),
                tool_use_reply("Skill", {"skill": hidden}, tool_id="toolu_2"), text_reply("gave up"))
    assert _run(api, tmp_path, "use a skill") == "gave up"
    [unknown], [manual] = _results(api.requests[1]), _results(api.requests[2])
    assert unknown["is_error"] and unknown["content"] == f"unknown skill 'no-such-skill'; available: {shown}"
    assert manual["is_error"] and manual["content"] == f"unknown skill {hidden!r}; available: {shown}"
    assert not any("BODY-OF-" in json.dumps(r.body) for r in api.requests)


def test_a_skills_model_answers_for_the_rest_of_the_turn_and_the_next_turn_is_back(
        api: FakeAnthropicServer, tmp_path: Path) -> None:
    name = _names(1)[0]
    _skill(tmp_path, name, "Answer in one word.", model="haiku")
    api.enqueue(tool_use_reply("Skill", {"skill": name}, tool_id="toolu_s"),
                tool_use_reply("Bash", {"command": "true"}, tool_id="toolu_b"), text_reply("first"),
                text_reply("second"))
    parent = _provider(_env(api), "claude-parent")
    session = MainSession(parent, cwd=tmp_path, limits=Limits(max_turns=10), main=_main(api, tmp_path))
    try:
        assert session.start("go").text == "first"
        assert session.turn("again").text == "second"
    finally:
        session.close()
        parent.close()
    assert [r.body["model"] for r in api.requests] == ["claude-parent", HAIKU, HAIKU, "claude-parent"]


def test_a_subagent_that_uses_a_skill_answers_with_the_skills_model_for_the_rest_of_its_run(
        api: FakeAnthropicServer, tmp_path: Path) -> None:
    name = _names(1)[0]
    _skill(tmp_path, name, "Answer in one word.", model="haiku")
    api.enqueue(tool_use_reply("Agent", {"description": "job", "prompt": "use the skill",
                                         "subagent_type": "general-purpose"}, tool_id="toolu_a"),
                tool_use_reply("Skill", {"skill": name}, tool_id="toolu_s"),
                tool_use_reply("Bash", {"command": "true"}, tool_id="toolu_b"), text_reply("child done"),
                text_reply("parent done"))
    assert _run(api, tmp_path, "delegate") == "parent done"
    assert [r.body["model"] for r in api.requests] == ["claude-parent", "claude-parent", HAIKU, HAIKU,
                                                       "claude-parent"]
    assert "child done" in _results(api.requests[-1])[0]["content"]


def test_a_forked_skill_runs_as_the_agent_definition_it_names(api: FakeAnthropicServer, tmp_path: Path) -> None:
    agents = tmp_path / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "auditor.md").write_text("---\nname: auditor\ndescription: audits code\ntools: Read, Grep\n"
                                       "model: haiku\n---\nYou are the AUDITOR-PROMPT.\n")
    name = _names(1)[0]
    _skill(tmp_path, name, "Audit the code.", context="fork", agent="auditor")
    api.enqueue(tool_use_reply("Skill", {"skill": name}, tool_id="toolu_s"), text_reply("audited"),
                text_reply("done"))
    assert _run(api, tmp_path, "audit it") == "done"
    parent, child, back = api.requests
    assert "AUDITOR-PROMPT" in json.dumps(child.body["system"]) and "AUDITOR-PROMPT" not in json.dumps(parent.body)
    assert [t["name"] for t in child.body["tools"]] == ["Read", "Grep"]
    assert (parent.body["model"], child.body["model"]) == ("claude-parent", HAIKU)
    assert _results(back)[0]["content"] == f"Skill {name} ran in a separate context and returned: audited"
