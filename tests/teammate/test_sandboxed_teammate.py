"""A real teammate in a git worktree with the sandbox on (``--sandbox``): its own Bash tool runs the attacker's
commands. Writes outside fail in the kernel, keys read as empty, a denied host gets a 403 from the proxy;
the work inside runs without a single prompt (auto-allow), ``git commit`` included; a host not allowed is asked
of the lead (as ``WebFetch(domain:HOST)``; "always" adds that rule); leaving the sandbox asks the lead and says
so."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.sandbox_config import SandboxSettings
from swarm.core.teams import TeamStore
from swarm.runtime.permission_desk import approve, pending
from swarm.runtime.spawn import SpawnRequest, spawn
from tests.agent.permissions.conftest import tool_results
from tests.agent.sandbox.conftest import git, needs_bwrap
from tests.backends.helpers import retry_until
from tests.fakes.web_site import local_site

pytestmark = needs_bwrap

PLAYBOOK = r"""
[[rules]]
name = "unsandboxed"
match = 'unbox (?P<cmd>[^<]+)'
[[rules.steps]]
tool_calls = [{ name = "Bash", input = { command = "{cmd}", dangerouslyDisableSandbox = true } }]
[[rules.steps]]
text = "ran it outside"

[[rules]]
name = "bash"
match = 'run (?P<cmd>[^<]+)'
[[rules.steps]]
tool_calls = [{ name = "Bash", input = { command = "{cmd}" } }]
[[rules.steps]]
text = "ran it"
"""


@pytest.fixture
def site() -> Iterator[int]:
    with local_site(lambda _path: b"site says hi\n") as port:
        yield port


def test_a_sandboxed_teammate_is_stopped_by_the_kernel_and_asks_nothing_inside(
        home: Home, team: str, tmp_path: Path, tmux_socket: str, site: int) -> None:
    repo, outside, fake_home = tmp_path / "repo", tmp_path / "outside", tmp_path / "home"
    for path in (repo, outside, fake_home / ".ssh"):
        path.mkdir(parents=True)
    (fake_home / ".ssh" / "id_rsa").write_text("PRIVATE KEY\n")
    git(repo, "init", "-q", "-b", "main")
    (repo / "README").write_text("hi\n")
    git(repo, "add", "README")
    git(repo, "commit", "-qm", "init")
    book = tmp_path / "book.toml"
    book.write_text(PLAYBOOK)
    sandbox = SandboxSettings.model_validate({"enabled": True, "network": {"allowedDomains": ["localhost"],
                                                                           "deniedDomains": ["denied.test"]}})
    member = spawn(home, SpawnRequest(team=team, name="w", prompt="run true", backend="subprocess", playbook=book,
                                      cwd=repo, worktree=True, tmux_socket=tmux_socket, sandbox=sandbox),
                   dict(os.environ, HOME=str(fake_home)))
    tree = Path(member.worktree_path or "")
    mailbox = Mailbox(home, team)
    results: list[dict] = []  # type: ignore[type-arg]

    def ask(text: str) -> dict:  # type: ignore[type-arg]
        mailbox.send("w", text, sender="team-lead")
        retry_until(lambda: len(tool_results(home, team, "w")) > len(results), 20, what=f"a result for {text!r}")
        results[:] = tool_results(home, team, "w")
        return results[-1]

    retry_until(lambda: len(tool_results(home, team, "w")) == 1, 20, what="the first command")
    results[:] = tool_results(home, team, "w")
    attacks = {
        "python": f"python3 -c \"open('{outside}/python', 'w')\"",
        "make": f"printf 'all:\\n\\ttouch {outside}/make\\n' > Makefile && make",
        "git-alias": f"git -c alias.evil='!touch {outside}/git-alias' evil",
        "tar": f"touch t && tar -cf t.tar t && tar -xf t.tar -C {outside}",
        "script": f"printf 'touch {outside}/script' > s.sh && sh s.sh",
        "symlink": f"ln -s {outside} link && touch link/symlink",
    }
    for command in attacks.values():
        result = ask(f"run {command}")
        assert result.get("is_error") and "Read-only file system" in str(result["content"]), command
    assert list(outside.iterdir()) == []
    assert "PRIVATE KEY" not in str(ask(f"run cat {fake_home}/.ssh/id_rsa")["content"])
    refused = ask("run curl -sS -m 10 http://denied.test/")
    assert "network access to denied.test:80 is not allowed: it is in sandbox.network.deniedDomains" in str(
        refused["content"])
    assert "site says hi" in str(ask(f"run curl -sS -m 10 http://localhost:{site}/")["content"])
    done = ask("run echo work > work.txt && git add work.txt && "
               "git -c user.name=w -c user.email=w@t commit -qm sandboxed-commit && git log -1 --format=%s")
    assert "sandboxed-commit" in str(done["content"]) and not done.get("is_error")
    assert git(repo, "log", "-1", "--format=%s", member.worktree_branch or "") == "sandboxed-commit\n"
    assert pending(home, team) == []  # every command above ran (or failed) without a prompt
    mailbox.send("w", f"run curl -sS -m 30 http://127.0.0.1:{site}/", sender="team-lead")  # a host not allowed
    retry_until(lambda: len(pending(home, team)) == 1, 20, what="the network permission request")
    [asked] = pending(home, team)
    assert (asked.tool, asked.description) == ("WebFetch", f"connect to tcp://127.0.0.1:{site}")
    approve(home, team, asked.request_id, always=True)
    retry_until(lambda: len(tool_results(home, team, "w")) > len(results), 20, what="the approved curl")
    results[:] = tool_results(home, team, "w")
    assert "site says hi" in str(results[-1]["content"])
    assert TeamStore(home).get(team).member("w").allowed_tools == ["WebFetch(domain:127.0.0.1)"]  # type: ignore
    mailbox.send("w", f"unbox touch {outside}/escaped", sender="team-lead")
    retry_until(lambda: len(pending(home, team)) == 1, 20, what="the unsandboxed command's permission request")
    [request] = pending(home, team)
    assert request.description.startswith(f"run outside the sandbox (unsandboxed): touch {outside}/escaped")
    assert not (outside / "escaped").exists()
    assert tree.is_dir() and subprocess.run(["git", "status", "--porcelain"], cwd=tree, capture_output=True,
                                            text=True).returncode == 0
