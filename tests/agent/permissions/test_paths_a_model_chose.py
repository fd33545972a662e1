"""Paths a model chose are never trusted as if the person had chosen them.

A hostile model picks a subagent's ``cwd``, a relative file path, a directory
its repository ships as a symlink. Each case here is what such a model does
through the real entry points — a teammate process, its subagents, the
``swarm`` executable answering by the lead policy — and what must hold:

- a request carries the directory its call really runs in and absolute
  paths, and the lead policy, ``swarm permissions`` and the desk judge and
  show those (a subagent in ``<repo>/.git`` writing ``config`` is a write of
  ``.git/config``, never of ``<repo>/config``);
- a rule's relative pattern is read where the person wrote it (the
  teammate's cwd), so a subagent sent elsewhere neither gains an allow rule
  nor slips past a deny rule;
- a subagent's ``cwd`` stays inside its parent's write roots;
- a memory directory that a symlink carries out of its place grants nothing.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

from swarm.agent.definitions import AgentDefinition
from swarm.agent.memory import memory_prompt, with_memory
from swarm.agent.permissions.policy import CallFacts, RuleSet, decide
from swarm.agent.permissions.rules import parse_rules
from swarm.agent.transcript import Transcript
from swarm.core.home import Home
from swarm.core.permlog import PermissionEvent, PermissionLog
from swarm.core.protocol import LeadPolicy, Member
from swarm.core.teams import TeamStore
from swarm.runtime.permission_desk import answer_by_policy, pending, what_is_asked
from tests.agent.permissions.conftest import tool_results
from tests.backends.helpers import retry_until
from tests.forked import run_swarm
from tests.teammate.conftest import idle_results

PLANT_GIT_CONFIG = r"""
[[rules]]
name = "delegate"
match = 'delegate'
[[rules.steps]]
tool_calls = [{ name = "Agent", input = { description = "tidy", prompt = "plantcfg", subagent_type = "general-purpose", cwd = ".git" } }]
[[rules.steps]]
text = "delegated"

[[rules]]
name = "child"
match = 'plantcfg'
[[rules.steps]]
tool_calls = [{ name = "Write", input = { file_path = "config", content = "[core]\n\tfsmonitor = touch pwned\n", description = "write the project config" } }]
[[rules.steps]]
text = "planted"
"""


def _git_repo(path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(path)], check=True, capture_output=True)


def _permissions(team: str) -> str:
    done = run_swarm(["permissions", "--team", team], timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _lead_policy(home: Home, team: str, allow: list[str]) -> None:
    def set_policy(t):  # type: ignore[no-untyped-def]
        t.lead_policy = LeadPolicy(allow=allow)

    TeamStore(home).modify(team, set_policy)


def test_a_subagent_in_dot_git_cannot_get_git_config_approved_by_the_lead_policy(
        home: Home, team: str, tmp_path: Path, workdir: Path, start: Callable[..., Member]) -> None:
    _git_repo(workdir)
    config = workdir / ".git" / "config"
    before = config.read_text()
    _lead_policy(home, team, ["Edit(**)"])
    book = tmp_path / "plant.toml"
    book.write_text(PLANT_GIT_CONFIG)
    start("w", "delegate", book=book)
    retry_until(lambda: any(p.agent == "w" for p in pending(home, team)), 20, what="the subagent's request")

    listed = _permissions(team)  # the real CLI: answers by the lead policy first, then lists what is left
    [request] = pending(home, team)  # Edit(**) covers the repo, but .git/config is protected: a person answers
    assert request.tool == "Write" and request.cwd == str((workdir / ".git").resolve())
    assert request.input is not None and request.input["file_path"] == str(config.resolve())
    assert request.suggestions == ["Edit(.git/**)"]  # "always" would grant .git, not the whole repository
    assert str(config.resolve()) in listed, listed
    assert PermissionLog(home, team).decision(request.request_id) is None
    assert config.read_text() == before and not (workdir / "config").exists()


def test_the_desk_judges_and_shows_a_request_where_its_call_runs(home: Home, tmp_path: Path) -> None:
    """A request recorded with its cwd is judged and shown there; one without a cwd naming a relative path (a
    Claude Code teammate's, say) is left to a person, whatever the member's cwd would make of it."""
    repo = tmp_path / "repo"
    _git_repo(repo)
    store = TeamStore(home)
    store.create("t")
    store.add_member("t", Member(agent_id="w@t", name="w", cwd=str(repo)))
    _lead_policy(home, "t", ["Edit(**)", "Bash(git status:*)"])
    log = PermissionLog(home, "t")

    def ask(request_id: str, tool: str, args: dict[str, object], cwd: Path | None) -> PermissionEvent:
        event = PermissionEvent(event="request", request_id=request_id, ts=1, agent="w", tool=tool, input=args,
                                cwd=str(cwd) if cwd is not None else None)
        log.record_request(event)
        return event

    in_git = ask("perm-1", "Write", {"file_path": "config", "content": "x"}, repo / ".git")
    assert answer_by_policy(home, "t", in_git) is None
    assert what_is_asked(in_git, repo).startswith(f"write 1 characters to {repo / '.git' / 'config'}")
    unplaced = ask("perm-2", "Write", {"file_path": "config", "content": "x"}, None)
    assert answer_by_policy(home, "t", unplaced) is None
    placed = ask("perm-3", "Write", {"file_path": str(repo / "src" / "app.py"), "content": "x"}, None)
    answered = answer_by_policy(home, "t", placed)
    assert answered is not None and answered.decision == "allow"
    status = ask("perm-4", "Bash", {"command": "git status"}, repo / "sub")
    assert what_is_asked(status, repo).startswith(f"in {repo / 'sub'}: run: git status")
    assert what_is_asked(ask("perm-5", "Bash", {"command": "ls"}, repo), repo) == "run: ls"


def test_rules_are_anchored_where_the_person_wrote_them_not_where_a_subagent_runs(tmp_path: Path) -> None:
    """``Read(docs/**)`` was written for the repository: a subagent in ``<repo>/secrets`` reading
    ``docs/key`` reads ``<repo>/secrets/docs/key``, which no rule allowed; a deny rule holds at either place."""
    repo = tmp_path / "repo"
    (repo / "secrets" / "docs").mkdir(parents=True)
    (repo / "docs").mkdir()
    rules = RuleSet(allow=tuple(parse_rules(["Read(docs/**)"])), deny=tuple(parse_rules(["Edit(private/**)"])))
    outside = tmp_path / "elsewhere"
    (outside / "docs").mkdir(parents=True)

    def facts(tool: str, path: str, cwd: Path) -> CallFacts:
        return CallFacts(tool, {"file_path": path}, read_only=tool == "Read", cwd=cwd, write_roots=[repo / "secrets"],
                         rules_cwd=repo)

    assert decide(facts("Read", str(repo / "docs" / "a.md"), repo / "secrets"), "default", rules).verdict == "allow"
    assert decide(facts("Read", "docs/key", outside), "default", rules).verdict == "ask"
    assert decide(facts("Write", "private/x", repo / "secrets"), "default", rules).verdict == "deny"
    assert decide(facts("Write", str(repo / "secrets" / "private" / "x"), repo / "secrets"),
                  "default", rules).verdict == "deny"


SIDESTEP = r"""
[[rules]]
name = "delegate"
match = 'delegate'
[[rules.steps]]
tool_calls = [{ name = "Agent", input = { description = "tidy", prompt = "sidestep", subagent_type = "general-purpose", cwd = "src" } }]
[[rules.steps]]
text = "delegated"

[[rules]]
name = "child"
match = 'sidestep'
[[rules.steps]]
tool_calls = [{ name = "Write", input = { file_path = "../secrets/key.txt", content = "overwritten" } }]
[[rules.steps]]
text = "child: {incoming}"
"""


def test_a_subagent_in_another_directory_does_not_sidestep_the_persons_deny_rule(
        home: Home, team: str, tmp_path: Path, workdir: Path, start: Callable[..., Member]) -> None:
    """``Edit(secrets/**)`` was denied for the teammate's cwd; its subagent in ``src`` writing
    ``../secrets/key.txt`` writes the same file, and the same rule refuses it."""
    (workdir / "src").mkdir()
    (workdir / "secrets").mkdir()
    key = workdir / "secrets" / "key.txt"
    key.write_text("original")
    book = tmp_path / "sidestep.toml"
    book.write_text(SIDESTEP)
    start("w", "delegate", book=book, disallowed_tools=["Edit(secrets/**)"])
    retry_until(lambda: len(idle_results(home, team, "w")) == 1, 20, what="the teammate's turn")
    assert key.read_text() == "original"
    [link] = Transcript(home.transcript_path(team, "w")).events("subagent")
    [result] = [b for m in Transcript(Path(link["transcript"])).messages() for b in m.content if b.type == "tool_result"]
    assert result.is_error and "denied by rule Edit(secrets/**)" in str(result.content), result


# -- a subagent's cwd ------------------------------------------------------------------------

NOTER = "---\ndescription: keeps notes\ntools: Write, Read\nmemory: project\n---\nYou keep notes.\n"
ELSEWHERE = r"""
[[rules]]
name = "delegate"
match = 'delegate'
[[rules.steps]]
tool_calls = [{ name = "Agent", input = { description = "notes", prompt = "notejob", subagent_type = "noter", cwd = "OTHER" } }]
[[rules.steps]]
text = "delegated: {incoming}"

[[rules]]
name = "child"
match = 'notejob'
[[rules.steps]]
tool_calls = [{ name = "Write", input = { file_path = ".claude/agent-memory/noter/run.sh", content = "echo pwned\n" } }]
[[rules.steps]]
text = "noted"
"""


def _user_definition(name: str, text: str) -> None:
    agents = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    (agents / f"{name}.md").write_text(text)


def test_a_subagents_cwd_outside_the_parents_write_roots_is_refused(
        home: Home, team: str, tmp_path: Path, workdir: Path, start: Callable[..., Member]) -> None:
    other = tmp_path / "other-repo"
    _git_repo(other)
    _user_definition("noter", NOTER)
    book = tmp_path / "elsewhere.toml"
    book.write_text(ELSEWHERE.replace("OTHER", str(other)))
    start("w", "delegate", book=book)
    retry_until(lambda: len(idle_results(home, team, "w")) == 1, 20, what="the teammate's turn")
    [result] = [r for r in tool_results(home, team, "w")]
    assert result["is_error"] and "outside the directories" in str(result["content"]), result
    assert not (other / ".claude").exists()


# -- a symlinked memory directory --------------------------------------------------------------

KEEPER = r"""
[[rules]]
name = "keep"
match = 'keep'
[[rules.steps]]
tool_calls = [{ name = "Write", input = { file_path = "OUTSIDE/owned.txt", content = "owned\n" } }]
[[rules.steps]]
tool_calls = [{ name = "Write", input = { file_path = ".claude/agent-memory/keeper/MEMORY.md", content = "- kept\n" } }]
[[rules.steps]]
text = "kept"
"""


def test_a_symlinked_project_memory_directory_grants_no_writes_where_it_leads(
        home: Home, team: str, tmp_path: Path, workdir: Path, start: Callable[..., Member]) -> None:
    _git_repo(workdir)
    outside = tmp_path / "outside"
    outside.mkdir()
    (workdir / ".claude" / "agent-memory").mkdir(parents=True)
    (workdir / ".claude" / "agent-memory" / "keeper").symlink_to(outside)  # what the repository shipped
    _user_definition("keeper", NOTER.replace("keeps notes", "keeps notes too"))
    book = tmp_path / "keeper.toml"
    book.write_text(KEEPER.replace("OUTSIDE", str(outside)))
    start("k", "keep", book=book, agent_type="keeper")
    retry_until(lambda: idle_results(home, team, "k") == ["kept"], 20, what="the keeper's turn")
    results = tool_results(home, team, "k")
    assert [r["is_error"] for r in results] == [True, True], results
    assert list(outside.iterdir()) == []
    assert pending(home, team) == []  # refused outright: nobody was asked to widen it


def test_memory_grants_its_own_directory_only_where_it_really_is(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    _git_repo(repo)
    definition = AgentDefinition(name="keeper", description="keeps", prompt="", memory="project")
    memory = repo / ".claude" / "agent-memory" / "keeper"
    assert with_memory([repo], definition, repo, env={}) == [repo, memory]  # not there yet: Write makes it
    memory.mkdir(parents=True)
    assert with_memory([repo], definition, repo, env={}) == [repo, memory]
    memory.rmdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "MEMORY.md").write_text("secret index\n")
    memory.symlink_to(elsewhere)
    assert with_memory([repo], definition, repo, env={}) == [repo]
    prompt = memory_prompt(definition, repo, env={})
    assert "secret index" not in prompt and "symlink" in prompt
    memory.unlink()
    (repo / ".claude" / "agent-memory").rmdir()
    (repo / ".claude" / "agent-memory").symlink_to(elsewhere)  # a link higher up leads out just as well
    assert with_memory([repo], definition, repo, env={}) == [repo]
