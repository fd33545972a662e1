"""One test per Agent-tool and definition feature, each of which fails with the feature removed.

Over the real SDK against the fake Messages API: a definition's
``background``, ``isolation``, ``maxTurns`` and ``omitClaudeMd``; the call's
``model`` and ``cwd``; the totals a synchronous call returns; TaskOutput's
``block`` and recent activity; a background child's token count.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

from tests.agent.subagent_helpers import (
    PARENT,
    last_results,
    run_main,
    with_text,
    without_text,
)
from tests.fakes import FakeAnthropicServer, text_reply, tool_use_reply
from tests.fakes.anthropic_server import usage_json


def _agents(**definitions: dict[str, Any]) -> str:
    return json.dumps({name: {"description": name, "prompt": f"You are {name}.", **fields}
                       for name, fields in definitions.items()})


def _children(api: FakeAnthropicServer) -> list[Any]:
    return without_text(api, PARENT)


def test_a_definitions_background_runs_the_child_in_the_background(api: FakeAnthropicServer, tmp_path: Path) -> None:
    api.enqueue(tool_use_reply("Agent", {"description": "bg", "prompt": "BG JOB", "subagent_type": "bg"}),
                text_reply("launched"), text_reply("noted"), when=PARENT)
    api.enqueue(text_reply("BG RESULT"), when="BG JOB")
    run_main(api, tmp_path, agents_json=_agents(bg={"background": True}))
    parents = with_text(api, PARENT)
    [launched] = last_results(parents[1])
    assert "Async agent launched" in launched["content"]
    assert "<task-notification>" in json.dumps(parents[2].body["messages"][-1]) and "BG RESULT" in json.dumps(
        parents[2].body["messages"][-1])


def _repo(path: Path) -> Path:
    path.mkdir()
    for args in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "start"]):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(path), *args], check=True)
    return path


def test_a_definitions_isolation_runs_the_child_in_a_worktree(api: FakeAnthropicServer, tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo")
    api.enqueue(tool_use_reply("Agent", {"description": "iso", "prompt": "ISO JOB", "subagent_type": "iso"}),
                text_reply("parent done"), when=PARENT)
    api.enqueue(tool_use_reply("Write", {"file_path": "new.txt", "content": "hi\n"}), text_reply("wrote"),
                when="ISO JOB")
    run_main(api, repo, agents_json=_agents(iso={"isolation": "worktree"}))
    assert not (repo / "new.txt").exists()
    [kept] = list((repo / ".swarm" / "agent-worktrees").iterdir())
    assert (kept / "new.txt").read_text() == "hi\n"
    assert "kept worktree" in last_results(with_text(api, PARENT)[1])[0]["content"]


def test_the_calls_model_picks_the_childs_model(api: FakeAnthropicServer, tmp_path: Path) -> None:
    api.enqueue(tool_use_reply("Agent", {"description": "m", "prompt": "MODEL JOB", "subagent_type": "general-purpose",
                                         "model": "haiku"}), text_reply("done"), when=PARENT)
    api.enqueue(text_reply("ok"), when="MODEL JOB")
    run_main(api, tmp_path, SWARM_MODEL_HAIKU="claude-haiku-test")
    [child] = _children(api)
    assert child.body["model"] == "claude-haiku-test"


def test_the_calls_cwd_is_the_childs_working_directory(api: FakeAnthropicServer, tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    api.enqueue(tool_use_reply("Agent", {"description": "c", "prompt": "CWD JOB", "subagent_type": "general-purpose",
                                         "cwd": "sub"}), text_reply("done"), when=PARENT)
    api.enqueue(tool_use_reply("Write", {"file_path": "here.txt", "content": "x"}), text_reply("ok"), when="CWD JOB")
    run_main(api, tmp_path)
    assert (tmp_path / "sub" / "here.txt").read_text() == "x" and not (tmp_path / "here.txt").exists()
    assert str(tmp_path / "sub") in json.dumps(_children(api)[0].body["system"])


def test_a_sync_result_carries_the_childs_tokens_tool_uses_and_duration(api: FakeAnthropicServer,
                                                                       tmp_path: Path) -> None:
    api.enqueue(tool_use_reply("Agent", {"description": "t", "prompt": "TOTALS JOB", "subagent_type": "general-purpose"}),
                text_reply("done"), when=PARENT)
    api.enqueue(tool_use_reply("Bash", {"command": "sleep 0.2"}, usage=usage_json(100, 7)),
                replace(text_reply("counted", usage=usage_json(200, 9)), delay=0.1), when="TOTALS JOB")
    run_main(api, tmp_path)
    [answer] = last_results(with_text(api, PARENT)[1])
    usage = answer["content"].split("<usage>")[1]
    assert "total_tokens: 316\ntool_uses: 1\nduration_ms: " in usage
    assert int(usage.split("duration_ms: ")[1].split("<")[0]) >= 300


def test_task_output_blocks_until_the_child_ends_and_shows_its_recent_activity(api: FakeAnthropicServer,
                                                                              tmp_path: Path) -> None:
    api.enqueue(tool_use_reply("Agent", {"description": "w", "prompt": "WATCHED JOB", "name": "watched",
                                         "subagent_type": "general-purpose", "run_in_background": True}),
                tool_use_reply("TaskOutput", {"task_id": "watched", "block": True, "timeout": 20000}, tool_id="toolu_o"),
                text_reply("read it"), text_reply("noted"), when=PARENT)
    api.enqueue(tool_use_reply("Bash", {"command": "echo first step"}), tool_use_reply("Glob", {"pattern": "*.md"}),
                replace(text_reply("WATCHED RESULT"), delay=1.0), when="WATCHED JOB")
    run_main(api, tmp_path)
    [output] = last_results(with_text(api, PARENT)[2])
    assert "status: completed" in output["content"] and "WATCHED RESULT" in output["content"]
    assert "recent activity:\n  - Bash: echo first step\n  - Glob: *.md" in output["content"]
    assert "tool_uses: 2" in output["content"]


def test_a_definitions_max_turns_stops_the_child(api: FakeAnthropicServer, tmp_path: Path) -> None:
    api.enqueue(tool_use_reply("Agent", {"description": "s", "prompt": "SHORT JOB", "subagent_type": "short"}),
                text_reply("done"), when=PARENT)
    api.enqueue(tool_use_reply("Bash", {"command": "echo one"}), tool_use_reply("Bash", {"command": "echo two"}),
                text_reply("never"), when="SHORT JOB")
    run_main(api, tmp_path, agents_json=_agents(short={"maxTurns": 2}))
    assert len(_children(api)) == 2
    [answer] = last_results(with_text(api, PARENT)[1])
    assert "stopped early: max_turns" in answer["content"]


def test_explore_and_plan_children_get_no_project_instructions(api: FakeAnthropicServer, tmp_path: Path) -> None:
    (tmp_path / "CLAUDE.md").write_text("HOUSE-RULE: tabs are forbidden.\n")
    for kind in ("Explore", "Plan", "general-purpose"):
        api.enqueue(tool_use_reply("Agent", {"description": kind, "prompt": f"JOB FOR {kind}", "subagent_type": kind},
                                   tool_id=f"toolu_{kind[:4]}"), when=PARENT)
        api.enqueue(text_reply(f"{kind} done"), when=f"JOB FOR {kind}")
    api.enqueue(text_reply("all done"), when=PARENT)
    run_main(api, tmp_path)
    first = {kind: json.dumps(r.body["messages"][0]) for r in _children(api)
             for kind in ("Explore", "Plan", "general-purpose") if f"JOB FOR {kind}" in json.dumps(r.body)}
    assert "HOUSE-RULE" in first["general-purpose"] and "HOUSE-RULE" in json.dumps(api.requests[0].body)
    assert "HOUSE-RULE" not in first["Explore"] and "HOUSE-RULE" not in first["Plan"]


def test_a_background_childs_tokens_reach_its_notification(api: FakeAnthropicServer, tmp_path: Path) -> None:
    api.enqueue(tool_use_reply("Agent", {"description": "b", "prompt": "COUNTED JOB", "subagent_type": "general-purpose",
                                         "run_in_background": True}),
                text_reply("waiting"), text_reply("noted"), when=PARENT)
    api.enqueue(tool_use_reply("Bash", {"command": "echo hi"}, usage=usage_json(40, 2)),
                text_reply("COUNTED", usage=usage_json(50, 3)), when="COUNTED JOB")
    run_main(api, tmp_path)
    [notice] = [b["text"] for b in with_text(api, PARENT)[-1].body["messages"][-1]["content"]
                if "<task-notification>" in b.get("text", "")]
    assert "<status>completed</status>" in notice
    own = notice.split("</result>")[-1]  # the task's own totals, not the ones inside its result
    assert "<usage>total_tokens: 95\ntool_uses: 1\n" in own
