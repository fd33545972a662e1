"""`swarm demo --sandbox`: the same team work with the teammates' Bash in the OS sandbox asks the lead less."""

from __future__ import annotations

import json
import os

from tests.agent.sandbox.conftest import needs_bwrap
from tests.forked import run_swarm

pytestmark = needs_bwrap


def _demo(*args: str) -> dict:  # type: ignore[type-arg]
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    done = run_swarm(["demo", "--backend", "subprocess", "--json", *args], env=env, timeout=180)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_the_sandboxed_demo_does_the_same_work_with_fewer_permission_requests() -> None:
    plain, boxed = _demo(), _demo("--sandbox")
    assert plain["ok"] and boxed["ok"] and (plain["sandbox"], boxed["sandbox"]) == (False, True)
    assert plain["permission_requests"] >= 3  # git commit, git merge, python3: each asked, the policy answered
    assert boxed["permission_requests"] == 0  # each ran in the sandbox, auto-allowed
    assert [t["status"] for t in boxed["tasks"]] == ["completed", "completed"]
    assert [w["ahead"] for w in boxed["worktrees"]] == [w["ahead"] for w in plain["worktrees"]]  # the same commits
