"""An agent's Bash sandbox: what its settings allow, turned into the spec the backend runs commands in.

``effective_sandbox`` stacks the layers (settings files as the team recorded
them, the team file, the member, ``--sandbox``; then settings files changed
since, narrowing only: ``core.sandbox_config``). ``open_sandbox`` makes the
agent's ``Sandbox`` from it, or None when it is off — and when bubblewrap
cannot run here, a warning that says what is missing and how to install it
(an error with ``failIfUnavailable``).

A ``Sandbox`` decides, for one Bash call, whether it runs sandboxed
(``runs_sandboxed``: not when the model set ``dangerouslyDisableSandbox`` or
the command is one of ``excludedCommands``), whether it may leave the
sandbox at all (``refusal``), and builds the argv (``argv``) through the one
owner of bubblewrap, ``swarm.backends.sandbox``:

- writable: the call's cwd and the agent's write roots, ``allowWrite``, a
  temp directory of the sandbox's own, and for a git worktree its metadata in
  the main repository (``.git/worktrees/<name>``, ``objects``, ``refs``,
  ``logs``) so ``git commit`` works;
- pinned (bound onto itself, so it cannot be moved aside): each root's
  ``.git`` directory;
- read-only inside those: the permission layer's protected files
  (``paths.PROTECTED``): each root's ``.claude`` and ``.swarm`` whole
  (settings, agents, skills, commands; an empty stand-in when missing),
  ``.git`` config and hooks, a worktree's ``.git`` file and its
  ``commondir``/``gitdir``; and ``denyWrite``;
- hidden: ``denyRead`` plus ``DEFAULT_DENY_READ`` under ``$HOME`` (keys and
  cloud credentials), the swarm home's parts that are not this team's
  (other teams, sessions, the CLI server's socket, every team's lead key),
  and the tmux and user-runtime sockets a command could drive panes or
  services outside the sandbox through;
- network: only through the proxy (``swarm.backends.sandbox_proxy``), which
  lets ``allowedDomains`` through, refuses ``deniedDomains``, and asks
  ``ask_domain`` (if any: a teammate's gate rules on ``WebFetch(domain:HOST)``
  and asks the lead) about the rest — else refuses them with a 403 that says
  how to allow one. A host approved once stays approved for the agent's life.
"""

from __future__ import annotations

import fnmatch
import logging
import os
import shutil
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from swarm.agent.permissions.policy import RuleSet
from swarm.agent.permissions.rules import Rule, allow_cover, parse_rules
from swarm.agent.permissions.settings import settings_digests, settings_sandbox
from swarm.backends.procs import scratch_dir
from swarm.backends.sandbox import SandboxSpec, check, stand_ins, tidy, wrap
from swarm.backends.sandbox_proxy import SandboxProxy
from swarm.core.home import Home
from swarm.core.sandbox_config import (
    ResolvedSandbox,
    SandboxFilesystem,
    SandboxSettings,
    layered,
    narrowed,
    resolved,
)
from swarm.core.signing import KEY_FILE
from swarm.errors import UsageError

log = logging.getLogger(__name__)

DEFAULT_DENY_READ = ("~/.ssh", "~/.aws", "~/.config/gcloud", "~/.azure", "~/.gnupg", "~/.kube", "~/.docker",
                     "~/.netrc", "~/.git-credentials", "~/.config/gh")
"""Credentials no sandboxed command reads, whatever the settings say."""
READ_ONLY_FILES = (".git/config", ".git/config.worktree")
"""Protected files (``paths.PROTECTED``) kept read-only inside a writable root when they exist (``.claude`` and
``.swarm`` are read-only whole: ``CONFIG_DIRS``)."""
CONFIG_DIRS = (".claude", ".swarm")
"""The project configuration directories (settings, agents, skills, commands): read-only inside a writable root
whole, and one that does not exist is an empty read-only stand-in, so no configuration file can appear; a write
root inside one (an agent's memory directory) stays writable."""
WORKTREE_WRITABLE = ("objects", "refs", "logs")
"""What a linked worktree's commit writes in the main repository's ``.git`` besides its own metadata."""


NETWORK_TOOL = "WebFetch"
"""The tool a sandboxed command's network access is asked and ruled as: ``WebFetch(domain:HOST)``, as in Claude
Code, allows ``HOST`` (``permissions.rules``)."""


class NetworkInput(BaseModel):
    """What a permission request for a sandboxed command's connection carries."""

    url: str


def network_input(host: str, port: int) -> dict[str, Any]:
    """``http://host``, ``https://host``, or ``tcp://host:port`` for any other port."""
    shown = {80: f"http://{host}", 443: f"https://{host}"}.get(port, f"tcp://{host}:{port}")
    return {"url": shown}


def sandbox_facts(sandbox: Sandbox | None, tool: str, args: Mapping[str, Any], cwd: Path) -> dict[str, Any]:
    """What the permission policy needs to know about the sandbox for one call (``CallFacts`` fields)."""
    if sandbox is None or tool != "Bash":
        return {}
    command, disable = str(args.get("command", "")), bool(args.get("dangerouslyDisableSandbox"))
    return {"sandboxed": sandbox.auto_allowed(command, disable, cwd), "sandbox_refusal": sandbox.refusal(disable) or ""}


def rule_paths(rules: RuleSet) -> SandboxSettings:
    """The filesystem part Claude Code merges from permission rules: ``Edit(path)`` allow rules add to
    ``allowWrite``, ``Edit(path)`` deny rules to ``denyWrite``, ``Read(path)`` deny rules to ``denyRead``.
    ``//abs`` is absolute, ``~/x`` under ``$HOME``, ``/x`` and ``x`` relative to the cwd; a trailing ``/**`` is the
    directory; other globs are skipped."""
    def paths(found: Sequence[Rule], tool: str) -> list[str] | None:
        out = [_rule_path(r.content) for r in found if r.tool == tool and r.content]
        return [p for p in out if p is not None] or None

    return SandboxSettings(filesystem=SandboxFilesystem(
        allow_write=paths(rules.allow, "Edit"), deny_write=paths(rules.deny, "Edit"),
        deny_read=paths(rules.deny, "Read")))


def _rule_path(content: str) -> str | None:
    absolute = content.startswith("//")
    path = content[2:] if absolute else content
    path = "" if path == "**" else path.removesuffix("/**")
    if any(c in path for c in "*?["):
        return None
    if absolute:
        return "/" + path
    return path if path.startswith("~/") else path.lstrip("/") or "."


def effective_sandbox(files: tuple[SandboxSettings, SandboxSettings], *layers: SandboxSettings | None
                      ) -> ResolvedSandbox:
    """Settings files as recorded, then ``layers`` (team, member, flag) on top, then changed files narrowing."""
    recorded, changed = files
    stacked = recorded
    for layer in layers:
        stacked = layered(stacked, layer)
    return resolved(narrowed(stacked, changed))


def own_sandbox(cwd: Path, env: Mapping[str, str], *, flag: bool, home: Home | None = None,
                warn: Callable[[str], None] | None = None,
                ask_domain: Callable[[str, int], bool] | None = None) -> Sandbox | None:
    """The sandbox of a process's own agent (``swarm run``): ``cwd``'s settings files as they are now (the person
    runs there), ``--sandbox`` on top; ``ask_domain``: who is asked about a host not allowed (the person, in the
    interactive session; none headless)."""
    policy = effective_sandbox(settings_sandbox(cwd, settings_digests(cwd), env=env),
                               SandboxSettings(enabled=True) if flag else None)
    return open_sandbox(policy, env=env, home=home, warn=warn, ask_domain=ask_domain)


def open_sandbox(policy: ResolvedSandbox, *, env: Mapping[str, str], home: Home | None = None,
                 team: str | None = None, warn: Callable[[str], None] | None = None,
                 ask_domain: Callable[[str, int], bool] | None = None,
                 bwrap: str = "bwrap", socat: str = "socat") -> Sandbox | None:
    """The agent's sandbox, or None when it is off or cannot run here (said through ``warn``)."""
    if not policy.enabled:
        return None
    problem = check(bwrap, socat)
    if problem is not None:
        if policy.fail_if_unavailable:
            raise UsageError(f"the Bash sandbox is on but cannot run: {problem} (sandbox.failIfUnavailable is set)")
        (warn or log.warning)(f"the Bash sandbox is on but cannot run, so commands run unsandboxed and ask as "
                              f"usual: {problem}")
        return None
    return Sandbox(policy, env=env, home=home, team=team, ask_domain=ask_domain, bwrap=bwrap, socat=socat)


class Sandbox:
    """One agent's sandbox (its subagents share it); ``close`` stops its proxy and removes its temp directory."""

    def __init__(self, policy: ResolvedSandbox, *, env: Mapping[str, str], home: Home | None = None,
                 team: str | None = None, ask_domain: Callable[[str, int], bool] | None = None,
                 resolve: Mapping[str, str] | None = None, bwrap: str = "bwrap", socat: str = "socat") -> None:
        self.policy = policy
        self.env = dict(env)
        self.home = home
        self.team = team
        self.ask_domain = ask_domain
        self.resolve = dict(resolve or {})
        self.bwrap, self.socat = bwrap, socat
        self._dir = scratch_dir("sandbox")  # named after a teammate's token: swept if it is killed
        self.tmp_dir = self._dir / "tmp"
        self.tmp_dir.mkdir()
        self._proxy: SandboxProxy | None = None
        self._lock = threading.Lock()
        self._running = 0
        self._made: set[Path] = set()
        self._asked_yes: set[str] = set()
        self._excluded = parse_rules([_as_rule(p) for p in policy.excluded_commands])

    # -- per call --------------------------------------------------------------

    def runs_sandboxed(self, command: str, disable: bool, cwd: Path) -> bool:
        """Does this Bash call run inside the sandbox (not asked out of it, not an excluded command)?"""
        if disable and self.policy.allow_unsandboxed_commands:
            return False
        return not (self._excluded and allow_cover(self._excluded, "Bash", {"command": command}, cwd))

    def auto_allowed(self, command: str, disable: bool, cwd: Path) -> bool:
        """Does a sandboxed run need no prompt (``autoAllowBashIfSandboxed``; deny and ask rules still apply)?"""
        return self.policy.auto_allow_bash_if_sandboxed and self.runs_sandboxed(command, disable, cwd)

    def refusal(self, disable: bool) -> str | None:
        """Why a call asking to leave the sandbox is refused, or None."""
        if disable and not self.policy.allow_unsandboxed_commands:
            return ("dangerouslyDisableSandbox is not allowed here (sandbox.allowUnsandboxedCommands is false); "
                    "run the command inside the sandbox")
        return None

    def argv(self, shell: str, command: str, cwd: Path, roots: Sequence[Path] | None) -> list[str]:
        """The argv that runs ``command`` in the sandbox for a call in ``cwd`` by an agent with ``roots``."""
        return wrap(self.spec(cwd, roots), shell, command, bwrap=self.bwrap, socat=self.socat)

    def enter(self, shell: str, command: str, cwd: Path, roots: Sequence[Path] | None, *,
              background: bool = False) -> SandboxedRun:
        """One sandboxed run: its argv, and ``finished`` to call when it ended (a background run ends with
        the sandbox). The empty mount points a run leaves are removed once none runs."""
        spec = self.spec(cwd, roots)
        with self._lock:
            self._running += 1
            self._made.update(stand_ins(spec))
        run = SandboxedRun(wrap(spec, shell, command, bwrap=self.bwrap, socat=self.socat), self)
        return run if not background else SandboxedRun(run.argv, None)

    def _ended(self) -> None:
        with self._lock:
            self._running -= 1
            if self._running == 0:
                tidy(sorted(self._made, key=lambda p: len(p.parts), reverse=True))
                self._made.clear()

    def spec(self, cwd: Path, roots: Sequence[Path] | None) -> SandboxSpec:
        """What a call in ``cwd`` by an agent with write roots ``roots`` may write, may not, and may not read.

        The protections of a project (its ``.claude``, ``.swarm``, ``.git``) apply in the cwd and each write root
        (not in a write root inside another's ``.claude``, a memory directory, nor in ``allowWrite`` paths)."""
        base = list(dict.fromkeys([cwd.resolve(), *(Path(r).resolve() for r in roots or [])]))
        projects = [r for r in base if not any(r.is_relative_to(o / top) for o in base for top in CONFIG_DIRS)]
        writable = list(dict.fromkeys([*base, *self._paths(self.policy.allow_write, cwd)]))
        read_only: list[Path] = [*self._paths(self.policy.deny_write, cwd)]
        read_only_dirs: list[Path] = []
        for root in projects:
            meta, fixed = _git_metadata(root)
            writable += meta
            read_only += fixed + [root / name for name in READ_ONLY_FILES]
            read_only_dirs += [root / top for top in CONFIG_DIRS]  # missing: an empty read-only stand-in
            if (root / ".git").is_dir():
                read_only_dirs.append(root / ".git" / "hooks")
        return SandboxSpec(writable=writable, read_only=read_only, read_only_dirs=read_only_dirs,
                           pinned=[root / ".git" for root in projects], hidden=self._hidden(cwd, writable),
                           proxy_socket=self._proxy_socket(), tmp_dir=self.tmp_dir)

    # -- network -----------------------------------------------------------------

    def domain_refusal(self, host: str, port: int) -> str | None:
        """Why the proxy refuses ``host`` (None: it may connect): denied > allowed > asked > refused."""
        if _matches(host, self.policy.denied_domains):
            return "it is in sandbox.network.deniedDomains"
        if _matches(host, self.policy.allowed_domains):
            return None
        if host in self._asked_yes:
            return None
        if self.ask_domain is not None and self.ask_domain(host, port):
            self._asked_yes.add(host)  # approved once: for the rest of this agent's life (always: a rule too)
            return None
        return (f"{host} is not in sandbox.network.allowedDomains; add it there (or to the team's [sandbox.network] "
                "allowedDomains) to allow it")

    def _proxy_socket(self) -> Path:
        if self._proxy is None:
            self._proxy = SandboxProxy(self._dir / "proxy.sock", self.domain_refusal, self.resolve)
        return self._proxy.socket_path

    def close(self) -> None:
        """Stop the proxy, remove the mount points and the temp directory (after the agent's commands stopped)."""
        if self._proxy is not None:
            self._proxy.close()
            self._proxy = None
        with self._lock:
            tidy(sorted(self._made, key=lambda p: len(p.parts), reverse=True))
            self._made.clear()
        shutil.rmtree(self._dir, ignore_errors=True)


    # -- paths -------------------------------------------------------------------

    def _paths(self, values: Sequence[str], cwd: Path) -> list[Path]:
        """Settings paths made absolute: ``~`` is ``$HOME``, relative ones are in ``cwd``; globs are skipped."""
        found = []
        for value in values:
            if any(c in value for c in "*?["):
                log.warning("sandbox paths with wildcards are not supported; ignored", extra={"path": value})
                continue
            text = str(Path(self.env.get("HOME", "~")) / value[2:]) if value.startswith("~/") else value
            path = Path(text)
            found.append(path if path.is_absolute() else cwd / path)
        return found

    def _hidden(self, cwd: Path, writable: Sequence[Path]) -> list[Path]:
        hidden = self._paths([*DEFAULT_DENY_READ, *self.policy.deny_read], cwd)
        uid = os.getuid()
        tmux_dir = Path(self.env.get("TMUX_TMPDIR") or "/tmp") / f"tmux-{uid}"
        hidden += [Path(f"/run/user/{uid}"), tmux_dir, Path("/var/run/docker.sock"), Path("/run/docker.sock")]
        if self.env.get("TMUX"):
            hidden.append(Path(self.env["TMUX"].split(",")[0]).parent)
        if self.home is not None:
            hidden += [self.home.run_dir, self.home.sessions_dir, self.home.claude_config_dir]
            teams = self.home.teams_dir
            if teams.is_dir():
                hidden += [p for p in teams.iterdir() if p.name != self.team]
                hidden += [p / KEY_FILE for p in teams.iterdir() if p.name == self.team]
            tasks = self.home.tasks_root
            if tasks.is_dir():
                hidden += [p for p in tasks.iterdir() if p.name != self.team]
        return [p for p in hidden if not any(w == p.resolve() or w.is_relative_to(p.resolve()) for w in writable)]


def _git_metadata(root: Path) -> tuple[list[Path], list[Path]]:
    """For a linked worktree at ``root``: (what a commit writes in the main ``.git``, what stays read-only there)."""
    marker = root / ".git"
    if not marker.is_file():
        return [], []
    try:
        line = marker.read_text().strip()
    except OSError:
        return [], [marker]
    if not line.startswith("gitdir:"):
        return [], [marker]
    gitdir = Path(line.removeprefix("gitdir:").strip())
    gitdir = gitdir if gitdir.is_absolute() else (root / gitdir).resolve()
    try:
        common = (gitdir / (gitdir / "commondir").read_text().strip()).resolve()
    except OSError:
        common = gitdir.parent.parent
    writable = [gitdir, *(common / name for name in WORKTREE_WRITABLE)]
    fixed = [marker, *(gitdir / name for name in ("commondir", "gitdir", "config.worktree"))]
    return writable, fixed


def _as_rule(pattern: str) -> str:
    """An ``excludedCommands`` entry as a Bash rule: ``docker`` covers ``docker`` and ``docker ...``."""
    if pattern.startswith("Bash("):
        return pattern
    return f"Bash({pattern})" if pattern.endswith((":*", "*")) else f"Bash({pattern}:*)"


def _matches(host: str, patterns: Sequence[str]) -> bool:
    """``example.com`` matches itself; ``*.example.com`` its subdomains (not itself)."""
    host = host.lower().rstrip(".")
    return any(fnmatch.fnmatchcase(host, p.lower().rstrip(".")) for p in patterns)


class SandboxedRun:
    """A command's sandboxed argv; ``finished`` tells the sandbox it ended (once; a background run's never does)."""

    def __init__(self, argv: list[str], sandbox: Sandbox | None) -> None:
        self.argv = argv
        self._sandbox = sandbox

    def finished(self) -> None:
        if self._sandbox is not None:
            self._sandbox._ended()
            self._sandbox = None
