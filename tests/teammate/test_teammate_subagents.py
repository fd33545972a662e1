"""A teammate's own subagents: a background child's notice wakes the idle teammate, once."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from swarm.agent.transcript import Transcript
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.permlog import PermissionLog
from swarm.core.protocol import Member
from swarm.core.teams import TeamStore
from swarm.runtime.permission_desk import deny
from swarm.runtime.spawn import SpawnRequest, spawn
from tests.backends.helpers import retry_until
from tests.fakes import FakeAnthropicServer, text_reply
from tests.forked import run_swarm
from tests.teammate.conftest import idle_results

DELEGATING = r"""
[[rules]]
name = "delegate"
match = 'delegate (?P<tok>\w+)'
[[rules.steps]]
tool_calls = [{ name = "Agent", input = { description = "background job", prompt = "childjob {tok}", subagent_type = "general-purpose", run_in_background = true } }]
[[rules.steps]]
text = "delegated {tok}"

[[rules]]
name = "child"
match = 'childjob (?P<tok>\w+)'
[[rules.steps]]
tool_calls = [{ name = "Bash", input = { command = "sleep 1; echo built {tok} > built-{tok}.txt" } }]
[[rules.steps]]
text = "child finished {tok}"

[[rules]]
name = "notified"
match = 'child finished (?P<tok>\w+)'
text = "parent saw {tok}"
"""


def test_an_idle_teammate_is_woken_by_its_background_subagents_notice(
        home: Home, team: str, tmp_path: Path, workdir: Path, start: Callable[..., Member]) -> None:
    book = tmp_path / "delegating.toml"
    book.write_text(DELEGATING)
    start("w", "delegate zeta", book=book, allowed_tools=["Bash"])
    retry_until(lambda: idle_results(home, team, "w")[:1] == ["delegated zeta"], 20, what="the first turn")
    member = TeamStore(home).get(team).member("w")
    assert member is not None and not (workdir / "built-zeta.txt").exists()  # idle while the child still works
    retry_until(lambda: idle_results(home, team, "w") == ["delegated zeta", "parent saw zeta"], 20,
                what="the notice to start a second turn")
    assert (workdir / "built-zeta.txt").read_text() == "built zeta\n"

    transcript = Transcript(home.transcript_path(team, "w"))
    notices = [b.text for m in transcript.messages() if m.role == "user" for b in m.content
               if b.type == "text" and "<task-notification>" in b.text]
    assert len(notices) == 1 and "child finished zeta" in notices[0]
    [link] = transcript.events("subagent")
    child = Transcript(Path(link["transcript"]))
    assert Path(link["transcript"]).is_relative_to(home.transcript_path(team, "w").parent / "w" / "subagents")
    assert child.messages()[-1].text() == "child finished zeta"


QUIET = r"""
[[rules]]
name = "delegate"
match = 'delegate (?P<tok>\w+)'
[[rules.steps]]
tool_calls = [{ name = "Agent", input = { description = "quiet job", prompt = "quietjob {tok}", subagent_type = "quiet" } }]
[[rules.steps]]
text = "delegated {tok}"

[[rules]]
name = "child"
match = 'quietjob (?P<tok>\w+)'
system = 'You work quietly'
[[rules.steps]]
tool_calls = [{ name = "Bash", input = { command = "touch quiet-{tok}.txt" } }]
[[rules.steps]]
text = "child tried {tok}"
"""

QUIET_AGENT = """---
name: quiet
description: does small things without asking anyone
permissionMode: dontAsk
---
You work quietly.
"""


@pytest.mark.parametrize(("mode", "ran"), [("default", False), ("acceptEdits", True), ("bypassPermissions", True)])
def test_a_subagent_runs_in_its_definitions_mode_unless_the_parents_mode_is_kept(
        home: Home, team: str, tmp_path: Path, workdir: Path, start: Callable[..., Member], mode: str,
        ran: bool) -> None:
    (workdir / ".claude" / "agents").mkdir(parents=True)
    (workdir / ".claude" / "agents" / "quiet.md").write_text(QUIET_AGENT)
    book = tmp_path / "quiet.toml"
    book.write_text(QUIET)
    start("w", "delegate eta", book=book, permission_mode=mode)
    retry_until(lambda: idle_results(home, team, "w") == ["delegated eta"], 20, what="the turn")
    assert (workdir / "quiet-eta.txt").exists() is ran
    assert PermissionLog(home, team).pending() == [] and not PermissionLog(home, team).path.exists()
    [link] = Transcript(home.transcript_path(team, "w")).events("subagent")
    results = [b for m in Transcript(Path(link["transcript"])).messages() for b in m.content
               if b.type == "tool_result"]
    assert [r.is_error for r in results] == [not ran]
    if not ran:
        assert "dontAsk" in results[0].content


def test_a_teammate_started_from_a_definition_gets_its_prompt_tools_and_model(
        home: Home, team: str, workdir: Path, api: FakeAnthropicServer) -> None:
    agents = workdir / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "reader.md").write_text("---\nname: reader\ndescription: reads\ntools: Read\nmodel: haiku\n---\n"
                                      "You only read files.\n")
    env = {**os.environ, "ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": api.base_url,
           "SWARM_MODEL_HAIKU": "claude-haiku-test"}
    api.enqueue(text_reply("reading"))
    spawn(home, SpawnRequest(team=team, name="r", prompt="look around", cwd=workdir, backend="subprocess",
                             agent_type="reader"), env)
    retry_until(lambda: idle_results(home, team, "r") == ["reading"], 20, what="the reader's first turn")
    body = api.requests[0].body
    # its definition's tools, plus what every teammate keeps: SendMessage and the team's task tools
    assert [t["name"] for t in body["tools"]] == ["Read", "SendMessage", "TaskCreate", "TaskGet", "TaskList",
                                                  "TaskUpdate"]
    assert body["model"] == "claude-haiku-test"
    system = json.dumps(body["system"])
    assert "You only read files." in system and "# Working in a team" in system and '\\"r\\"' not in system
    assert "claim the next available one" in system  # and it is told to use them
    first = body["messages"][0]["content"][0]["text"]
    assert first.startswith("<system-reminder>") and 'You are "r", a member of team "t"' in first


SKILLED = r"""
[[rules]]
name = "skill body"
match = 'Touch the marker (?P<tok>\w+)'
[[rules.steps]]
tool_calls = [{ name = "Bash", input = { command = "touch marker-{tok}.txt" } }]
[[rules.steps]]
text = "touched {tok}"

[[rules]]
name = "plain"
match = 'touch again (?P<tok>\w+)'
[[rules.steps]]
tool_calls = [{ name = "Bash", input = { command = "touch marker-{tok}.txt" } }]
[[rules.steps]]
text = "tried {tok}"

[[rules]]
match = 'hello'
text = "ready"
"""


def test_a_persons_slash_command_expands_in_a_teammate_and_grants_its_tools_for_that_turn(
        home: Home, team: str, tmp_path: Path, workdir: Path, start: Callable[..., Member]) -> None:
    skill = workdir / ".claude" / "skills" / "marker"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: marker\ndescription: touches a marker\n"
                                    "allowed-tools: Bash(touch *)\n---\nTouch the marker $0.\n")
    book = tmp_path / "skilled.toml"
    book.write_text(SKILLED)
    start("w", "hello", book=book)
    retry_until(lambda: idle_results(home, team, "w") == ["ready"], 20, what="the first turn")
    sent = run_swarm(["send", "w", "/marker one", "--team", team], timeout=30)
    assert sent.returncode == 0, sent.stderr
    retry_until(lambda: idle_results(home, team, "w")[-1:] == ["touched one"], 20, what="the skill's turn")
    assert (workdir / "marker-one.txt").exists() and PermissionLog(home, team).pending() == []

    Mailbox(home, team).send("w", "touch again two", sender="team-lead")  # no skill now: the grant is over
    retry_until(lambda: len(PermissionLog(home, team).pending()) == 1, 20, what="the plain call to ask")
    [request] = PermissionLog(home, team).pending()
    assert request.tool == "Bash" and not (workdir / "marker-two.txt").exists()
    deny(home, team, request.request_id, reason="not now")
    retry_until(lambda: idle_results(home, team, "w")[-1:] == ["tried two"], 20, what="the denied turn to end")


def test_skills_named_for_a_teammate_are_preloaded_into_its_system_prompt(
        home: Home, team: str, workdir: Path, api: FakeAnthropicServer) -> None:
    skill = workdir / ".claude" / "skills" / "style"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\ndescription: house style\n---\nSTYLE-BODY: short lines.\n")
    env = {**os.environ, "ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": api.base_url}
    api.enqueue(text_reply("styled"))
    spawn(home, SpawnRequest(team=team, name="s", prompt="write", cwd=workdir, backend="subprocess",
                             skills=["style"]), env)
    retry_until(lambda: idle_results(home, team, "s") == ["styled"], 20, what="the first turn")
    system = json.dumps(api.requests[0].body["system"])
    assert "## Skill: style" in system and "STYLE-BODY: short lines." in system
    assert "- style: house style" in json.dumps(api.requests[0].body["messages"][0])  # and still in the catalog
    assert "- style: house style" not in json.dumps(api.requests[0].body["tools"])  # an attachment, not Skill's text


KEEPER = r"""
[[rules]]
name = "keep"
match = 'keep (?P<tok>\w+)'
on = "prompt"
tool_calls = [{ name = "Write", input = { file_path = "MEMORY_PATH", content = "- {tok} is kept\n" } },
              { name = "Agent", input = { description = "gp job", prompt = "gpjob", subagent_type = "general-purpose" } }]

[[rules]]
name = "look"
match = 'look (?P<tok>\w+)'
on = "prompt"
tool_calls = [{ name = "Bash", input = { command = "touch looked-{tok}.txt" } }]

[[rules]]
name = "saw"
on = "tool_result"
text = "saw: {incoming}"
"""


def test_a_teammate_from_a_definition_writes_its_memory_and_starts_only_the_types_it_lists(
        home: Home, team: str, tmp_path: Path, workdir: Path, start: Callable[..., Member]) -> None:
    (workdir / ".claude" / "agents").mkdir(parents=True)
    (workdir / ".claude" / "agents" / "keeper.md").write_text(
        "---\ndescription: keeps notes\ntools: Agent(Explore), Write, Read\nmemory: user\n---\nYou keep notes.\n")
    memory = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "agent-memory" / "keeper" / "MEMORY.md"
    book = tmp_path / "keeper.toml"
    book.write_text(KEEPER.replace("MEMORY_PATH", str(memory)))
    start("k", "keep iota", book=book, agent_type="keeper")
    retry_until(lambda: len(idle_results(home, team, "k")) == 1, 20, what="the keeper's turn")
    [result] = idle_results(home, team, "k")
    assert result is not None and "agent type 'general-purpose' is not allowed here; available: Explore" in result
    assert memory.read_text() == "- iota is kept\n"
    assert PermissionLog(home, team).pending() == [] and not PermissionLog(home, team).path.exists()


def test_an_explore_teammate_runs_only_read_only_commands_even_when_it_bypasses_permissions(
        home: Home, team: str, tmp_path: Path, workdir: Path, start: Callable[..., Member]) -> None:
    book = tmp_path / "keeper.toml"
    book.write_text(KEEPER)
    start("e", "look kappa", book=book, agent_type="Explore", permission_mode="bypassPermissions")
    retry_until(lambda: len(idle_results(home, team, "e")) == 1, 20, what="the explorer's turn")
    [result] = idle_results(home, team, "e")
    assert result is not None and result.startswith("saw: this agent is read-only"), result
    assert not (workdir / "looked-kappa.txt").exists()


EAGER = r"""
[[rules]]
name = "delegate"
match = 'delegate (?P<tok>\w+)'
[[rules.steps]]
tool_calls = [{ name = "Agent", input = { description = "eager job", prompt = "eagerjob {tok}", subagent_type = "eager" } }]
[[rules.steps]]
text = "delegated {tok}"

[[rules]]
name = "child"
match = 'eagerjob (?P<tok>\w+)'
system = 'You write at once'
[[rules.steps]]
tool_calls = [{ name = "Write", input = { file_path = "eager-{tok}.txt", content = "written before any plan\n" } }]
[[rules.steps]]
text = "child tried {tok}"
"""

EAGER_AGENT = """---
name: eager
description: writes without waiting
permissionMode: acceptEdits
---
You write at once.
"""


def test_a_child_of_a_teammate_in_plan_mode_stays_in_plan_mode(
        home: Home, team: str, tmp_path: Path, workdir: Path, start: Callable[..., Member]) -> None:
    """The attacker's case: a plan-mode teammate delegates to a project agent whose definition says acceptEdits;
    the child may not write before any plan is approved (a definition never widens its parent's mode)."""
    (workdir / ".claude" / "agents").mkdir(parents=True)
    (workdir / ".claude" / "agents" / "eager.md").write_text(EAGER_AGENT)
    book = tmp_path / "eager.toml"
    book.write_text(EAGER)
    start("w", "delegate iota", book=book, plan_mode_required=True)
    retry_until(lambda: idle_results(home, team, "w") == ["delegated iota"], 20, what="the turn")
    assert not (workdir / "eager-iota.txt").exists()
    [link] = Transcript(home.transcript_path(team, "w")).events("subagent")
    results = [b for m in Transcript(Path(link["transcript"])).messages() for b in m.content
               if b.type == "tool_result"]
    assert [r.is_error for r in results] == [True] and "plan" in str(results[0].content)
