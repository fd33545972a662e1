"""Pydantic models for the records on disk (docs/protocol.md): inbox entries, team file, members, tasks.

Models keep unknown fields (``extra="allow"``) and are dumped with
``exclude_unset`` so a rewrite preserves what another writer put there. The
frames an entry's text may carry, and who may send which, are
``swarm.core.frames``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationError, field_validator
from pydantic.alias_generators import to_camel

from swarm.core.names import LEAD_NAME
from swarm.core.sandbox_config import SandboxSettings

CLAUDE_RUNTIME = "claude"
"""``Member.runtime`` of a teammate that is a Claude Code CLI session."""
CLAUDE_JOINED = "running"
"""``Member.status`` of a claude teammate from when it took its initial prompt until it leaves."""
MemberKindName = Literal["lead", "swarm", "claude-pane", "claude-lead-pane", "in-process"]
"""Which kind of member an entry is (``Member.kind``); ``runtime.member_kinds`` has one class for each."""
CLAUDE_CODE_KINDS: frozenset[MemberKindName] = frozenset({"claude-pane", "claude-lead-pane", "in-process"})
"""Kinds whose process is a Claude Code session: it writes the team's files as Claude Code does, and
its frames about itself carry no swarm marker (``TeamFile.unmarked_senders``)."""
GoneStatus = Literal["stopped", "dead", "killed"]
GONE_STATUSES: tuple[GoneStatus, ...] = ("stopped", "dead", "killed")
"""``Member.status`` values of a member that left the team."""
COLORS = ("blue", "green", "yellow", "purple", "orange", "pink", "cyan", "red")
Author = Literal["person", "model"]
"""Who chose an entry's words (``InboxEntry.author``): a person (their prompt, their ``swarm send``) or a model."""
MODEL_SHELL_ENV = "SWARM_MODEL_SHELL"
"""Set in the environment of every command an agent's Bash runs: a ``swarm`` command there speaks for a model."""


def command_author(env: Mapping[str, str]) -> Author:
    """Who a ``swarm`` command run with ``env`` speaks for: a model when an agent's Bash (``MODEL_SHELL_ENV``)
    or a teammate's process (``SWARM_PROC_TOKEN``) ran it, else the person at the shell."""
    return "model" if env.get(MODEL_SHELL_ENV) or env.get("SWARM_PROC_TOKEN") else "person"


class Wire(BaseModel):
    """Base for models read from or written to disk."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, defer_build=True)

    def wire(self) -> dict[str, Any]:
        """The JSON object as it goes on disk."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


class CamelWire(Wire):
    model_config = ConfigDict(extra="allow", populate_by_name=True, alias_generator=to_camel, defer_build=True)


# -- inbox ---------------------------------------------------------------


class InboxEntry(Wire):
    sender: StrictStr = Field(alias="from")
    text: StrictStr
    timestamp: StrictStr
    read: bool = False
    color: str | None = None
    summary: str | None = None
    type: str | None = None
    msg_id: str | None = None
    msg_v: int | None = Field(default=None, alias="msgV")
    from_plugin: str | None = None
    lead_sig: str | None = None
    structured: bool | None = None
    """swarm: the text is a protocol frame written through the structured path (``Mailbox.send_frame``)."""
    author: str | None = None
    """swarm: ``person`` or ``model`` (``Author``), who chose the words. ``person`` counts only with a verifying
    ``author_sig``; anything else (missing, ``model``, unverifiable) is a model's."""
    author_sig: str | None = None
    """swarm: the lead key's signature over the author, the recipient and the entry (``core.signing``)."""


# -- team file -------------------------------------------------------------


class Member(CamelWire):
    agent_id: StrictStr
    name: StrictStr
    agent_type: str | None = None
    model: str | None = None
    prompt: str | None = None
    color: str | None = None
    plan_mode_required: bool = False
    joined_at: int = 0
    tmux_pane_id: str = ""
    cwd: str = ""
    worktree_path: str | None = None
    session_id: str | None = None
    subscriptions: list[Any] = Field(default_factory=list)
    backend_type: str | None = None
    is_active: bool | None = None
    mode: str | None = None
    pid: int | None = None
    # swarm additions (Claude Code ignores them):
    proc_start: float | None = None
    """The teammate process's create time, to tell a live pid from a reused one."""
    worker_pid: int | None = None
    """A teammate forked from the CLI server: its own pid; ``pid`` is then its launcher's (``teammate.served``)."""
    worker_start: float | None = None
    """``worker_pid``'s create time."""
    proc_token: str | None = None
    """Unique token in the teammate's environment (``SWARM_PROC_TOKEN``); every process carrying it is the teammate's."""
    stop_notice: str | None = None
    """Set while the runtime forces the member down: whoever records the end records it as ``killed`` with this notice."""
    status: str | None = None
    """``starting``, ``idle``, ``busy`` or ``stopped``, written by the teammate."""
    last_activity: int | None = None
    """Epoch ms of the teammate's last turn start or end."""
    tokens: int | None = None
    """Tokens the teammate's model has used so far."""
    cache_read_tokens: int | None = None
    """Of those, input tokens read from the prompt cache."""
    cache_creation_tokens: int | None = None
    """Of those, input tokens written to the prompt cache."""
    playbook: str | None = None
    """Scripted-model playbook path, when the teammate runs offline."""
    tmux_socket: str | None = None
    """tmux server (socket name or path) holding the teammate's pane."""
    worktree_branch: str | None = None
    """Branch swarm created for the teammate's worktree (``swarm/<team>/<name>``)."""
    worktree_base: str | None = None
    """Commit sha the worktree started from; "commits ahead" are counted from it."""
    worktree_repo: str | None = None
    """Main working tree of the repository holding the worktree."""
    allowed_tools: list[str] | None = None
    """Allow rules for this teammate (from --allowed-tools and `swarm approve --always`)."""
    sandbox: SandboxSettings | None = None
    """swarm: this teammate's ``sandbox`` settings (``--sandbox``, a ``swarm up`` member's ``[sandbox]``), on top
    of the team's."""
    disallowed_tools: list[str] | None = None
    runtime: str | None = None
    """``claude``: a Claude Code CLI swarm started in a pane (``runtime.claude_teammate``). Claude Code
    owns ``isActive`` there (busy, not alive); swarm's ``status`` says whether it is still in the team."""
    host: str | None = None
    """swarm: the host (``swarm host serve``) running this teammate; ``""`` while a labels request waits for one.
    Its process is that host's to judge and stop (``runtime.hosts``), never this machine's."""
    epoch: int | None = None
    """swarm: which placement of the teammate this entry is; a teammate whose epoch was moved on stops itself."""
    remote_repo: str | None = None
    """swarm: the git remote a teammate on a host pushes its branch ``swarm/<team>/<name>`` to (``hosts.code``)."""
    remote_base: str | None = None
    """swarm: the commit that branch started from (what ``swarm worktrees`` counts "ahead" from)."""

    @property
    def kind(self) -> MemberKindName:
        """Which kind of member this is, from its entry alone: the one place it is judged.

        - ``lead``: the team's lead;
        - ``claude-pane``: a Claude Code CLI swarm started in a pane (``runtime: claude``);
        - ``in-process`` / ``claude-lead-pane``: a teammate Claude Code's own lead started, inside
          that lead or in a pane of its: swarm recorded no process of it (no pid, no ``procToken``);
        - ``swarm``: swarm's own teammate (its ``procToken`` from the start, its pid once it runs).
        """
        if self.name == LEAD_NAME:
            return "lead"
        if self.runtime == CLAUDE_RUNTIME:
            return "claude-pane"
        if self.pid is None and self.proc_token is None:
            if self.backend_type == "in-process":
                return "in-process"
            if self.backend_type == "tmux":
                return "claude-lead-pane"
        return "swarm"

    def present(self) -> bool:
        """Running in the team by its entry: started, and not stopped, dead or killed since.

        For most kinds that is ``isActive``; for a Claude Code teammate swarm started, whose
        ``isActive`` Claude Code flips between busy and idle, it is swarm's ``status``.
        """
        if self.kind == "claude-pane":
            return self.status == CLAUDE_JOINED
        return bool(self.is_active)

    def is_claude_code(self) -> bool:
        """A Claude Code teammate (``CLAUDE_CODE_KINDS``): one swarm started, or one Claude Code's own lead
        started, in a pane or in-process. Its frames about itself count without swarm's marker."""
        return self.kind in CLAUDE_CODE_KINDS

    def idle(self) -> bool:
        """Between turns: swarm's own teammates say so in ``status``, a Claude Code pane swarm started in ``isActive``."""
        if self.kind == "claude-pane":
            return self.present() and not self.is_active
        return self.status == "idle"


class Activity(CamelWire):
    """swarm: what a teammate is doing, kept beside the team file (``Home.activity_path``).

    It changes on every turn; keeping it out of ``config.json`` means the team
    file is rewritten only when membership changes (fewer fsyncs, and fewer
    writes racing Claude Code's own rewrites of that file). ``TeamStore.get``
    lays it over the member entry.
    """

    status: Literal["idle", "busy"]
    last_activity: int
    tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0


class RuleLists(CamelWire):
    """Permission rules in Claude Code's syntax (swarm addition to the team file)."""

    allow: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)
    ask: list[str] = Field(default_factory=list)


class LeadPolicy(RuleLists):
    """Rules the lead side answers permission requests with, and what to do with plans."""

    plans: Literal["ask", "approve", "deny"] = "ask"


class TeamFile(CamelWire):
    name: StrictStr
    description: str | None = None
    created_at: int = 0
    lead_agent_id: StrictStr
    lead_session_id: str | None = None
    members: list[Member] = Field(default_factory=list)
    # swarm additions:
    permissions: RuleLists | None = None
    """Rules every teammate applies before asking the lead."""
    lead_policy: LeadPolicy | None = None
    """Rules the lead side uses to answer requests automatically (allow / deny)."""
    settings_digests: dict[str, str] | None = None
    """Settings file path -> sha256 (or ``absent``) as the lead side first saw it; allow rules of a
    file that no longer matches are ignored (``agent/permissions/settings.py``)."""
    settings_sandbox: dict[str, SandboxSettings] | None = None
    """Settings file path -> its ``sandbox`` key as the lead side first saw it (recorded with its digest): what
    still counts of a file changed since, under whatever narrowing the change adds."""
    sandbox: SandboxSettings | None = None
    """The team's ``sandbox`` settings (Claude Code's shape: ``core/sandbox_config.py``), on top of the settings
    files'; written by the lead side only (``swarm up``'s ``[sandbox]``, ``--sandbox``)."""
    lead_pid: int | None = None
    """The process leading the team when swarm started it (``swarm run``, a foreground ``swarm up``,
    ``swarm demo``); its teammates stop on their own once it is gone. None: a person leads (the CLI)."""
    lead_proc_start: float | None = None
    """``lead_pid``'s create time: the same pid started at another time is not the lead."""
    repo: str | None = None
    """The git remote the team's code travels through to teammates on other hosts (``swarm team create --repo``,
    ``[team] repo``); None: the lead repository's ``origin`` (``runtime/hosts/code.py`` ``team_remote``)."""

    def member(self, name: str) -> Member | None:
        return next((m for m in self.members if m.name == name), None)

    def unmarked_senders(self) -> frozenset[str]:
        """Names whose frames about themselves count without swarm's marker (``frames.entry_frame``'s
        ``unmarked_from``): the Claude Code teammates (``Member.is_claude_code``)."""
        return frozenset(m.name for m in self.members if m.is_claude_code())

    def claude_code_writes(self) -> bool:
        """Claude Code processes write this team's files: its lead (a team Claude Code made has
        ``leadSessionId``; swarm never writes it) or a Claude Code teammate."""
        return self.lead_session_id is not None or any(m.is_claude_code() for m in self.members)


# -- tasks -------------------------------------------------------------------


class TaskEdit(Wire):
    """swarm: one change to one field of a task — who made it (a member's name), when, from what to what."""

    by: StrictStr
    at: StrictStr
    field: StrictStr
    old: Any = Field(default=None, alias="from")
    new: Any = Field(default=None, alias="to")
    author: Author | None = None
    """For a ``swarm task`` command: whether the person at a shell ran it or a model's Bash (``command_author``)."""


class Task(CamelWire):
    id: StrictStr
    subject: StrictStr
    description: str = ""
    active_form: str | None = None
    owner: str | None = None
    status: Literal["pending", "in_progress", "completed"] = "pending"
    blocks: list[str] = Field(default_factory=list)
    blocked_by: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    # swarm addition (Claude Code ignores it):
    history: list[TaskEdit] = Field(default_factory=list)
    """Every change to the task's status, owner, subject, description or form since swarm first changed it,
    oldest first (``core.tasks``): members may change each other's tasks, and this says who did."""

    @field_validator("history", mode="before")
    @classmethod
    def _readable_history(cls, raw: Any) -> list[Any]:
        """A history entry that does not parse is dropped: it never makes the task itself unreadable."""
        if not isinstance(raw, list):
            return []
        kept = []
        for item in raw:
            try:
                kept.append(TaskEdit.model_validate(item))
            except ValidationError:
                continue
        return kept


def build_models() -> None:
    """Build the inbox and team-file models now rather than on first use (their ``defer_build``).

    A one-shot command builds only what it uses; a long-lived process that
    wants its first send at full speed calls this at start. What is built
    already is left alone: a teammate forked from the CLI server shares the
    server's validators, and building them again would make ~2.5 MiB of them
    its own (64 teammates: 971 MiB of PSS against 811).
    """
    for model in (InboxEntry, Member, TeamFile, Activity):
        model.model_rebuild()
