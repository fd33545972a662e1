"""Team definition files for ``swarm up`` (TOML).

    [team]
    name = "review"
    description = "what the team is for"
    max_cost = 5.0              # US dollars: no new model call once the team has spent this
    max_concurrent_requests = 4 # model requests the whole team has in flight at most (default 6)
    stall_after = 600           # seconds: a teammate holding a task in progress that does nothing is nudged

    [lead]                      # optional
    shutdown_timeout = 30       # seconds teammates get to stop
    [lead.policy]               # answers permission requests without asking
    allow = ["Bash(git status:*)"]
    deny = ["Bash(rm:*)"]
    plans = "ask"               # ask | approve | deny

    [permissions]               # optional: rules every teammate applies itself
    allow = []
    deny = []
    ask = []

    [sandbox]                   # optional: Claude Code's `sandbox` settings for every teammate's Bash
    enabled = true
    [sandbox.filesystem]
    allowWrite = ["~/.cache/pip"]
    [sandbox.network]
    allowedDomains = ["pypi.org", "*.pythonhosted.org"]

    [[members]]
    name = "alice"
    prompt = "review src/ for bugs and report to team-lead"
    playbook = "playbooks/alice.toml"   # offline scripted model; relative to this file
    model = "claude-sonnet-4-6"         # used instead when ANTHROPIC_API_KEY is set
    agent_type = "reviewer"
    backend = "auto"                    # auto | tmux | subprocess
    worktree = false
    permission_mode = "default"
    plan_mode_required = false
    cwd = "."                           # relative to where `swarm up` runs
    color = "blue"
    allowed_tools = []
    disallowed_tools = []
    skills = ["release-notes"]          # skills whose instructions are preloaded into its system prompt
    sandbox = { enabled = true }        # this member's own `sandbox` settings, on top of the team's
    restart = "on-failure"              # no | on-failure | always: started again when it dies (with backoff)
    max_restarts = 3                    # then the lead is told and it stays down

    [[members]]
    name = "bob"
    prompt = "..."
    runtime = "claude"                  # a Claude Code CLI session in a tmux pane (no playbook, no skills)
    claude_bin = "~/bin/claude"         # default: $SWARM_CLAUDE_BIN, else claude on PATH

Validation errors name the file, the field and what is expected.
"""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictBool,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from swarm.agent.permissions.policy import PERMISSION_MODES
from swarm.agent.permissions.rules import Rule
from swarm.core.jsonfile import decode_toml
from swarm.core.names import LEAD_NAME, validate_name
from swarm.core.protocol import CLAUDE_RUNTIME, COLORS
from swarm.core.sandbox_config import SandboxSettings
from swarm.errors import InvalidNameError, NotFoundError, UsageError
from swarm.models.team_gate import GateLimits
from swarm.runtime.claude_teammate import swarm_only
from swarm.runtime.restart_policy import DEFAULT_MAX_RESTARTS, RestartPolicy


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _rules(values: list[str]) -> list[str]:
    for text in values:
        try:
            Rule.parse(text)
        except UsageError as exc:
            raise ValueError(str(exc)) from exc
    return values


class RuleTable(_Strict):
    allow: list[str] = []
    deny: list[str] = []
    ask: list[str] = []

    _check = field_validator("allow", "deny", "ask")(_rules)


class PolicyTable(_Strict):
    allow: list[str] = []
    deny: list[str] = []
    plans: Literal["ask", "approve", "deny"] = "ask"

    _check = field_validator("allow", "deny")(_rules)


class LeadTable(_Strict):
    shutdown_timeout: float = Field(default=30.0, gt=0)
    policy: PolicyTable = PolicyTable()


class TeamTable(_Strict):
    name: str
    description: str | None = None
    store: str | None = None
    """Where the team keeps its state: ``files`` (the default) or a ``postgresql://…`` URL (``swarm.core.store``);
    ``SWARM_STORE`` when absent."""
    repo: str | None = None
    """The git remote the team's code travels through to members on hosts (``TeamFile.repo``); None: the lead
    repository's ``origin``."""

    @field_validator("repo")
    @classmethod
    def _repo(cls, value: str | None) -> str | None:
        from swarm.runtime.hosts.code import check_remote

        try:
            return None if value is None else check_remote(value)
        except UsageError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("store")
    @classmethod
    def _store(cls, value: str | None) -> str | None:
        from swarm.core.store import check_store

        try:
            return check_store(value) or value
        except UsageError as exc:
            raise ValueError(str(exc)) from None
    max_cost: float | None = Field(default=None, gt=0)
    max_concurrent_requests: int | None = Field(default=None, ge=1)
    stall_after: float | None = Field(default=None, gt=0)

    def limits(self) -> GateLimits:
        """What the team's gate on model requests enforces (``swarm.models.team_gate``)."""
        if self.max_concurrent_requests is None:
            return GateLimits(max_cost=self.max_cost)
        return GateLimits(max_cost=self.max_cost, max_concurrent_requests=self.max_concurrent_requests)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return _checked_name(value, "team name")


class MemberTable(_Strict):
    name: str
    prompt: str = Field(min_length=1)
    agent_type: str = "general-purpose"
    model: str | None = None
    playbook: Path | None = None
    backend: Literal["auto", "tmux", "subprocess"] = "auto"
    worktree: StrictBool = False
    base: str | None = None
    permission_mode: str = "default"
    plan_mode_required: StrictBool = False
    cwd: Path | None = None
    color: str | None = None
    allowed_tools: list[str] = []
    disallowed_tools: list[str] = []
    skills: list[str] = []
    permission_timeout: float = Field(default=300.0, gt=0)
    runtime: Literal["swarm", "claude"] = "swarm"
    claude_bin: str | None = None
    sandbox: SandboxSettings | None = None

    _sandbox = field_validator("sandbox", mode="before")(lambda value: _known_keys(value, SandboxSettings))
    restart: RestartPolicy = "no"
    max_restarts: int = Field(default=DEFAULT_MAX_RESTARTS, ge=0)
    host: str | None = None
    """Run this member on that host (``swarm host serve`` there; a PostgreSQL team): ``runtime/hosts/place.py``."""
    labels: list[str] = []
    """Run this member on any host that has all these labels."""

    @field_validator("host")
    @classmethod
    def _host(cls, value: str | None) -> str | None:
        return None if value is None else _checked_name(value, "host name")

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: list[str]) -> list[str]:
        return sorted({_checked_name(label, "label") for label in value})

    def placed(self) -> bool:
        """Placed on a host (``host``/``labels``) rather than started on this machine."""
        return self.host is not None or bool(self.labels)

    @model_validator(mode="after")
    def _on_host(self) -> MemberTable:
        if not self.placed():
            return self
        local_only = {"worktree": self.worktree, "plan_mode_required": self.plan_mode_required,
                      "sandbox": self.sandbox, "allowed_tools": self.allowed_tools,
                      "disallowed_tools": self.disallowed_tools, "skills": self.skills,
                      "claude_bin": self.claude_bin, "color": self.color}
        given = [key for key, value in local_only.items() if value]
        if self.runtime == CLAUDE_RUNTIME:
            given.append("runtime")
        if given:
            raise ValueError(f"{', '.join(given)} not supported yet for a member on a host (host/labels); "
                             "leave them out, or run the member on this machine")
        return self

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if value == LEAD_NAME:
            raise ValueError(f"{LEAD_NAME!r} is the lead; teammates need other names")
        return _checked_name(value, "member name")

    @field_validator("base")
    @classmethod
    def _base(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and not info.data.get("worktree"):
            raise ValueError("base only applies with worktree = true")
        return value

    @field_validator("permission_mode")
    @classmethod
    def _mode(cls, value: str) -> str:
        if value not in PERMISSION_MODES:
            raise ValueError(f"expected one of {', '.join(PERMISSION_MODES)}")
        return value

    @field_validator("color")
    @classmethod
    def _color(cls, value: str | None) -> str | None:
        if value is not None and value not in COLORS:
            raise ValueError(f"expected one of {', '.join(COLORS)}")
        return value

    _check = field_validator("allowed_tools", "disallowed_tools")(_rules)

    @model_validator(mode="after")
    def _claude(self) -> MemberTable:
        if self.runtime == CLAUDE_RUNTIME:
            problem = swarm_only({"playbook": self.playbook, "skills": self.skills})
            if problem is not None:
                raise ValueError(problem)
            if self.backend == "subprocess":
                raise ValueError('a runtime = "claude" member runs in a tmux pane; use backend = "auto" or "tmux"')
        elif self.claude_bin is not None:
            raise ValueError('claude_bin only applies with runtime = "claude"')
        return self


class UpFile(_Strict):
    team: TeamTable
    lead: LeadTable = LeadTable()
    permissions: RuleTable = RuleTable()
    members: list[MemberTable] = Field(min_length=1)
    sandbox: SandboxSettings | None = None
    _source: Path = PrivateAttr(default=Path("team file"))

    @property
    def source(self) -> Path:
        """The file this was read from (for messages)."""
        return self._source

    def check_paths(self, cwd: Path) -> None:
        """UsageError naming the file and field of a member ``cwd`` that is not a directory under ``cwd``."""
        for index, member in enumerate(self.members):
            if member.cwd is not None and not (cwd / member.cwd).is_dir():
                raise UsageError(f"{self._source}: members[{index}].cwd: {cwd / member.cwd} is not a directory")

    _sandbox = field_validator("sandbox", mode="before")(lambda value: _known_keys(value, SandboxSettings))

    @field_validator("members")
    @classmethod
    def _unique(cls, members: list[MemberTable]) -> list[MemberTable]:
        seen: set[str] = set()
        for member in members:
            if member.name in seen:
                raise ValueError(f"two members are named {member.name!r}")
            seen.add(member.name)
        return members


def _known_keys(value: Any, model: type[BaseModel]) -> Any:
    """``value`` unchanged if every key of it (and of its tables) is a field of ``model`` (either spelling)."""
    if not isinstance(value, dict):
        return value
    for key, inner in value.items():
        field = next((f for name, f in model.model_fields.items() if key in (name, f.alias)), None)
        if field is None:
            raise ValueError(f"unknown sandbox setting {key!r} (see Claude Code's sandbox settings)")
        kind = next((a for a in typing.get_args(field.annotation) if isinstance(a, type)
                     and issubclass(a, BaseModel)), None)
        if kind is not None:
            _known_keys(inner, kind)
    return value


def _checked_name(value: str, kind: str) -> str:
    try:
        return validate_name(value, kind)
    except InvalidNameError as exc:
        raise ValueError(str(exc)) from exc


def load_upfile(path: Path) -> UpFile:
    """Parse and validate a team file; playbook paths become absolute (relative to the file)."""
    try:
        raw = decode_toml(path.read_text())
    except FileNotFoundError as exc:
        raise NotFoundError(f"team file {path} not found") from exc
    except ValueError as exc:  # not TOML (nesting too deep included), not UTF-8
        raise UsageError(f"{path}: not valid TOML: {exc}") from exc
    except OSError as exc:
        raise UsageError(f"team file {path} cannot be read ({exc.strerror or exc})") from exc
    try:
        spec = UpFile.model_validate(raw)
    except ValidationError as exc:
        raise UsageError(f"{path}: {_first_error(exc)}") from exc
    spec._source = path
    for index, member in enumerate(spec.members):
        if member.playbook is not None:
            member.playbook = (path.parent / member.playbook).resolve()
            if not member.playbook.is_file():
                raise UsageError(f"{path}: members[{index}].playbook: {member.playbook} not found")
    return spec


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"]).lstrip(".") or "file"
    message = err["msg"].removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        message = "unknown field (check the spelling; see `swarm up --help` for the format)"
    elif err["type"] == "missing":
        message = "required field is missing"
    shown = err.get("input")
    if err["loc"][-1:] == ("store",) and isinstance(shown, str):  # a database URL may carry a password
        from swarm.core.store import redacted

        shown = redacted(shown)
    return f"{where}: {message}" + (f" (got {shown!r})" if err["type"] not in ("missing", "extra_forbidden")
                                    and not isinstance(shown, dict) else "")
