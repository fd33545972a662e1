"""A claude teammate without the real Claude Code: binary lookup, one-line errors, command line, config dir.

A stand-in ``claude`` (a shell script recording its argv and environment, then sleeping) runs
in a real pane on a private tmux server, so what spawn puts on the command line and in the
environment is read back from the process, not from swarm's own objects.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.names import LEAD_NAME
from swarm.core.protocol import Member
from swarm.core.sandbox_config import SandboxSettings
from swarm.core.signing import VerifyKey, lead_key
from swarm.core.teams import TeamStore
from swarm.errors import UsageError
from swarm.runtime import claude_teammate
from swarm.runtime.shutdown import shutdown
from swarm.runtime.spawn import SpawnRequest, spawn, wait_joined
from swarm.runtime.status import team_status
from swarm.runtime.upfile import load_upfile
from tests.backends.helpers import retry_until
from tests.forked import run_swarm

TEAM = "mix"
FAKE = """#!/bin/sh
env > "$0.env.tmp" && mv "$0.env.tmp" "$0.env"
printf '%s\\n' "$@" > "$0.argv.tmp" && mv "$0.argv.tmp" "$0.argv"
exec sleep 60
"""
needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


@pytest.fixture
def fake_claude(tmp_path: Path) -> Path:
    path = tmp_path / "bin" / "claude"
    path.parent.mkdir()
    path.write_text(FAKE)
    path.chmod(0o755)
    return path


@pytest.fixture
def tmux_socket(tmp_path: Path) -> Iterator[str]:
    socket = str(tmp_path / "tmux.sock")
    yield socket
    subprocess.run(["tmux", "-S", socket, "kill-server"], capture_output=True, check=False)


def _swarm(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_swarm(args, env=env, cwd=cwd, timeout=60)


# -- finding the binary -----------------------------------------------------------------------


def test_the_binary_comes_from_the_flag_then_the_variable_then_path(fake_claude: Path, tmp_path: Path) -> None:
    other = tmp_path / "other-claude"
    shutil.copy(fake_claude, other)
    env = {"PATH": str(fake_claude.parent), "SWARM_CLAUDE_BIN": str(other)}
    assert claude_teammate.find_claude(str(fake_claude), env) == fake_claude
    assert claude_teammate.find_claude(None, env) == other
    assert claude_teammate.find_claude(None, {"PATH": str(fake_claude.parent)}) == fake_claude


def test_a_missing_or_unusable_binary_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"no `claude` on PATH.*--claude-bin") as missing:
        claude_teammate.find_claude(None, {"PATH": str(tmp_path)})
    plain = tmp_path / "claude"
    plain.write_text("not executable")
    with pytest.raises(UsageError, match="SWARM_CLAUDE_BIN .* is not an executable file") as unusable:
        claude_teammate.find_claude(None, {"SWARM_CLAUDE_BIN": str(plain)})
    assert "\n" not in str(missing.value) + str(unusable.value)


def test_spawn_without_claude_fails_in_one_line_and_leaves_nothing(home: Home, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q",
                    "--allow-empty", "-m", "x"], check=True)
    TeamStore(home).create(TEAM)
    env = {**os.environ, "PATH": f"{Path(shutil.which('git') or '/usr/bin/git').parent}:{os.defpath}"}
    env.pop("SWARM_CLAUDE_BIN", None)
    done = _swarm("spawn", "bob", "--team", TEAM, "-p", "work", "--runtime", "claude", "--worktree", env=env,
                  cwd=repo)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "no `claude` on PATH" in done.stderr
    assert [m.name for m in TeamStore(home).get(TEAM).members] == [LEAD_NAME]
    assert not home.inbox_path(TEAM, "bob").exists()
    assert not (repo / ".swarm" / "worktrees").exists() or not any((repo / ".swarm" / "worktrees").rglob("bob"))
    assert not home.claude_config_dir.exists()


def test_a_claude_teammate_without_tmux_or_with_subprocess_is_refused(
        home: Home, tmp_path: Path, fake_claude: Path) -> None:
    TeamStore(home).create(TEAM)
    no_tmux = {**os.environ, "PATH": str(fake_claude.parent)}
    done = _swarm("spawn", "bob", "--team", TEAM, "-p", "work", "--runtime", "claude", env=no_tmux, cwd=tmp_path)
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert "a claude teammate runs in a tmux pane" in done.stderr and "tmux 3.2+ is not usable" in done.stderr
    with pytest.raises(UsageError, match="use --backend tmux or auto"):
        spawn(home, SpawnRequest(team=TEAM, name="bob", prompt="x", cwd=tmp_path, runtime="claude",
                                 backend="subprocess", claude_bin=str(fake_claude)), os.environ)
    with pytest.raises(UsageError, match="--playbook is for swarm teammates"):
        spawn(home, SpawnRequest(team=TEAM, name="bob", prompt="x", cwd=tmp_path, runtime="claude",
                                 playbook=fake_claude, claude_bin=str(fake_claude)), os.environ)
    assert [m.name for m in TeamStore(home).get(TEAM).members] == [LEAD_NAME]


def test_a_bad_name_is_refused_before_claude_is_looked_for(home: Home, tmp_path: Path) -> None:
    TeamStore(home).create(TEAM)
    done = _swarm("spawn", "../bob", "--team", TEAM, "-p", "work", "--runtime", "claude",
                  env={**os.environ, "PATH": os.defpath}, cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "contains '.'" in done.stderr


# -- the command line and the config dir ---------------------------------------------------------


def _member(tmp_path: Path, **extra: object) -> Member:
    fields: dict[str, object] = {"agent_id": f"bob@{TEAM}", "name": "bob", "agent_type": "reviewer", "color": "blue",
                                 "cwd": str(tmp_path), "mode": "acceptEdits", "model": "claude-sonnet-4-6", **extra}
    return Member.model_validate(fields)


def test_claude_args_are_the_flags_claude_codes_own_lead_passes(tmp_path: Path) -> None:
    args = claude_teammate.claude_args(_member(tmp_path, allowed_tools=["Bash(git log:*)"]), TEAM,
                                       verify_key="1.abc", parent_session="s-1")
    assert args == ["--agent-id", f"bob@{TEAM}", "--agent-name", "bob", "--team-name", TEAM, "--agent-color", "blue",
                    "--parent-session-id", "s-1", "--lead-verify-key", "1.abc", "--agent-type", "reviewer",
                    "--permission-mode", "acceptEdits", "--model", "claude-sonnet-4-6",
                    "--allowed-tools", "Bash(git log:*)"]
    planned = claude_teammate.claude_args(_member(tmp_path, plan_mode_required=True), TEAM, verify_key="k",
                                          parent_session="s")
    assert "--plan-mode-required" in planned and planned[planned.index("--permission-mode") + 1] == "plan"
    sandboxed = claude_teammate.claude_args(_member(tmp_path), TEAM, verify_key="k", parent_session="s",
                                            sandbox=SandboxSettings.model_validate({"enabled": True}))
    assert sandboxed[-2:] == ["--settings", '{"sandbox": {"enabled": true}}']  # Claude Code's own sandbox
    assert claude_teammate.permission_args("bypassPermissions", False) == ["--dangerously-skip-permissions"]
    assert claude_teammate.permission_args("dontAsk", False) == ["--permission-mode", "default"]


def test_the_config_dir_shows_the_homes_teams_and_tasks_and_answers_first_run_dialogs(
        home: Home, tmp_path: Path) -> None:
    user_dir = tmp_path / "user-claude"
    user_dir.mkdir()
    (user_dir / ".credentials.json").write_text("{}")
    env = {"CLAUDE_CONFIG_DIR": str(user_dir), "ANTHROPIC_API_KEY": "sk-ant-api03-" + "x" * 30 + "TAIL-OF-THE-KEY-0123"}
    config = claude_teammate.config_dir(home, env)
    assert config == home.claude_config_dir
    assert (config / "teams").resolve() == home.teams_dir.resolve()
    assert (config / "tasks").resolve() == home.tasks_root.resolve()
    assert (config / ".credentials.json").resolve() == (user_dir / ".credentials.json").resolve()
    (config / ".claude.json").write_text(json.dumps({"theme": "light", "projects": {"/elsewhere": {"x": 1}}}))
    for _ in range(2):  # seeding twice changes nothing more
        claude_teammate.seed_config(config, tmp_path, env)
    seeded = json.loads((config / ".claude.json").read_text())
    assert seeded["hasCompletedOnboarding"] is True and seeded["theme"] == "light"
    assert seeded["projects"][str(tmp_path)]["hasTrustDialogAccepted"] is True
    assert seeded["projects"]["/elsewhere"] == {"x": 1}
    assert seeded["customApiKeyResponses"]["approved"] == ["TAIL-OF-THE-KEY-0123"]
    assert not (user_dir / ".claude.json").exists() and sorted(os.listdir(user_dir)) == [".credentials.json"]


def test_a_home_that_is_the_users_claude_dir_is_used_as_it_is(tmp_path: Path) -> None:
    user_dir = tmp_path / ".claude"
    home = Home(user_dir)
    member = _member(tmp_path)
    spec = claude_teammate.launch_spec(home, member, TEAM, binary=Path("/bin/true"), lead_session=None,
                                       env={"HOME": str(tmp_path)}, log_path=tmp_path / "log")
    assert "CLAUDE_CONFIG_DIR" not in spec.env  # Claude Code finds ~/.claude and ~/.claude.json itself
    assert not home.claude_config_dir.exists() and not (user_dir / ".claude.json").exists()
    spec = claude_teammate.launch_spec(home, member, TEAM, binary=Path("/bin/true"), lead_session=None,
                                       env={"CLAUDE_CONFIG_DIR": str(user_dir)}, log_path=tmp_path / "log")
    assert spec.env["CLAUDE_CONFIG_DIR"] == str(user_dir)


@needs_tmux
def test_spawn_runs_claude_in_a_pane_with_the_team_flags_and_a_signed_prompt(
        home: Home, tmp_path: Path, fake_claude: Path, tmux_socket: str) -> None:
    TeamStore(home).create(TEAM)
    env = {**os.environ, "ANTHROPIC_API_KEY": "sk-test", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
    member = spawn(home, SpawnRequest(team=TEAM, name="bob", prompt="review the code", cwd=tmp_path, runtime="claude",
                                      claude_bin=str(fake_claude), tmux_socket=tmux_socket, model="opus"), env)
    try:
        argv_file = Path(f"{fake_claude}.argv")
        retry_until(lambda: argv_file.exists() and Path(f"{fake_claude}.env").exists(), 10, what="the stand-in")
        argv = argv_file.read_text().splitlines()
        key = VerifyKey.parse(argv[argv.index("--lead-verify-key") + 1])
        assert key.created_ms == lead_key(home, TEAM).created_ms
        assert argv[argv.index("--agent-id") + 1] == f"bob@{TEAM}" and argv[argv.index("--model") + 1] == "opus"
        assert argv[argv.index("--team-name") + 1] == TEAM and argv[argv.index("--agent-color") + 1] == member.color
        seen = dict(line.split("=", 1) for line in Path(f"{fake_claude}.env").read_text().splitlines() if "=" in line)
        assert seen["CLAUDE_CONFIG_DIR"] == str(home.claude_config_dir)
        assert seen["CLAUDECODE"] == "1" and seen["CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS"] == "1"
        assert seen["SWARM_PROC_TOKEN"] == member.proc_token and seen["ANTHROPIC_API_KEY"] == "sk-test"
        assert seen["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
        (prompt,) = Mailbox(home, TEAM).read("bob")
        assert prompt.text == "review the code" and prompt.lead_sig and key.admits(prompt)
        entry = TeamStore(home).get(TEAM).member("bob")
        assert entry is not None and entry.runtime == "claude" and entry.backend_type == "tmux"
        assert entry.is_active is False and entry.status == "starting"  # Claude Code owns isActive
        assert {r.name: r.state for r in team_status(home, TEAM, env)}["bob"] == "starting"
    finally:
        (outcome,) = shutdown(home, TEAM, ["bob"], env, timeout=0.5)
    assert outcome.result in ("killed", "not_running")
    panes = subprocess.run(["tmux", "-S", tmux_socket, "list-panes", "-a"], capture_output=True, text=True)
    assert panes.stdout.strip() == ""


@pytest.mark.parametrize(("extra", "error"), [
    ('playbook = "p.toml"', "members[0]: playbook is for swarm teammates"),
    ('skills = ["x"]', "members[0]: skills is for swarm teammates"),
    ('backend = "subprocess"', "members[0]: a runtime = \"claude\" member runs in a tmux pane"),
])
def test_a_team_file_refuses_what_a_claude_member_cannot_use(tmp_path: Path, extra: str, error: str) -> None:
    (tmp_path / "p.toml").write_text("")
    path = tmp_path / "team.toml"
    path.write_text(f'[team]\nname = "t"\n[[members]]\nname = "bob"\nprompt = "x"\nruntime = "claude"\n{extra}\n')
    with pytest.raises(UsageError, match=re.escape(error)):
        load_upfile(path)
    path.write_text('[team]\nname = "t"\n[[members]]\nname = "bob"\nprompt = "x"\nclaude_bin = "/x"\n')
    with pytest.raises(UsageError, match='claude_bin only applies with runtime = "claude"'):
        load_upfile(path)
    path.write_text('[team]\nname = "t"\n[[members]]\nname = "bob"\nprompt = "x"\nruntime = "claude"\n'
                    'claude_bin = "/opt/claude"\n')
    (member,) = load_upfile(path).members
    assert member.runtime == "claude" and member.claude_bin == "/opt/claude"


@needs_tmux
def test_status_follows_claude_codes_busy_flag_and_a_dead_pane_is_reported_once(
        home: Home, tmp_path: Path, fake_claude: Path, tmux_socket: str) -> None:
    TeamStore(home).create(TEAM)
    env = {**os.environ, "ANTHROPIC_API_KEY": "sk-test"}
    member = spawn(home, SpawnRequest(team=TEAM, name="bob", prompt="work", cwd=tmp_path, runtime="claude",
                                      claude_bin=str(fake_claude), tmux_socket=tmux_socket), env)
    try:
        Mailbox(home, TEAM).take("bob")  # what Claude Code does with its initial prompt
        wait_joined(home, TEAM, ["bob"], timeout=10)
        states = {}
        for busy in (True, False):  # Claude Code flips isActive between turns
            TeamStore(home).update_member(TEAM, "bob", is_active=busy)
            states[busy] = {r.name: r.state for r in team_status(home, TEAM, env)}["bob"]
        assert states == {True: "busy", False: "idle"}
        assert TeamStore(home).get(TEAM).member("bob").present()  # type: ignore[union-attr]
        os.kill(member.pid or 0, signal.SIGKILL)  # the pane's process dies while idle
        retry_until(lambda: {r.name: r.state for r in team_status(home, TEAM, env)}["bob"] == "dead", 10,
                    what="bob to be found dead")
        team_status(home, TEAM, env)
        notices = [e.text for e in Mailbox(home, TEAM).read(LEAD_NAME) if "bob died" in e.text]
        assert len(notices) == 1
    finally:
        shutdown(home, TEAM, ["bob"], env, timeout=0.5)
