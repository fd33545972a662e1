"""``swarm doctor``: what a new user checks first, one ``Check`` each.

    credentials   which credentials reach Claude (``swarm.models.credentials``);
                  none: a warning (the offline model runs), unless a real model
                  was plainly asked for (then a failure, as ``swarm run`` would fail)
    model         a one-token request (``max_tokens=1``, no retries) through the
                  provider to the configured API; its real error if it refuses
    tmux, git, ripgrep, claude-code
                  found on PATH (a warning when missing: panes, worktrees, fast
                  Grep, mixed teams need them; the main job does not)
    home          the swarm home can be created and written
    sandbox       bubblewrap and socat are installed and a sandbox starts here
                  (``swarm.backends.sandbox.check``); a warning with how to fix it
                  when not (the sandbox is off unless asked for)

``failed`` is true when a check the main job needs fails (a ``fail``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel

from swarm.backends.sandbox import check
from swarm.core.home import Home
from swarm.core.text import flat
from swarm.errors import SwarmError
from swarm.models.anthropic_provider import AnthropicProvider
from swarm.models.retry_policy import RetryPolicy
from swarm.models.base import ModelRequest
from swarm.models.credentials import HOW_TO_SET, Credentials, find_credentials, real_model_asked
from swarm.models.messages import Message
from swarm.runtime.claude_teammate import find_claude

Status = Literal["ok", "warn", "fail"]
MODEL_TIMEOUT = 30.0
"""Seconds the one-token request may take."""
TOOLS = (("tmux", "tmux", "-V", "teammates in panes need it; they run as subprocesses without it"),
         ("git", "git", "--version", "worktrees (--worktree, isolation) need it"),
         ("ripgrep", "rg", "--version", "Grep falls back to a slower search without it"))
"""(check, binary, version flag, what is missed without it)."""


class Check(BaseModel):
    """One line of the report."""

    status: Status
    check: str
    detail: str


def run_checks(home: Home, env: Mapping[str, str], *, model: str | None = None) -> list[Check]:
    """Every check, in the order shown (see the module docstring)."""
    credentials, checks = _credentials(env, model)
    checks.append(_model(credentials, env, model))
    path = env.get("PATH", os.defpath)
    checks += [_tool(name, binary, flag, missed, path) for name, binary, flag, missed in TOOLS]
    checks += [_home(home), _claude_code(env), _sandbox(path)]
    return checks


def failed(checks: list[Check]) -> bool:
    """True when something the main job needs failed."""
    return any(c.status == "fail" for c in checks)


def _credentials(env: Mapping[str, str], model: str | None) -> tuple[Credentials | None, list[Check]]:
    found = find_credentials(env)
    if found is None:
        asked = real_model_asked(model, env)
        if asked is not None:
            return None, [Check(status="fail", check="credentials", detail=f"none, but {asked}; {HOW_TO_SET}")]
        return None, [Check(status="warn", check="credentials",
                            detail=f"none: only the offline scripted model runs; {HOW_TO_SET}")]
    try:
        found.check_extras()
    except SwarmError as exc:
        return None, [Check(status="fail", check="credentials", detail=flat(str(exc)))]
    where = {"bedrock": "Amazon Bedrock", "vertex": "Google Vertex AI"}.get(found.kind, "the Anthropic API")
    return found, [Check(status="ok", check="credentials", detail=f"{found.source} ({where})")]


def _model(credentials: Credentials | None, env: Mapping[str, str], model: str | None) -> Check:
    if credentials is None:
        return Check(status="warn", check="model", detail="not asked: no credentials (the offline model needs none)")
    try:
        with AnthropicProvider(model=model, env=env, retry=RetryPolicy(max_retries=0, overloaded_retries=0),
                               timeout=MODEL_TIMEOUT) as provider:
            provider.complete(ModelRequest(messages=[Message.user_text("Say ok.")], max_tokens=1))
            return Check(status="ok", check="model", detail=f"{provider.model} answered at {provider.base_url}")
    except SwarmError as exc:
        return Check(status="fail", check="model", detail=flat(str(exc)))


def _tool(name: str, binary: str, flag: str, missed: str, path: str) -> Check:
    found = shutil.which(binary, path=path)
    if found is None:
        return Check(status="warn", check=name, detail=f"no `{binary}` on PATH: {missed}")
    try:
        done = subprocess.run([found, flag], capture_output=True, text=True, timeout=10)
        version = flat(done.stdout.splitlines()[0]) if done.stdout.strip() else found
    except (OSError, subprocess.TimeoutExpired):
        version = found
    return Check(status="ok", check=name, detail=version)


def _home(home: Home) -> Check:
    try:
        home.root.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=home.root, prefix=".doctor-"):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        return Check(status="fail", check="home",
                     detail=f"{home.root} cannot be written ({reason}); set SWARM_HOME or --home to a writable folder")
    return Check(status="ok", check="home", detail=f"{home.root} is writable")


def _claude_code(env: Mapping[str, str]) -> Check:
    try:
        found = find_claude(None, env)
    except SwarmError as exc:
        return Check(status="warn", check="claude-code", detail=f"{flat(str(exc))} (only for mixed teams)")
    return Check(status="ok", check="claude-code", detail=str(found))


def _sandbox(path: str) -> Check:
    bwrap, socat = shutil.which("bwrap", path=path), shutil.which("socat", path=path)
    problem = check(bwrap or "bwrap", socat or "socat")
    if problem is not None:
        return Check(status="warn", check="sandbox", detail=f"{problem} (only for the Bash sandbox: --sandbox)")
    return Check(status="ok", check="sandbox", detail=f"bubblewrap ({bwrap}) and socat ({socat}): the Bash sandbox "
                 "starts here")
