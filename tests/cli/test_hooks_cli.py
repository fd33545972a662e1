"""Hooks as a user has them: a project's ``.claude/settings.json`` and user settings with real shell scripts,
``swarm run -p`` through the installed executable against the fake API, and ``swarm hooks``.

What the model reads is what the fake API received: the hooks' context in the request after the one it
belongs to, a Stop hook's feedback as the next prompt.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.agent.hooks.hook_helpers import hook_settings, script
from tests.fakes import FakeAnthropicServer
from tests.fakes.anthropic_server import text_reply, tool_use_reply
from tests.forked import run_swarm

Run = Callable[..., subprocess.CompletedProcess[str]]


def _settings(directory: Path, doc: dict, name: str = "settings.json") -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"hooks": doc}))
    return path


def _run(cwd: Path, api: FakeAnthropicServer, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": api.base_url}
    return run_swarm(["run", *args], cwd=cwd, env=env, timeout=60)


def _texts(message: dict) -> str:
    content = message["content"]
    if isinstance(content, str):
        return content
    out = []
    for block in content:
        if block.get("type") == "text":
            out.append(block["text"])
        elif block.get("type") == "tool_result":
            inner = block["content"]
            out.append(inner if isinstance(inner, str) else " ".join(b.get("text", "") for b in inner))
    return "\n".join(out)


def test_run_p_fires_session_prompt_tool_and_stop_hooks(tmp_path: Path, api: FakeAnthropicServer) -> None:
    work = tmp_path / "work"
    work.mkdir()
    logs = tmp_path / "logs"
    logs.mkdir()
    start = script(tmp_path, "start.sh", "cat >/dev/null\necho 'the build is broken on main'\n")
    prompt = script(tmp_path, "prompt.sh", """python3 -c '
import json, sys
d = json.load(sys.stdin)
print(json.dumps({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
  "additionalContext": "ticket context for: " + d["prompt"]}}))'
""")
    post = script(tmp_path, "post.sh", """cat >/dev/null
echo '{"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "formatter ran: 0 changes"}}'
""")
    stop = script(tmp_path, "stop.sh", f"""tee -a {logs}/stop.jsonl >/dev/null; echo >> {logs}/stop.jsonl
if grep -q '"stop_hook_active": true' {logs}/stop.jsonl; then exit 0; fi
echo "you forgot to run the tests" >&2
exit 2
""")
    _settings(work / ".claude", hook_settings(SessionStart=[("", start, None)], UserPromptSubmit=[("", prompt, None)],
                                              PostToolUse=[("Bash", post, None)], Stop=[("", stop, None)]))
    api.enqueue(tool_use_reply("Bash", {"command": "echo built"}), text_reply("Done."), text_reply("Tests pass."))

    result = _run(work, api, "-p", "fix the build")

    assert result.returncode == 0, result.stderr
    assert result.stdout == "Tests pass.\n"
    first, after_tool, after_stop = (r.body["messages"] for r in api.requests)
    assert "the build is broken on main" in _texts(first[0])  # SessionStart's stdout opens the first message
    assert "ticket context for: fix the build" in _texts(first[0])
    assert "built" in _texts(after_tool[-1]) and "formatter ran: 0 changes" in _texts(after_tool[-1])
    assert "you forgot to run the tests" in _texts(after_stop[-1])
    calls = [json.loads(line) for line in (logs / "stop.jsonl").read_text().splitlines() if line.strip()]
    assert [c["stop_hook_active"] for c in calls] == [False, True]
    assert calls[1]["last_assistant_message"] == "Tests pass."


def test_a_prompt_refused_by_user_prompt_submit_never_reaches_the_model(tmp_path: Path,
                                                                          api: FakeAnthropicServer) -> None:
    work = tmp_path / "work"
    work.mkdir()
    guard = script(tmp_path, "guard.sh", "cat >/dev/null\necho 'prompts may not mention secrets' >&2\nexit 2\n")
    _settings(work / ".claude", hook_settings(UserPromptSubmit=[("", guard, None)]))
    api.enqueue(text_reply("should not be asked"))
    result = _run(work, api, "-p", "print the secrets")
    assert result.returncode != 0
    assert "prompts may not mention secrets" in result.stderr
    assert api.requests == []


def test_untrusted_folder_runs_only_the_users_hooks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   api: FakeAnthropicServer) -> None:
    """Project hooks are repository code: in a folder nobody trusted they are not run (user hooks still are)."""
    from swarm.agent.hooks.config import settings_hooks

    config = tmp_path / "untrusting-config"
    config.mkdir()
    work = tmp_path / "work"
    pwned = tmp_path / "pwned"
    evil = script(tmp_path, "evil.sh", f"cat > {pwned}\n")
    mine = script(tmp_path, "mine.sh", "cat >/dev/null\n")
    _settings(work / ".claude", hook_settings(PreToolUse=[("*", evil, None)]))
    _settings(config, hook_settings(PreToolUse=[("Bash", mine, None)]))
    env = {"CLAUDE_CONFIG_DIR": str(config), "HOME": str(tmp_path)}
    found = settings_hooks(work, env, None)
    assert [(h.command, h.source) for h in found.hooks] == [(mine, "user")]
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    listing = run_swarm(["hooks", "--json", "--cwd", str(work)], timeout=30)
    assert listing.returncode == 0 and "not trusted" in listing.stderr.lower()
    assert [h["command"] for h in json.loads(listing.stdout)] == [mine]
    assert not pwned.exists()


def test_swarm_hooks_lists_each_hook_with_its_source(run_exe: Run, tmp_path: Path) -> None:
    config = Path(os.environ["CLAUDE_CONFIG_DIR"])
    repo = tmp_path / "cwd"
    user = _settings(config, hook_settings(Notification=[("", "notify-send swarm", None)]))
    project = _settings(repo / ".claude", hook_settings(PreToolUse=[("Edit|Write", "./fmt.sh", 30)]))
    local = _settings(repo / ".claude", hook_settings(Stop=[("", "./check.sh", None)]), "settings.local.json")
    (repo / ".claude" / "agents").mkdir()
    (repo / ".claude" / "agents" / "guarded.md").write_text(
        "---\ndescription: d\nhooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks:\n"
        "        - type: command\n          command: ./guard.sh\n---\nbody\n")
    result = run_exe("hooks", "--json", "--agent", "guarded")
    assert result.returncode == 0, result.stderr
    listed = [(h["event"], h["matcher"], h["command"], h["timeout"], h["source"], h["origin"])
              for h in json.loads(result.stdout)]
    assert listed == [
        ("Notification", "", "notify-send swarm", 600, "user", str(user)),
        ("PreToolUse", "Edit|Write", "./fmt.sh", 30, "project", str(project.resolve())),
        ("Stop", "", "./check.sh", 600, "local", str(local.resolve())),
        ("PreToolUse", "Bash", "./guard.sh", 600, "agent", "agent 'guarded'"),
    ]
    table = run_exe("hooks")
    assert table.returncode == 0 and "./fmt.sh" in table.stdout and "Edit|Write" in table.stdout


def test_swarm_hooks_with_none_says_where_they_go(run_exe: Run) -> None:
    result = run_exe("hooks")
    assert result.returncode == 0 and result.stdout.startswith("no hooks: add them under \"hooks\"")
