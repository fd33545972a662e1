"""The Agent tool over the real SDK: what each kind of child sends, and what comes back to the parent.

The parent and its children talk to the fake Messages API on loopback; the
requests it records are exactly what the API would have received.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from dataclasses import replace
from pathlib import Path

import psutil
import pytest

from swarm.agent.compaction import SUMMARY_INSTRUCTION
from swarm.agent.definitions import load_agents
from swarm.agent.headless import MainOptions, run_headless
from swarm.agent.limits import Limits
from swarm.agent.skills import load_skills
from swarm.agent.subagents import FORK_PLACEHOLDER, FORK_REFUSED, FORK_TAG
from swarm.agent.transcript import Transcript
from swarm.models.aliases import expand_alias
from tests.agent.subagent_helpers import (
    PARENT,
    api_env,
    last_results,
    provider_for,
    run_main,
    tool_names,
)
from tests.backends.helpers import retry_until
from tests.fakes import FakeAnthropicServer, error_reply, text_reply, tool_use_reply, usage_json
from tests.fakes.anthropic_server import conversation_error, unmarked


def test_an_explore_child_gets_its_definition_read_only_tools_and_the_parents_model(
        api: FakeAnthropicServer, tmp_path: Path) -> None:
    api.enqueue(tool_use_reply("Agent", {"description": "look around", "prompt": "find where x is defined",
                                         "subagent_type": "Explore"}, tool_id="toolu_a"),
                text_reply("x is defined in a.py"), text_reply("parent done"))
    result = run_main(api, tmp_path)
    assert result.text == "parent done"
    parent, child, back = api.requests
    assert {"Write", "Edit"} & set(tool_names(child)) == set()
    assert tool_names(child) == ["Read", "Bash", "Glob", "Grep"]
    assert "Agent" in tool_names(parent) and "TaskOutput" in tool_names(parent)
    assert child.body["model"] == "claude-parent"  # inherit
    assert "file-search specialist" in json.dumps(child.body["system"])
    first = child.body["messages"][0]["content"]
    assert first[0]["text"].startswith("<system-reminder>") and first[1]["text"] == "find where x is defined"
    [answer] = last_results(back)
    assert answer["content"] == "x is defined in a.py"  # one-shot: no agentId, no SendMessage hint, no <usage>


def test_a_custom_definition_sends_only_its_tools_and_the_mapped_model(
        api: FakeAnthropicServer, tmp_path: Path) -> None:
    agents = json.dumps({"reader": {"description": "reads files", "prompt": "You only read.", "tools": ["Read"],
                                    "model": "haiku"}})
    api.enqueue(tool_use_reply("Agent", {"description": "read it", "prompt": "read a.py",
                                         "subagent_type": "reader"}, tool_id="toolu_a"),
                text_reply("read"), text_reply("done"))
    run_main(api, tmp_path, agents_json=agents, SWARM_MODEL_HAIKU="claude-haiku-test")
    child = api.requests[1]
    assert tool_names(child) == ["Read"]
    assert child.body["model"] == "claude-haiku-test" == expand_alias("haiku", {"SWARM_MODEL_HAIKU": "claude-haiku-test"})
    assert "You only read." in json.dumps(child.body["system"])


def test_an_unknown_type_is_a_tool_error_listing_the_available_ones(api: FakeAnthropicServer,
                                                                   tmp_path: Path) -> None:
    api.enqueue(tool_use_reply("Agent", {"description": "x", "prompt": "y", "subagent_type": "Nope"}),
                text_reply("ok"))
    run_main(api, tmp_path)
    [error] = last_results(api.requests[1])
    assert error["is_error"] and "'Nope' is unknown" in error["content"] and "Explore" in error["content"]


def test_forks_share_the_parents_request_up_to_their_directive_and_cannot_fork_again(
        api: FakeAnthropicServer, tmp_path: Path) -> None:
    both = tool_use_reply("Agent", {"description": "part a", "prompt": "DO PART A"}, tool_id="toolu_a")
    both.body["content"].append({"type": "tool_use", "id": "toolu_b", "name": "Agent",
                                 "input": {"description": "part b", "prompt": "DO PART B"}})
    api.enqueue(both,
                tool_use_reply("Agent", {"description": "again", "prompt": "fork more"}, tool_id="toolu_again"),
                text_reply("Scope: part a\nResult: done a"),
                text_reply("Scope: part b\nResult: done b"),
                text_reply("both parts done"))
    result = run_main(api, tmp_path)
    assert result.text == "both parts done"
    parent, fork_a, fork_a_again, fork_b, back = (replace(r, body=unmarked(r.body)) for r in api.requests)
    for fork in (fork_a, fork_b):
        assert fork.body["system"] == parent.body["system"] and fork.body["tools"] == parent.body["tools"]
        assert fork.body["model"] == parent.body["model"]
        assert fork.body["messages"][:-2] == parent.body["messages"]
        assert fork.body["messages"][-2]["content"] == both.body["content"]
    directive_a, directive_b = (f.body["messages"][-1]["content"] for f in (fork_a, fork_b))
    assert directive_a[:2] == directive_b[:2] == [
        {"type": "tool_result", "tool_use_id": "toolu_a", "content": FORK_PLACEHOLDER, "is_error": False},
        {"type": "tool_result", "tool_use_id": "toolu_b", "content": FORK_PLACEHOLDER, "is_error": False}]
    assert directive_a[2]["text"].startswith(f"<{FORK_TAG}>") and directive_a[2]["text"].endswith("DO PART A")
    assert directive_b[2]["text"].replace("DO PART B", "DO PART A") == directive_a[2]["text"]
    [refused] = last_results(fork_a_again)
    assert refused["is_error"] and refused["content"] == FORK_REFUSED
    results = {r["tool_use_id"]: r["content"] for r in last_results(back)}
    assert "done a" in results["toolu_a"] and "done b" in results["toolu_b"]


def test_with_forks_off_an_omitted_type_means_general_purpose(api: FakeAnthropicServer, tmp_path: Path) -> None:
    api.enqueue(tool_use_reply("Agent", {"description": "x", "prompt": "do it"}), text_reply("did it"),
                text_reply("ok"))
    run_main(api, tmp_path, SWARM_FORK_SUBAGENT="0")
    child = api.requests[1]
    assert "general-purpose agent" in json.dumps(child.body["system"])
    assert "Agent" not in tool_names(child) and len(child.body["messages"]) == 1


def test_a_background_child_reports_once_at_the_parents_next_model_call(api: FakeAnthropicServer,
                                                                       tmp_path: Path) -> None:
    api.enqueue(tool_use_reply("Agent", {"description": "bg job", "prompt": "count the files",
                                         "subagent_type": "general-purpose", "run_in_background": True}),
                text_reply("waiting for the count"), text_reply("the count is in"), when=PARENT)
    api.enqueue(text_reply("COUNT IS 42"), when="count the files")
    result = run_main(api, tmp_path)
    assert result.text == "the count is in"
    parents = [r for r in api.requests if PARENT in json.dumps(r.body)]
    assert len(parents) == 3
    launched = last_results(parents[1])[0]["content"]
    assert "Async agent launched" in launched and "output_file:" in launched
    final = parents[2].body["messages"]
    notices = [b["text"] for m in final if m["role"] == "user" for b in m["content"]
               if b.get("type") == "text" and "<task-notification>" in b["text"]]
    assert len(notices) == 1 and "COUNT IS 42" in notices[0] and "<status>completed</status>" in notices[0]
    assert conversation_error(final) is None


@pytest.mark.parametrize("key", ["task_id", "shell_id"])  # shell_id: Claude Code's deprecated name, still sent
def test_task_stop_kills_a_background_child_and_its_state_says_so(api: FakeAnthropicServer,
                                                                  tmp_path: Path, key: str) -> None:
    api.enqueue(tool_use_reply("Agent", {"description": "slow job", "prompt": "SLOW TASK", "name": "slowpoke",
                                         "subagent_type": "general-purpose", "run_in_background": True}),
                tool_use_reply("TaskStop", {key: "slowpoke"}, tool_id="toolu_stop"),
                tool_use_reply("TaskOutput", {"task_id": "slowpoke", "block": False}, tool_id="toolu_out"),
                text_reply("stopped it"), text_reply("noted the stop"), when=PARENT)
    slow = tool_use_reply("Bash", {"command": "echo never"}, tool_id="toolu_never")
    api.enqueue(replace(slow, delay=1.0), when="SLOW TASK")  # still thinking when the parent stops it
    run_main(api, tmp_path)
    parents = [r for r in api.requests if PARENT in json.dumps(r.body)]
    assert "stopped (killed)" in last_results(parents[2])[0]["content"]
    assert "status: killed" in last_results(parents[3])[0]["content"]
    final = json.dumps(parents[-1].body["messages"][-1])
    assert "<status>killed</status>" in final
    children = [r for r in api.requests if "SLOW TASK" in json.dumps(r.body) and PARENT not in json.dumps(r.body)]
    assert len(children) <= 1  # stopped before its next model call (or before its first): the Bash never ran
    assert not any("toolu_never" in json.dumps(last_results(r)) for r in api.requests)


def test_task_stop_kills_the_command_a_background_child_is_running(api: FakeAnthropicServer, tmp_path: Path) -> None:
    """TaskStop stops the child now, as an interrupt does: its running command is killed (it used to run on,
    the task already called killed, until the command ended by itself)."""
    started = threading.Event()
    api.enqueue(tool_use_reply("Agent", {"description": "slow job", "prompt": "LONG COMMAND", "name": "sleeper",
                                         "subagent_type": "general-purpose", "run_in_background": True}),
                replace(tool_use_reply("TaskStop", {"task_id": "sleeper"}, tool_id="toolu_stop"), gate=started),
                text_reply("stopped it"), text_reply("noted the stop"), when=PARENT)
    api.enqueue(tool_use_reply("Bash", {"command": "echo $$ > pid.tmp && mv pid.tmp pid && exec sleep 60"},
                               tool_id="toolu_sleep"), when="LONG COMMAND")
    pid_file = tmp_path / "pid"
    threading.Thread(target=lambda: (retry_until(pid_file.exists, 30, what="the command"), started.set()),
                     daemon=True).start()  # the TaskStop answer waits until the command runs
    began = time.monotonic()
    run_main(api, tmp_path)
    assert time.monotonic() - began < 20  # not the 60 s of the command
    assert not _running(int(pid_file.read_text()))  # killed, not left running
    parents = [r for r in api.requests if PARENT in json.dumps(r.body)]
    assert "stopped (killed)" in last_results(parents[2])[0]["content"]


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_task_stop_without_an_id_is_an_error_the_model_can_fix(api: FakeAnthropicServer, tmp_path: Path) -> None:
    api.enqueue(tool_use_reply("TaskStop", {}, tool_id="toolu_stop"), text_reply("ok"))
    run_main(api, tmp_path)
    [error] = last_results(api.requests[1])
    assert error["is_error"] and "TaskStop needs task_id" in error["content"]


def test_a_childs_failure_is_a_tool_error_and_the_parent_goes_on(api: FakeAnthropicServer, tmp_path: Path) -> None:
    api.enqueue(tool_use_reply("Agent", {"description": "x", "prompt": "break", "subagent_type": "Explore"}),
                error_reply(400, "invalid_request_error", "bad request for the child"),
                text_reply("carried on"))
    result = run_main(api, tmp_path)
    assert result.ok and result.text == "carried on"
    [error] = last_results(api.requests[2])
    assert error["is_error"] and "subagent failed" in error["content"]


def test_subagent_transcripts_are_linked_from_the_parents(api: FakeAnthropicServer, tmp_path: Path) -> None:
    api.enqueue(tool_use_reply("Agent", {"description": "look", "prompt": "look", "subagent_type": "Explore"}),
                text_reply("seen"), text_reply("done"))
    run_main(api, tmp_path)
    [link] = Transcript(tmp_path / "main.jsonl").events("subagent")
    child = Transcript(Path(link["transcript"]))
    assert [m.role for m in child.messages()] == ["user", "assistant"]
    assert Path(link["transcript"]).parent == tmp_path / "agents"


@pytest.mark.parametrize("field", ["team_name"])
def test_a_teammate_spawn_from_swarm_run_says_what_is_missing(api: FakeAnthropicServer, tmp_path: Path,
                                                              field: str) -> None:
    api.enqueue(tool_use_reply("Agent", {"description": "x", "prompt": "y", "name": "bob", field: "t"}),
                text_reply("ok"))
    run_main(api, tmp_path)
    [error] = last_results(api.requests[1])
    assert error["is_error"] and "swarm spawn" in error["content"]


def _repo(path: Path) -> Path:
    path.mkdir()
    for args in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "start"]):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(path), *args], check=True)
    return path


@pytest.mark.parametrize("changes", [True, False])
def test_isolation_worktree_runs_the_child_in_a_fresh_worktree(api: FakeAnthropicServer, tmp_path: Path,
                                                              changes: bool) -> None:
    repo = _repo(tmp_path / "repo")
    api.enqueue(tool_use_reply("Agent", {"description": "isolated", "prompt": "ISOLATED JOB",
                                         "subagent_type": "general-purpose", "isolation": "worktree"}))
    if changes:
        api.enqueue(tool_use_reply("Write", {"file_path": "new.txt", "content": "hi\n"}, tool_id="toolu_w"))
    api.enqueue(text_reply("child done"), text_reply("parent done"))
    run_main(api, repo)
    child_first = api.requests[1].body["messages"][0]["content"]
    assert not (repo / "new.txt").exists()  # the main checkout is untouched either way
    [answer] = last_results(api.requests[-1])
    if changes:
        assert "kept worktree" in answer["content"] and "swarm/agent/" in answer["content"]
        kept = [p for p in (repo / ".swarm" / "agent-worktrees").iterdir()]
        assert [(p / "new.txt").read_text() for p in kept] == ["hi\n"]
    else:
        assert "kept worktree" not in answer["content"]
        assert not any((repo / ".swarm" / "agent-worktrees").glob("*"))
    assert "ISOLATED JOB" in json.dumps(child_first)


def test_a_finished_named_background_agent_resumes_when_the_parent_messages_it(api: FakeAnthropicServer,
                                                                                tmp_path: Path) -> None:
    api.enqueue(tool_use_reply("Agent", {"description": "helper", "prompt": "FIRST JOB", "name": "helper",
                                         "subagent_type": "general-purpose", "run_in_background": True}),
                text_reply("waiting"),
                tool_use_reply("SendMessage", {"to": "helper", "message": "SECOND JOB"}, tool_id="toolu_msg"),
                text_reply("waiting again"), text_reply("all done"), when=PARENT)
    api.enqueue(text_reply("first done"), text_reply("second done"), when="JOB")
    result = run_main(api, tmp_path)
    assert result.text == "all done"
    parents = [r for r in api.requests if PARENT in json.dumps(r.body)]
    children = [r for r in api.requests if PARENT not in json.dumps(r.body)]
    assert len(parents) == 5 and len(children) == 2
    assert "resumed in the background" in last_results(parents[3])[0]["content"]
    resumed = children[1].body["messages"]
    assert [m["role"] for m in resumed] == ["user", "assistant", "user"]
    assert "FIRST JOB" in json.dumps(resumed[0]) and resumed[1]["content"][0]["text"] == "first done"
    assert "SECOND JOB" in json.dumps(resumed[2])
    final = json.dumps(parents[-1].body["messages"])
    assert final.count("<task-notification>") == 2 and "second done" in final


def test_sendmessage_to_no_subagent_outside_a_team_says_what_it_reaches(api: FakeAnthropicServer,
                                                                        tmp_path: Path) -> None:
    api.enqueue(tool_use_reply("SendMessage", {"to": "ghost", "message": "hi"}), text_reply("ok"))
    run_main(api, tmp_path)
    [error] = last_results(api.requests[1])
    assert error["is_error"] and "no subagent named 'ghost'" in error["content"]


def test_a_fork_drops_calls_in_the_inherited_history_that_never_got_results(tmp_path: Path) -> None:
    from swarm.agent.background import BackgroundAgents, QueueSink
    from swarm.agent.conversation import Conversation
    from swarm.agent.loop import AgentSpec, RunningAgent
    from swarm.agent.subagents import AgentHost, plan_fork
    from swarm.agent.tool_api.context import AgentIdentity, ToolContext
    from swarm.models.messages import Message, TextBlock, ToolUseBlock
    from swarm.models.scripted import ScriptedProvider

    history = [Message.user_text("go"),
               Message(role="assistant", content=[TextBlock(text="trying"), ToolUseBlock(id="lost", name="Bash")]),
               Message.user_text("(the result of 'lost' was never recorded)"),
               Message(role="assistant", content=[ToolUseBlock(id="fork_me", name="Agent",
                                                               input={"description": "d", "prompt": "p"})])]
    env = {"CLAUDE_CONFIG_DIR": os.environ["CLAUDE_CONFIG_DIR"]}
    host = AgentHost(catalog=load_agents(tmp_path, env=env), env=env, model="scripted",
                     make_provider=lambda m: ScriptedProvider(), make_tools=list, transcript_dir=tmp_path,
                     background=BackgroundAgents(QueueSink()))
    ctx = ToolContext(AgentIdentity(cwd=tmp_path))
    ctx.turn.running = RunningAgent(AgentSpec(provider=ScriptedProvider(), tools=[]), Conversation(messages=history))
    plan = plan_fork(host, ctx, "part one", "d")
    assert [b.type for b in plan.messages[1].content] == ["text"]  # the unanswered call is gone
    assert plan.messages[3] == history[3] and [b.type for b in plan.messages[4].content] == ["tool_result", "text"]
    assert history[1].tool_uses()  # the parent's own conversation is untouched


def test_a_definitions_skills_are_preloaded_into_the_childs_system_prompt(api: FakeAnthropicServer,
                                                                           tmp_path: Path) -> None:
    skill = tmp_path / ".claude" / "skills" / "lint"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\ndescription: lints\n---\nLINT-BODY: run ruff on what changed.\n")
    agents = json.dumps({"linter": {"description": "lints", "prompt": "You lint.", "skills": ["lint"]}})
    api.enqueue(tool_use_reply("Agent", {"description": "lint", "prompt": "lint it", "subagent_type": "linter"}),
                text_reply("linted"), text_reply("ok"))
    env = api_env(api)
    parent = provider_for(env, "claude-parent")
    main = MainOptions(catalog=load_agents(tmp_path, env=env, cli_json=agents), env=env,
                     make_provider=lambda model: provider_for(env, model), agents_dir=tmp_path / "agents",
                     skills=load_skills(tmp_path, env=env))
    try:
        run_headless("go", parent, cwd=tmp_path, limits=Limits(max_turns=5), main=main)
    finally:
        parent.close()
    parent_system, child_system = (json.dumps(r.body["system"]) for r in api.requests[:2])
    assert "LINT-BODY" in child_system and "LINT-BODY" not in parent_system


def test_a_fork_whose_conversation_was_compacted_still_cannot_fork(api: FakeAnthropicServer, tmp_path: Path) -> None:
    """Being a fork is a fact of the run, not text: compaction drops the boilerplate, the refusal stays."""
    near_full = usage_json(195_000, 10)  # over the default window's threshold: the fork compacts before its next call
    api.enqueue(tool_use_reply("Agent", {"description": "part a", "prompt": "DO PART A"}, tool_id="toolu_fork"),
                tool_use_reply("Bash", {"command": "true"}, tool_id="toolu_bash", usage=near_full),
                text_reply("SUMMARY: a forked worker on part a ran true"),
                tool_use_reply("Agent", {"description": "deeper", "prompt": "FORK AGAIN"}, tool_id="toolu_deeper"),
                text_reply("Scope: part a\nResult: done a"),
                text_reply("parent done"))
    result = run_main(api, tmp_path)
    assert result.text == "parent done"
    _, _, summary, compacted, after, back = api.requests
    assert summary.body["messages"][-1]["content"][-1]["text"] == SUMMARY_INSTRUCTION  # the fork compacted
    assert FORK_TAG not in json.dumps(compacted.body["messages"])  # the text that marked the fork is gone...
    [refused] = last_results(after)
    assert refused["is_error"] and refused["content"] == FORK_REFUSED  # ...and it is still refused
    assert "done a" in last_results(back)[0]["content"] and len(api.requests) == 6  # no grandchild ran
