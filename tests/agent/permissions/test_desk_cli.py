"""The lead's desk from the command line."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

from swarm.core.home import Home
from swarm.core.protocol import Member
from swarm.runtime.permission_desk import pending
from tests.agent.permissions.conftest import tool_results
from tests.backends.helpers import retry_until
from tests.conftest import both_stores
from tests.forked import run_swarm


def swarm(*args: str) -> subprocess.CompletedProcess[str]:
    return run_swarm(args, timeout=60)


@both_stores
def test_list_approve_deny_and_errors(home: Home, team: str, workdir: Path, start: Callable[..., Member]) -> None:
    start("a", "run touch a.txt")
    start("b", "run touch b.txt")
    retry_until(lambda: len(pending(home, team)) == 2, 15, what="two requests")
    listed = json.loads(swarm("permissions", "--team", team, "--json").stdout)
    by_agent = {r["agent"]: r["request_id"] for r in listed}
    assert set(by_agent) == {"a", "b"}
    assert "2 request(s) waiting for the lead (a, b): swarm permissions --team t" in swarm("status", "--team", team).stdout
    table = swarm("permissions", "--team", team).stdout
    assert by_agent["a"] in table and "run: touch a.txt" in table

    approved = swarm("approve", by_agent["a"], "--team", team, "--always")
    assert approved.returncode == 0 and "rule Bash(touch:*) added for a" in approved.stdout
    denied = swarm("deny", by_agent["b"], "--team", team, "--reason", "use the build dir")
    assert denied.returncode == 0
    retry_until(lambda: (workdir / "a.txt").exists(), 10)
    retry_until(lambda: len(tool_results(home, team, "b")) == 1, 10)
    assert "use the build dir" in tool_results(home, team, "b")[0]["content"]

    again = swarm("approve", by_agent["a"], "--team", team)
    assert again.returncode == 1 and "already answered (allow by lead)" in again.stderr
    unknown = swarm("deny", "perm-0-nope", "--team", team)
    assert unknown.returncode == 1 and "no permission or plan request 'perm-0-nope'" in unknown.stderr
    wrong = swarm("plan", "approve", by_agent["b"], "--team", team)
    assert wrong.returncode == 2 and "is a permission request" in wrong.stderr
    for result in (again, unknown, wrong):
        assert len(result.stderr.strip().splitlines()) == 1
    assert "no pending requests" in swarm("permissions", "--team", team).stdout
