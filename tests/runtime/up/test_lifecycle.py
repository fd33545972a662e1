"""Bringing a team up and down: Ctrl-C in the foreground, ``--detach`` + ``swarm down``, twice, timeouts.

Every process is real: the installed ``swarm`` executable, teammate processes
in tmux panes on a private server or as subprocesses, git in a sample repo.
Waits poll with a deadline; the ``up`` fixture stops whatever is left.
"""

from __future__ import annotations

import json
import os
import signal

import pytest

from swarm.backends.select import tmux_usable
from swarm.core.frames import IdleNotification, PermissionRequest, parse_frame
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.names import LEAD_NAME
from tests.backends.helpers import retry_until
from tests.runtime.up.helpers import (
    EXAMPLES,
    Up,
    copy_team,
    lines_with,
    panes,
    processes_with,
    teammate_pids,
)

BACKENDS = [
    pytest.param("tmux", marks=pytest.mark.skipif(not tmux_usable(os.environ), reason="tmux 3.2+ not available")),
    "subprocess",
]


@pytest.mark.parametrize("backend", BACKENDS)
def test_ctrl_c_stops_the_foreground_team_and_keeps_changed_worktrees(up: Up, backend: str) -> None:
    team_file = copy_team("feature", up.tmp / "feature.toml", backend=backend)
    proc = up.popen("up", str(team_file), name="up")

    retry_until(lambda: "slugify verified" in up.output("up") or proc.poll() is not None, 30,
                what="the tester's 'slugify verified' message in swarm up's output")
    assert proc.poll() is None, f"swarm up ended early:\n{up.output('up')}\n{up.output('up', 'err')}"
    members = {m["name"]: m for m in up.config("feature")["members"] if m["name"] != "team-lead"}
    assert {m["backendType"] for m in members.values()} == {backend}
    running = teammate_pids(up.home)
    assert len(running) == 2
    if backend == "tmux":
        assert len(panes(up.socket)) == 2

    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 0, up.output("up", "err")

    out = up.output("up")
    assert "stdin is not a terminal" in up.output("up", "err")  # nobody to ask: the policy or a denial decides
    assert lines_with(out, "by policy:Bash(python3:*)"), out  # the foreground coordinator applied the policy
    assert "stopping the team" in out
    assert teammate_pids(up.home) == []
    assert panes(up.socket) == []
    for name, ahead in (("implementer", 1), ("tester", 2)):
        path, branch = members[name]["worktreePath"], f"swarm/feature/{name}"
        kept = lines_with(out, f"{name}: ")
        assert any(f"kept worktree {path} on {branch}" in line for line in kept), out
        assert os.path.isdir(path)
        assert up.git("rev-list", "--count", f"main..{branch}") == str(ahead)
    assert (up.repo / ".swarm/worktrees/feature/tester/test_slugify.py").is_file()
    assert up.git("status", "--porcelain") == ""


def test_sigterm_stops_the_foreground_team_like_ctrl_c_and_exits_non_zero(up: Up) -> None:
    team_file = copy_team("feature", up.tmp / "feature.toml", backend="subprocess")
    proc = up.popen("up", str(team_file), name="up")
    retry_until(lambda: "Ctrl-C stops the team" in up.output("up") or proc.poll() is not None, 30,
                what="swarm up to coordinate its running team")
    assert proc.poll() is None, f"swarm up ended early:\n{up.output('up')}\n{up.output('up', 'err')}"
    assert up.config("feature")["leadPid"] == proc.pid  # the members watch this process

    proc.send_signal(signal.SIGTERM)  # a service manager, `timeout`, `kill`: not the person's Ctrl-C
    assert proc.wait(timeout=60) == 128 + signal.SIGTERM, up.output("up", "err")

    out = up.output("up")
    assert "stopping the team (SIGTERM)" in out, out
    for name in ("implementer", "tester"):  # swarm up shut each one down itself, and says how it went
        assert lines_with(out, f"{name}: "), out
    assert teammate_pids(up.home) == []
    assert not any(m["isActive"] for m in up.config("feature")["members"] if m["name"] != "team-lead")


def test_detached_members_have_no_lead_process_to_outlive(up: Up) -> None:
    result = up.run("up", str(EXAMPLES / "review" / "team.toml"), "--detach")
    assert result.returncode == 0, result.stderr
    assert up.config("review").get("leadPid") is None  # a person leads a detached team: nothing is watched
    down = up.run("down", "review", "--timeout", "0")
    assert down.returncode == 0, down.stderr


def test_detach_returns_with_members_running_and_down_stops_them(up: Up) -> None:
    result = up.run("up", str(EXAMPLES / "review" / "team.toml"), "--detach")
    assert result.returncode == 0, result.stderr
    assert "team review is up: security, history" in result.stdout
    running = teammate_pids(up.home)
    assert len(running) == 2  # up returned; its members did not go with it
    if tmux_usable(up.env):
        assert len(panes(up.socket)) == 2
    # Nobody coordinates a detached team: security finishes, history waits for the lead to allow its
    # `git log`. Stop them at that point (a shutdown arriving *earlier* in history's turn hits the bug
    # in test_shutdown_requested_before_a_permission_request_is_not_ignored).
    retry_until(lambda: _reached_lead(up, "review") >= {("security", "idle"), ("history", "permission")}, 20,
                what="security to finish and history to ask for `git log`")

    down = up.run("down", "review", "--json", "--timeout", "15")
    assert down.returncode == 0, down.stderr
    outcomes = json.loads(down.stdout)
    assert sorted((o["name"], o["result"]) for o in outcomes) == [("history", "approved"), ("security", "approved")]
    assert teammate_pids(up.home) == []
    assert panes(up.socket) == []
    assert not any(m["isActive"] for m in up.config("review")["members"] if m["name"] != "team-lead")


def test_second_up_of_a_running_team_is_refused_and_starts_nothing(up: Up) -> None:
    team_file = str(EXAMPLES / "review" / "team.toml")
    first = up.run("up", team_file, "--detach")
    assert first.returncode == 0, first.stderr
    running, members = sorted(teammate_pids(up.home)), _who(up)
    assert len(running) == 2

    for mode in ("--detach", "--headless"):
        again = up.run("up", team_file, mode)
        assert again.returncode == 1, again.stderr
        lines = again.stderr.strip().splitlines()
        assert len(lines) == 1 and "already up" in lines[0] and "swarm down review" in lines[0], again.stderr
        assert sorted(teammate_pids(up.home)) == running
        assert _who(up) == members  # the same members, same processes, none added or respawned

    retry_until(lambda: _reached_lead(up, "review") >= {("security", "idle"), ("history", "permission")}, 20,
                what="security to finish and history to ask for `git log`")  # see the detach test
    down = up.run("down", "review", "--timeout", "15")
    assert down.returncode == 0, down.stderr
    assert teammate_pids(up.home) == []


def _reached_lead(up: Up, team: str) -> set[tuple[str, str]]:
    """(sender, kind) of what is in the lead's inbox: ``idle`` notifications and ``permission`` requests."""
    kinds = {IdleNotification: "idle", PermissionRequest: "permission"}
    return {(e.sender, kinds[type(f)]) for e in Mailbox(Home(up.home), team).read(LEAD_NAME)
            if type(f := parse_frame(e.text)) in kinds}


def _who(up: Up) -> list[tuple[str, int | None, int]]:
    return [(m["name"], m.get("pid"), m["joinedAt"]) for m in up.config("review")["members"]]


SLEEPER_TEAM = """
[team]
name = "sleepy"

[lead]
shutdown_timeout = 1

[[members]]
name = "sleeper"
prompt = "take a nap"
playbook = "sleeper.toml"
allowed_tools = ["Bash(sleep:*)"]
"""

NAP = "29.731"  # an unusual duration: the sleep process is found by it
SLEEPER_PLAYBOOK = f"""
[[rules]]
name = "nap"
on = "prompt"
match = 'take a nap'
tool_calls = [{{ name = "Bash", input = {{ command = "sleep {NAP}" }} }}]
"""


def test_headless_run_that_cannot_settle_times_out_and_leaves_nothing(up: Up) -> None:
    (up.tmp / "sleeper.toml").write_text(SLEEPER_PLAYBOOK)
    team_file = up.tmp / "sleepy.toml"
    team_file.write_text(SLEEPER_TEAM)
    proc = up.popen("up", str(team_file), "--headless", "--json", "--timeout", "3", name="up")

    retry_until(lambda: bool(processes_with(f"sleep {NAP}")) or proc.poll() is not None, 15,
                what="the teammate's sleep to start")
    assert processes_with(f"sleep {NAP}"), up.output("up", "err")
    assert proc.wait(timeout=30) == 1, up.output("up", "err")

    report = json.loads(up.output("up"))
    assert (report["ok"], report["reason"]) == (False, "timeout")
    assert 3 <= report["elapsed_s"] < 20
    assert [m["name"] for m in report["members"]] == ["sleeper"]
    assert report["members"][0]["stopped"] in ("approved", "killed")
    assert teammate_pids(up.home) == []
    assert processes_with(f"sleep {NAP}") == []
    assert panes(up.socket) == []


NAPPER_TEAM = """
[team]
name = "napper"

[[members]]
name = "napper"
prompt = "nap, then look at the history"
playbook = "napper.toml"
allowed_tools = ["Bash(sleep:*)"]
"""

SHORT_NAP = "3.017"
NAPPER_PLAYBOOK = f"""
[[rules]]
name = "nap-then-log"
on = "prompt"
match = 'nap, then look'
[[rules.steps]]
tool_calls = [{{ name = "Bash", input = {{ command = "sleep {SHORT_NAP}" }} }}]
[[rules.steps]]
tool_calls = [{{ name = "Bash", input = {{ command = "git log --oneline -1" }} }}]
[[rules.steps]]
text = "looked"
"""


def test_shutdown_requested_before_a_permission_request_is_not_ignored(up: Up) -> None:
    (up.tmp / "napper.toml").write_text(NAPPER_PLAYBOOK)
    team_file = up.tmp / "napper-team.toml"
    team_file.write_text(NAPPER_TEAM)
    assert up.run("up", str(team_file), "--detach").returncode == 0
    # the shutdown request reaches the teammate while its allowed `sleep` runs; its next call needs the lead
    retry_until(lambda: bool(processes_with(f"sleep {SHORT_NAP}")), 15, what="the teammate's sleep to start")

    down = up.run("down", "napper", "--json", "--timeout", "5")
    assert down.returncode == 0, down.stderr
    assert [(o["name"], o["result"]) for o in json.loads(down.stdout)] == [("napper", "approved")]
    assert teammate_pids(up.home) == []


ECHO_TEAM = """
[team]
name = "echoes"

[[members]]
name = "echo"
prompt = "list the files"
"""


def test_up_says_once_which_model_a_member_without_a_playbook_runs(up: Up) -> None:
    team_file = up.tmp / "echoes.toml"
    team_file.write_text(ECHO_TEAM)
    result = up.run("up", str(team_file), "--headless", "--json", "--timeout", "60")
    assert result.returncode == 0, result.stderr
    said = [line for line in result.stderr.splitlines() if "model" in line]
    assert said == ["swarm: echo's model: the offline scripted model, which only echoes what it receives "
                    "(no ANTHROPIC_API_KEY): export ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) to run Claude, "
                    "or pass --playbook"]
    assert json.loads(result.stdout)["members"][0]["result"].startswith("Received:")  # what it was told


def test_detach_says_restart_policies_and_the_watchdog_need_an_attached_up(up: Up) -> None:
    team_file = copy_team("review", up.tmp / "review.toml", backend="subprocess", restart="on-failure")
    team_file.write_text(team_file.read_text().replace('[team]\n', '[team]\nstall_after = 90\n', 1))
    result = up.run("up", str(team_file), "--detach")
    assert result.returncode == 0, result.stderr
    assert ("nobody coordinates a detached team: restart policies (security: on-failure, history: on-failure) and "
            "the watchdog (stall_after 90 s) need an attached `swarm up`") in " ".join(result.stderr.split())
    assert up.run("down", "review", "--timeout", "0").returncode == 0
    plain = up.run("up", str(EXAMPLES / "review" / "team.toml"), "--detach")  # nothing that needs coordinating
    assert plain.returncode == 0 and "nobody coordinates" not in plain.stderr
    assert up.run("down", "review", "--timeout", "0").returncode == 0
    assert "restart policies and the watchdog (--stall-after) need an attached" in " ".join(
        up.run("up", "--help").stdout.split())
