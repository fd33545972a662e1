"""The attacker's commands, through the real Bash tool in a real bubblewrap sandbox: writes outside the worktree
by every route the text rules cannot see, reads of keys, network to a domain not allowed, a background process
outliving its command — each fails; the same work inside the worktree succeeds, ``git commit`` included."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import psutil
import pytest

from swarm.agent.sandbox import Sandbox
from swarm.agent.tool_api.context import AgentIdentity, AgentServices, ToolContext, ToolError
from swarm.agent.tools import BashTool, stop_background, stop_command
from swarm.core.sandbox_config import ResolvedSandbox
from tests.agent.sandbox.conftest import Place, git, needs_bwrap

pytestmark = needs_bwrap

POLICY = ResolvedSandbox(enabled=True, allowed_domains=("allowed.test",), denied_domains=("evil.test",),
                         excluded_commands=("make-outside",))


@pytest.fixture(scope="module")
def sandbox(place: Place) -> Iterator[Sandbox]:
    box = Sandbox(POLICY, env={"HOME": str(place.home)}, resolve={"allowed.test": "127.0.0.1"})
    yield box
    box.close()


@pytest.fixture
def bash(place: Place, sandbox: Sandbox) -> Iterator[Any]:
    ctx = ToolContext(AgentIdentity(cwd=place.worktree, write_roots=[place.worktree]),
                      services=AgentServices(sandbox=sandbox))
    tool = BashTool()

    def run(command: str, **raw: Any) -> str:
        return tool.run(tool.input_model.model_validate({"command": command, **raw}), ctx)

    yield run
    for proc in ctx.background:
        stop_command(proc, grace=0.5)


def fails(bash: Any, command: str) -> str:
    with pytest.raises(ToolError) as caught:
        bash(command)
    return str(caught.value)


@pytest.mark.parametrize("name, attack", [
    ("python", "python3 -c \"open('{out}/python', 'w').write('x')\""),
    ("make", "printf 'all:\\n\\ttouch {out}/make\\n' > Makefile && make"),
    ("git-alias", "git -c alias.evil='!touch {out}/git-alias' evil"),
    ("tar", "echo x > t && tar -cf t.tar t && tar -xf t.tar -C {out} && mv {out}/t {out}/tar"),
    ("script", "printf '#!/bin/sh\\necho x > {out}/script\\n' > s.sh && chmod +x s.sh && ./s.sh"),
    ("symlink", "ln -sfn {out} link && echo x > link/symlink"),
])
def test_writes_outside_the_worktree_fail(place: Place, bash: Any, name: str, attack: str) -> None:
    out = fails(bash, attack.format(out=place.outside))
    assert "Read-only file system" in out
    assert not (place.outside / name).exists()


@pytest.mark.parametrize("command, made", [
    ("python3 -c \"open('py.txt', 'w').write('x')\"", "py.txt"),
    ("printf 'all:\\n\\ttouch made.txt\\n' > Makefile && make -s", "made.txt"),
    ("echo x > t2 && tar -cf t2.tar t2 && mkdir -p un && tar -xf t2.tar -C un", "un/t2"),
])
def test_the_same_work_inside_the_worktree_succeeds(place: Place, bash: Any, command: str, made: str) -> None:
    bash(command)
    assert (place.worktree / made).is_file()


def test_git_commit_in_a_linked_worktree_works(place: Place, bash: Any) -> None:
    bash("echo change > committed.txt && git add committed.txt && "
         "git -c user.name=a -c user.email=a@b commit -qm 'from the sandbox'")
    assert "from the sandbox" in git(place.repo, "log", "-1", "--format=%s", "work")


def test_protected_files_stay_read_only_inside_the_worktree(place: Place, bash: Any) -> None:
    (place.worktree / ".claude" / "agents").mkdir(parents=True)
    for attack in ("mkdir -p .claude/agents/x", "echo '{}' > .claude/settings.json && false",
                   "mv .claude moved && mkdir -p .claude/agents && touch .claude/agents/evil.md",
                   f"mv {place.repo}/.git/hooks h", f"cd {place.repo} && mv .git g",
                   "echo 'gitdir: /tmp' > .git", f"git config --file {place.repo}/.git/config alias.x '!true'",
                   f"echo hook > {place.repo}/.git/hooks/pre-commit"):
        fails(bash, attack)
    assert not (place.worktree / ".claude" / "settings.json").exists()
    assert not (place.worktree / "moved").exists() and list((place.worktree / ".claude" / "agents").iterdir()) == []
    assert (place.worktree / ".git").read_text().startswith("gitdir: " + str(place.repo))
    assert "alias" not in (place.repo / ".git" / "config").read_text()


def test_keys_under_home_are_hidden(place: Place, bash: Any) -> None:
    out = fails(bash, f"cat {place.home}/.ssh/id_ed25519")
    assert "PRIVATE KEY" not in out
    assert bash(f"ls -A {place.home}/.ssh") == "(no output)"  # an empty directory stands in


def test_a_background_process_does_not_outlive_its_command(place: Place, bash: Any) -> None:
    bash("(sleep 1; touch survived) >/dev/null 2>&1 & echo started")
    time.sleep(1.6)
    assert not (place.worktree / "survived").exists()


def test_network_goes_only_to_allowed_domains_through_the_proxy(place: Place, bash: Any) -> None:
    assert bash(f"curl -sS -m 10 http://allowed.test:{place.web_port}/") == "hello from the allowed site"
    refused = fails(bash, "curl -sS -m 10 -i http://evil.test/ ; curl -sS -m 10 https://unknown.test/")
    assert "network access to evil.test:80 is not allowed: it is in sandbox.network.deniedDomains" in refused
    assert "CONNECT tunnel failed, response 403" in refused
    direct = fails(bash, f"curl -sS -m 5 --noproxy '*' http://127.0.0.1:{place.web_port}/")
    assert "hello" not in direct  # no network of its own: the loopback inside is empty


def test_leaving_the_sandbox_is_possible_only_where_allowed(place: Place, bash: Any) -> None:
    bash(f"touch {place.outside}/unsandboxed", dangerouslyDisableSandbox=True)
    assert (place.outside / "unsandboxed").exists()
    strict = Sandbox(POLICY.model_copy(update={"allow_unsandboxed_commands": False}), env={})
    ctx = ToolContext(AgentIdentity(cwd=place.worktree), services=AgentServices(sandbox=strict))
    tool = BashTool()
    try:
        with pytest.raises(ToolError, match="allowUnsandboxedCommands is false"):
            tool.run(tool.input_model.model_validate({"command": f"touch {place.outside}/strict",
                                                      "dangerouslyDisableSandbox": True}), ctx)
    finally:
        strict.close()
    assert not (place.outside / "strict").exists()


def test_excluded_commands_run_unsandboxed(place: Place, sandbox: Sandbox) -> None:
    assert not sandbox.runs_sandboxed("make-outside all", False, place.worktree)
    assert not sandbox.runs_sandboxed("make-outside", False, place.worktree)
    assert sandbox.runs_sandboxed("make-outside; touch /x", False, place.worktree)  # every part must be excluded
    assert sandbox.runs_sandboxed("make", False, place.worktree)


def test_a_background_command_runs_sandboxed_and_stops_with_its_whole_tree(place: Place, sandbox: Sandbox) -> None:
    ctx = ToolContext(AgentIdentity(cwd=place.worktree, write_roots=[place.worktree]),
                      services=AgentServices(sandbox=sandbox))
    tool = BashTool()
    tool.run(tool.input_model.model_validate({
        "command": f"touch {place.outside}/bg-escaped; echo started > bg.txt; sleep 60 & sleep 60",
        "run_in_background": True}), ctx)
    [proc] = ctx.background
    deadline = time.monotonic() + 10
    while not (place.worktree / "bg.txt").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    tree = [proc.pid, *(c.pid for c in psutil.Process(proc.pid).children(recursive=True))]
    assert len(tree) >= 4  # bwrap, its init, the shell, two sleeps
    stop_background(ctx)
    assert not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE for pid in tree)
    assert (place.worktree / "bg.txt").exists() and not (place.outside / "bg-escaped").exists()


def test_a_memory_directory_inside_claude_stays_writable(place: Place, sandbox: Sandbox) -> None:
    memory = place.worktree / ".claude" / "agent-memory" / "reviewer"
    memory.mkdir(parents=True)
    ctx = ToolContext(AgentIdentity(cwd=place.worktree, write_roots=[place.worktree, memory]),
                      services=AgentServices(sandbox=sandbox))
    tool = BashTool()
    tool.run(tool.input_model.model_validate({"command": f"echo note > {memory}/MEMORY.md"}), ctx)
    assert (memory / "MEMORY.md").read_text() == "note\n"
    with pytest.raises(ToolError, match="Read-only file system"):
        tool.run(tool.input_model.model_validate({"command": "touch .claude/settings.local.json"}), ctx)
