"""``swarm doctor``: the first command a new user runs, as they run it (the installed executable, a fake API)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from tests.fakes import FakeAnthropicServer
from tests.fakes.anthropic_server import error_reply, text_reply
from tests.forked import run_swarm


def doctor(tmp_path: Path, extra: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_CODE_USE_"))}
    return run_swarm(["doctor", *args], cwd=tmp_path, env={**env, **extra}, timeout=60)


def lines(done: subprocess.CompletedProcess[str]) -> dict[str, tuple[str, str]]:
    """Each check's line, by what it checks: (status, detail)."""
    found = {}
    for line in done.stdout.splitlines():
        status, what, detail = line.split(maxsplit=2)
        found[what] = (status, detail)
    return found


def test_a_bearer_token_and_an_answering_api_are_all_ok(tmp_path: Path, api: FakeAnthropicServer) -> None:
    api.enqueue(text_reply("h"))
    done = doctor(tmp_path, {"ANTHROPIC_AUTH_TOKEN": "tok", "ANTHROPIC_BASE_URL": api.base_url})
    assert done.returncode == 0, done.stdout + done.stderr
    found = lines(done)
    assert found["credentials"][0] == "ok" and "ANTHROPIC_AUTH_TOKEN" in found["credentials"][1]
    assert found["model"][0] == "ok" and "answered" in found["model"][1]
    assert found["home"][0] == "ok" and found["sandbox"][0] == "ok"  # .ci/run installs bubblewrap and socat
    assert set(found) >= {"credentials", "model", "tmux", "git", "ripgrep", "home", "claude-code", "sandbox"}
    [request] = api.requests
    assert request.body["max_tokens"] == 1 and request.headers["authorization"] == "Bearer tok"


def test_a_refusing_api_fails_with_its_real_error(tmp_path: Path, api: FakeAnthropicServer) -> None:
    api.enqueue(error_reply(401, "authentication_error", "invalid x-api-key"))
    done = doctor(tmp_path, {"ANTHROPIC_API_KEY": "bad", "ANTHROPIC_BASE_URL": api.base_url})
    assert done.returncode == 1
    status, detail = lines(done)["model"]
    assert status == "fail" and "401" in detail and "invalid x-api-key" in detail
    assert len(api.requests) == 1  # asked once, not retried


def test_no_credentials_is_a_warning_the_offline_model_still_runs(tmp_path: Path) -> None:
    done = doctor(tmp_path, {})
    assert done.returncode == 0, done.stdout
    found = lines(done)
    assert found["credentials"][0] == "warn" and "ANTHROPIC_API_KEY" in found["credentials"][1]
    assert found["model"][0] == "warn" and "offline" in found["model"][1]


def test_a_real_model_asked_without_credentials_fails(tmp_path: Path) -> None:
    done = doctor(tmp_path, {"ANTHROPIC_MODEL": "claude-opus-4-6"})
    assert done.returncode == 1
    status, detail = lines(done)["credentials"]
    assert status == "fail" and "ANTHROPIC_MODEL" in detail and "ANTHROPIC_API_KEY" in detail


def test_bedrock_without_its_extra_fails(tmp_path: Path) -> None:
    done = doctor(tmp_path, {"CLAUDE_CODE_USE_BEDROCK": "1", "AWS_REGION": "us-east-1"})
    assert done.returncode == 1
    status, detail = lines(done)["credentials"]
    assert status == "fail" and "anthropic[bedrock]" in detail


def test_a_home_that_cannot_be_written_fails(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    done = doctor(tmp_path, {"SWARM_HOME": str(tmp_path / "a-file" / "home")})
    assert done.returncode == 1
    status, detail = lines(done)["home"]
    assert status == "fail" and "a-file" in detail


def test_missing_tools_are_warnings_and_json_says_the_same(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    git = shutil.which("git")
    assert git is not None
    (bin_dir / "git").symlink_to(git)
    done = doctor(tmp_path, {"PATH": str(bin_dir), "SWARM_CLAUDE_BIN": ""}, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    by_check = {c["check"]: c for c in report["checks"]}
    assert {by_check[name]["status"] for name in ("tmux", "ripgrep", "claude-code", "sandbox")} == {"warn"}
    assert "bubblewrap (bwrap) is not installed" in by_check["sandbox"]["detail"]
    assert by_check["git"]["status"] == "ok" and report["ok"] is True
