"""A Claude Code CLI session as a swarm teammate (``runtime = "claude"``): what differs from swarm's own.

Spawn asks this module three things and otherwise treats the teammate like any other
(member entry, signed initial prompt in its inbox, pane, shutdown, worktree):

- **which binary**: ``--claude-bin`` > ``$SWARM_CLAUDE_BIN`` > ``claude`` on ``PATH``
  (``find_claude``); none is a one-line ``UsageError`` before anything is made;
- **which Claude Code config dir** (``config_dir``): the process must see the swarm
  home's ``teams/`` and ``tasks/`` there. When the home *is* the user's Claude Code
  config dir (``$CLAUDE_CONFIG_DIR``, else ``~/.claude``), the teammate runs on it as the
  user's own sessions do and swarm writes nothing there. Otherwise swarm keeps a config dir
  of its own, ``<home>/claude/``: ``teams`` and ``tasks`` are symlinks to the home's, a
  ``.credentials.json`` symlink points at the user's Claude login when there is one, and
  its ``.claude.json`` is seeded so that no first-run dialog waits for a keypress
  (onboarding done, the teammate's directory trusted, ``$ANTHROPIC_API_KEY`` approved);
- **which command line** (``launch_spec``): the flags and environment Claude Code's own
  lead starts a pane teammate with (docs/protocol.md, "Claude Code
  interop"). A Claude Code teammate is a terminal program: it needs tmux.

What Claude Code leaves in ``<home>/claude/`` (session transcripts under ``projects/``,
``sessions/``, backups) stays there; the user's ``~/.claude`` is not touched.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from swarm.backends import git
from swarm.backends.base import LaunchSpec
from swarm.backends.select import tmux_usable
from swarm.core.document_codecs import ObjectCodec
from swarm.core.home import Home, ensure_dir
from swarm.core.jsonfile import LockedJsonFile
from swarm.core.mailbox import Mailbox
from swarm.core.names import LEAD_NAME
from swarm.core.protocol import CLAUDE_JOINED, Member
from swarm.core.sandbox_config import SandboxSettings, layered
from swarm.core.signing import verify_key_arg
from swarm.core.teams import TeamStore
from swarm.errors import BackendError, StorageError, UsageError
from swarm.runtime.env import teammate_env
from swarm.runtime.member_kinds import MemberKind

log = logging.getLogger(__name__)

CLAUDE_BIN_VAR = "SWARM_CLAUDE_BIN"
"""Environment variable naming the ``claude`` binary (below ``--claude-bin``, above ``PATH``)."""
CONFIG_DIR_VAR = "CLAUDE_CONFIG_DIR"
SHARED = ("teams", "tasks")
"""Directories of the swarm home a Claude Code config dir must show."""
CREDENTIALS = ".credentials.json"
"""Where Claude Code keeps a login (Linux; macOS keeps it in the keychain)."""
GLOBAL_CONFIG = ".claude.json"
API_KEY_SUFFIX = 20
"""Claude Code remembers an approved API key by its last 20 characters."""
TEAM_ENV = {"CLAUDECODE": "1", "CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS": "1", "CLAUDE_CODE_ENABLE_TODO_TOOLS": "1"}
"""What Claude Code's own lead sets for a pane teammate, and the task tools (TaskList, TaskUpdate ...),
which Claude Code leaves out for some models unless asked: a swarm team shares its task list."""
FORWARDED_PREFIXES = ("CLAUDE_CODE_",)
"""Claude Code's own settings (provider choice, timeouts) pass through to the teammate."""
CREDENTIAL_VARS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CODE_USE_BEDROCK",
                   "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_USE_FOUNDRY")
"""Any of these set means Claude Code has a way to reach a model without a login."""
NO_TMUX = ("a claude teammate runs in a tmux pane (Claude Code is a terminal program), and tmux 3.2+ "
           "is not usable here; install tmux, or spawn a swarm teammate (--runtime swarm)")


def find_claude(explicit: str | None, env: Mapping[str, str]) -> Path:
    """The ``claude`` binary to run; a one-line ``UsageError`` when there is none."""
    chosen, source = (explicit, "--claude-bin") if explicit else (env.get(CLAUDE_BIN_VAR), f"${CLAUDE_BIN_VAR}")
    if not chosen:
        found = shutil.which("claude", path=env.get("PATH", os.defpath))
        if found is None:
            raise UsageError("Claude Code is not installed: no `claude` on PATH; install it "
                             "(npm install -g @anthropic-ai/claude-code), or name it with --claude-bin "
                             f"or ${CLAUDE_BIN_VAR}")
        return Path(found).absolute()
    path = Path(chosen).expanduser()
    if "/" not in chosen:
        path = Path(shutil.which(chosen, path=env.get("PATH", os.defpath)) or chosen)
    if not path.is_file() or not os.access(path, os.X_OK):
        raise UsageError(f"{source} {chosen!r} is not an executable file; point it at the `claude` binary")
    return path.absolute()


def swarm_only(given: Mapping[str, object]) -> str | None:
    """The reason a claude teammate cannot have the first of ``given`` (its name -> value) that is set; None: none is."""
    for what, value in given.items():
        if value:
            return f"{what} is for swarm teammates; a claude teammate runs Claude Code's own model and skills"
    return None


def preflight(claude_bin: str | None, backend: str, env: Mapping[str, str]) -> Path:
    """Everything a claude teammate needs before anything is made for it: its binary, tmux, credentials."""
    binary = find_claude(claude_bin, env)
    check_backend(backend, env)
    check_credentials(env)
    return binary


def check_credentials(env: Mapping[str, str]) -> None:
    """A one-line ``UsageError`` when Claude Code would find no way to reach a model here.

    An API key or token in the environment, a provider switch (Bedrock, Vertex ...), or the
    user's Claude login (``.credentials.json`` in their config dir; on macOS the keychain,
    which cannot be checked from here) will do.
    """
    if any(env.get(name) for name in CREDENTIAL_VARS) or sys.platform == "darwin":
        return
    if (user_config_dir(env) / CREDENTIALS).is_file():
        return
    raise UsageError("Claude Code has no credentials here: set ANTHROPIC_API_KEY, or log in once by running "
                     f"`claude` (its /login), which leaves {user_config_dir(env) / CREDENTIALS}")


def check_backend(backend: str, env: Mapping[str, str]) -> None:
    """A claude teammate needs tmux: ``subprocess`` is a UsageError, a missing tmux a BackendError."""
    if backend == "subprocess":
        raise UsageError("a claude teammate runs in a tmux pane (Claude Code is a terminal program); "
                         "use --backend tmux or auto")
    if not tmux_usable(env):
        raise BackendError(NO_TMUX)


# -- the config dir -----------------------------------------------------------------


def user_config_dir(env: Mapping[str, str]) -> Path:
    """The user's Claude Code config dir: ``$CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
    chosen = env.get(CONFIG_DIR_VAR)
    base = Path(chosen).expanduser() if chosen else Path(env.get("HOME") or Path.home()) / ".claude"
    return base.absolute()


def home_is_user_config(home: Home, env: Mapping[str, str]) -> bool:
    return _same(home.root, user_config_dir(env))


def config_dir(home: Home, env: Mapping[str, str]) -> Path:
    """The Claude Code config dir a teammate of ``home`` runs with (see the module docstring)."""
    if home_is_user_config(home, env):
        return home.root
    managed = ensure_dir(home.claude_config_dir)
    for name in SHARED:
        _link(managed / name, ensure_dir(home.root / name))
    login = user_config_dir(env) / CREDENTIALS
    if login.is_file():
        _link(managed / CREDENTIALS, login)
    return managed


def _link(link: Path, target: Path) -> None:
    """Make ``link`` a symlink to ``target`` (kept when it already is one); anything else there is an error."""
    if link.is_symlink():
        if _same(link.resolve(), target):
            return
        link.unlink()
    elif link.exists():
        raise StorageError(f"{link} is in the way of swarm's link to {target}; move it aside")
    try:
        link.symlink_to(target)
    except FileExistsError:  # another spawn linked it meanwhile
        pass
    except OSError as exc:
        raise StorageError(f"cannot link {link} to {target}: {exc.strerror or exc}") from exc


def seed_config(directory: Path, cwd: Path, env: Mapping[str, str]) -> None:
    """Mark onboarding done, ``cwd`` (and its repository) trusted and ``$ANTHROPIC_API_KEY`` approved.

    Only swarm's own config dir is seeded: these answer Claude Code's first-run dialogs, which
    a teammate in a pane nobody watches would otherwise wait on forever. The user's own
    config dir is left as the user keeps it.
    """
    trusted = {str(cwd)} | _repo_root(cwd)
    key = env.get("ANTHROPIC_API_KEY", "").strip()

    def seed(config: dict[str, Any]) -> None:
        config["hasCompletedOnboarding"] = True
        projects = config.setdefault("projects", {})
        for path in trusted:
            projects.setdefault(path, {})["hasTrustDialogAccepted"] = True
        if key:
            responses = config.setdefault("customApiKeyResponses", {"approved": [], "rejected": []})
            approved = responses.setdefault("approved", [])
            if key[-API_KEY_SUFFIX:] not in approved:
                approved.append(key[-API_KEY_SUFFIX:])

    LockedJsonFile(directory / GLOBAL_CONFIG, ObjectCodec(), indent=2).update(seed)


def _repo_root(cwd: Path) -> set[str]:
    """The top of the git checkout ``cwd`` is in (Claude Code may key trust by it), if any."""
    try:
        return {git.git(cwd, "rev-parse", "--show-toplevel").strip()}
    except BackendError:  # not a checkout (or no git): the directory alone is trusted
        return set()


def _same(a: Path, b: Path) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


# -- the command line -----------------------------------------------------------------


def claude_args(member: Member, team: str, *, verify_key: str, parent_session: str,
                sandbox: SandboxSettings | None = None) -> list[str]:
    """The team flags of a pane teammate, as Claude Code's own lead passes them; ``sandbox`` (the team's and the
    member's ``sandbox`` settings) goes to Claude Code's own sandbox through ``--settings``."""
    args = ["--agent-id", member.agent_id, "--agent-name", member.name, "--team-name", team]
    if member.color:
        args += ["--agent-color", member.color]
    args += ["--parent-session-id", parent_session, "--lead-verify-key", verify_key]
    if member.plan_mode_required:
        args.append("--plan-mode-required")
    if member.agent_type:
        args += ["--agent-type", member.agent_type]
    args += permission_args(member.mode or "default", member.plan_mode_required)
    if member.model:
        args += ["--model", member.model]
    for flag, rules in (("--allowed-tools", member.allowed_tools), ("--disallowed-tools", member.disallowed_tools)):
        for rule in rules or []:
            args += [flag, rule]
    if sandbox is not None and sandbox.wire():
        args += ["--settings", json.dumps({"sandbox": sandbox.wire()})]
    return args


def permission_args(mode: str, plan_mode_required: bool) -> list[str]:
    """Claude Code's mapping: plan required -> ``plan``; ``plan``/``dontAsk`` alone -> ``default``."""
    if plan_mode_required:
        return ["--permission-mode", "plan"]
    if mode == "bypassPermissions":
        return ["--dangerously-skip-permissions"]
    return ["--permission-mode", "default" if mode in ("plan", "dontAsk") else mode]


def claude_env(home: Home, env: Mapping[str, str], config: Path, token: str | None) -> dict[str, str]:
    """The teammate's variables: swarm's forwarded ones, Claude Code's own, the team switch, its config dir."""
    out = teammate_env(env, str(home.root), token)
    out.update({k: v for k, v in env.items() if k.startswith(FORWARDED_PREFIXES)})
    out.update(TEAM_ENV)
    if home_is_user_config(home, env) and CONFIG_DIR_VAR not in env:
        out.pop(CONFIG_DIR_VAR, None)  # the default ~/.claude: Claude Code finds it (and ~/.claude.json) itself
    else:
        out[CONFIG_DIR_VAR] = str(config)
    return out


def launch_spec(home: Home, member: Member, team: str, *, binary: Path, lead_session: str | None,
                env: Mapping[str, str], log_path: Path, team_sandbox: SandboxSettings | None = None) -> LaunchSpec:
    """Everything the pane needs to run ``member`` as a Claude Code teammate (its config dir made ready);
    ``team_sandbox``: the team's ``sandbox`` settings, under the member's own."""
    cwd = Path(member.cwd)
    config = config_dir(home, env)
    if not home_is_user_config(home, env):
        seed_config(config, cwd, env)
    sandbox = layered(team_sandbox, member.sandbox) if team_sandbox is not None else member.sandbox
    args = claude_args(member, team, verify_key=verify_key_arg(home, team),
                       parent_session=lead_session or str(uuid.uuid4()), sandbox=sandbox)
    return LaunchSpec(argv=[str(binary), *args], env=claude_env(home, env, config, member.proc_token), cwd=cwd,
                      team=team, name=member.name, log_path=log_path, color=member.color)


def joined(home: Home, team: str, teammate: MemberKind) -> bool:
    """Has claude teammate ``teammate`` joined? Its pane's process runs and it took its initial prompt; then it
    is marked ``running`` (``Member.present``). False for any other kind of member."""
    member = teammate.member
    if teammate.kind != "claude-pane" or not teammate.process_runs():
        return False
    if member.status == CLAUDE_JOINED:
        return True
    if any(e.sender == LEAD_NAME and e.text == member.prompt for e in Mailbox(home, team).pending(member.name)):
        return False
    TeamStore(home).update_member(team, member.name, status=CLAUDE_JOINED)
    log.info("claude teammate joined", extra={"team": team, "agent_id": member.agent_id, "pane_id": member.tmux_pane_id})
    return True
