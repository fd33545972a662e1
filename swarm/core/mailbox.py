"""Inboxes: send, broadcast, read, take, acknowledge, wait.

An inbox file holds only what has not been delivered yet: ``take`` returns the
undelivered entries and prunes them in one locked cycle; a recipient that must
not lose a message on a crash instead reads with ``pending``, records what it
got, then ``acknowledge``-s the ids (redelivery after a crash is made
idempotent by that record). ``wait`` blocks on file-change events.

Every entry sent as the lead (``team-lead``) carries ``lead_sig``, signed with
the team's lead key (``swarm.core.signing``), loaded or made once per
``Mailbox``; where no key can be read or made (a read-only home) lead entries
go unsigned and swarm's teammates take them as unverified text.

``send`` records who chose the words (``author``): ``person`` entries also get
``author_sig`` with that key, for their recipient; ``model`` entries are
marked and never signed so; unmarked entries read as a model's. Only the
writer knows which it is, so the caller says: a person's own prompt or
``swarm send``, or a model's choice.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from swarm.core.clock import now_iso
from swarm.core.document_codecs import InboxAppendCodec, InboxCodec
from swarm.core.home import Home, ensure_dir
from swarm.core.jsonfile import LockedJsonFile
from swarm.core.names import BROADCAST, LEAD_NAME, validate_name
from swarm.core.protocol import Author, InboxEntry, TeamFile
from swarm.core.signing import LeadKey, sign_author, sign_entry, signing_key
from swarm.core.spool import SpooledAppend
from swarm.core.store import inbox_rows
from swarm.core.teams import Roster, TeamStore
from swarm.core.watch import ChangeWatcher, watch_file
from swarm.errors import NotFoundError, UsageError

if TYPE_CHECKING:  # frames are loaded by the first send_frame: a plain `swarm send` never needs them
    from swarm.core.frames import Frame
    from swarm.core.store.base import Inboxes

CLAUDE_CODE_INDENT = 2
"""Claude Code writes its files as 2-space JSON."""
MAX_MESSAGE_BYTES = 256 * 1024
"""Largest ``text`` accepted by ``send`` (UTF-8 bytes). Larger payloads belong in files."""


@dataclass
class Mailbox:
    """The inboxes of one team."""

    home: Home
    team: str
    events: bool = True
    """Use file-change events for ``wait``; False forces the polling fallback."""
    _teams: TeamStore = field(init=False, repr=False)
    _files: dict[str, LockedJsonFile[list[InboxEntry]]] = field(init=False, repr=False, default_factory=dict)
    _appends: dict[tuple[str, bool], SpooledAppend] = field(init=False, repr=False, default_factory=dict)
    _roster: Roster = field(init=False, repr=False)
    _rows: Inboxes | None = field(init=False, repr=False, default=None)
    """The team's inboxes in its database (``swarm.core.store``); None: files."""

    def __post_init__(self) -> None:
        validate_name(self.team, "team name")
        self._teams = TeamStore(self.home)
        self._roster = self._teams.roster(self.team)
        self._rows = inbox_rows(self.home, self.team)

    # -- writing -----------------------------------------------------------

    def send(self, to: str, text: str, *, sender: str, author: Author | None = None, summary: str | None = None,
             color: str | None = None) -> list[InboxEntry]:
        """Append a plain-text message to ``to``'s inbox (``*``: every member but ``sender``).

        Returns the entries written (one per recipient), each with its ``msg_id``.
        Text that looks like a protocol frame stays text: only ``send_frame``
        writes frames a recipient acts on. ``author``: who chose the words; a
        ``person`` entry is signed so (``core.signing``), for its recipient;
        None leaves the entry unmarked, which every reader takes as a model's.
        """
        return self._send(to, text, sender=sender, summary=summary, color=color, structured=False, author=author)

    def send_frame(self, to: str, frame: Frame, *, sender: str, summary: str | None = None) -> InboxEntry:
        """Append protocol ``frame`` to ``to``'s inbox through the structured path (see ``entry_frame``)."""
        if to == BROADCAST:
            raise UsageError("a protocol frame goes to one member, not to '*'")
        from swarm.core.frames import frame_text

        return self._send(to, frame_text(frame), sender=sender, summary=summary, color=None, structured=True,
                          author=None)[0]

    def _send(self, to: str, text: str, *, sender: str, summary: str | None, color: str | None,
              structured: bool, author: Author | None) -> list[InboxEntry]:
        validate_name(sender, "sender name")
        _check_size(text)
        team = self._roster.current()  # re-read only when the team file changed: sends are frequent
        recipients = self.recipients(team, to, sender)
        shared = team.claude_code_writes()
        written = []
        for name in recipients:
            entry = InboxEntry(sender=sender, text=text, timestamp=now_iso(), read=False,
                               msg_id=str(uuid.uuid4()), type="message")
            if summary:
                entry.summary = summary
            if color:
                entry.color = color
            if structured:
                entry.structured = True
            if author is not None:
                entry.author = author
            if sender == LEAD_NAME and self._lead_key is not None:
                entry.lead_sig = sign_entry(entry, self._lead_key)
            if author == "person" and self._lead_key is not None:
                entry.author_sig = sign_author(entry, name, self._lead_key)
            if self._rows is not None:
                self._rows.append(name, [entry.wire()])
            else:
                self._appending(name, shared).append(entry.wire())
            written.append(entry)
        return written

    @cached_property
    def _lead_key(self) -> LeadKey | None:
        """The key this mailbox signs lead entries with (None: they go unsigned)."""
        return signing_key(self.home, self.team)

    def recipients(self, team: TeamFile, to: str, sender: str) -> list[str]:
        """Names a message to ``to`` goes to; NotFoundError for a non-member."""
        names = [m.name for m in team.members]
        if to == BROADCAST:
            return [n for n in names if n != sender]
        validate_name(to, "recipient name")
        if to not in names:
            raise NotFoundError(
                f"no member {to!r} in team {self.team!r}; members: {', '.join(names)} (or '*' for all)"
            )
        return [to]

    # -- reading -------------------------------------------------------------

    def read(self, agent: str, *, unread_only: bool = False) -> list[InboxEntry]:
        """Entries in ``agent``'s inbox, oldest first, without changing it."""
        entries = self._file(agent).read() if self._rows is None else self._rows.pending(agent)
        return [e for e in entries if not e.read] if unread_only else entries

    def pending(self, agent: str) -> list[InboxEntry]:
        """Undelivered entries (same as ``read(unread_only=True)``)."""
        return self.read(agent, unread_only=True)

    def take(self, agent: str) -> list[InboxEntry]:
        """Return the undelivered entries and prune the inbox in one locked cycle."""
        if self._rows is not None:
            return self._rows.take(agent)

        def drain(entries: list[InboxEntry]) -> list[InboxEntry]:
            undelivered = [e for e in entries if not e.read]
            entries.clear()
            return undelivered

        return self._file(agent).update(drain)

    def acknowledge(self, agent: str, keys: Iterable[str]) -> int:
        """Prune delivered entries by ``delivery_key`` (and any already marked read); return how many."""
        ids = set(keys)
        if self._rows is not None:
            return self._rows.acknowledge(agent, ids)

        def prune(entries: list[InboxEntry]) -> int:
            before = len(entries)
            entries[:] = [e for e in entries if not e.read and delivery_key(e) not in ids]
            return before - len(entries)

        return self._file(agent).update(prune)

    def discard_if_empty(self, agent: str) -> bool:
        """Delete ``agent``'s inbox file if it holds no entries (decided under its lock); True if deleted."""
        if self._rows is not None:
            return False  # a database inbox has no file to remove
        return self._file(agent).remove_if(lambda entries: not entries)

    # -- waiting -------------------------------------------------------------

    def watcher(self, agent: str) -> ChangeWatcher:
        """A change watcher on ``agent``'s inbox; close it when done."""
        if self._rows is not None:
            return self._rows.watcher(agent)
        path = self.home.inbox_path(self.team, agent)
        ensure_dir(path.parent)
        return watch_file(path, events=self.events)

    def wait(self, agent: str, timeout: float, *, watcher: ChangeWatcher | None = None) -> bool:
        """Block until ``agent`` has undelivered entries (True) or ``timeout`` passes (False).

        Woken by file-change events; pass a long-lived ``watcher`` to avoid
        setting one up per call.
        """
        own = watcher is None
        active = watcher or self.watcher(agent)
        try:
            deadline = time.monotonic() + timeout
            while True:
                if self.pending(agent):
                    return True
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                active.wait(remaining)
        finally:
            if own:
                active.close()

    def _appending(self, agent: str, shared: bool) -> SpooledAppend:
        """``agent``'s inbox opened to append by group commit (``swarm.core.spool``).

        The entries already there are not re-read as models (``InboxAppendCodec``),
        and an entry whose ``msg_id`` the inbox holds is never appended again.
        In a team where Claude Code writes too (``shared``), swarm takes turns
        with it on the inbox's lock from the start (``core.lock_turns``), and an
        inbox with no style of its own yet (absent, or Claude Code's fresh
        ``[]``) is written as Claude Code writes it, 2-space JSON; a swarm-only
        team's inboxes are compact.
        """
        if (agent, shared) not in self._appends:
            inbox = LockedJsonFile(self.home.inbox_path(self.team, agent), InboxAppendCodec(),
                                   indent=CLAUDE_CODE_INDENT if shared else None, shared=shared)
            self._appends[agent, shared] = SpooledAppend(inbox, key=_wire_msg_id)
        return self._appends[agent, shared]

    def _file(self, agent: str) -> LockedJsonFile[list[InboxEntry]]:
        if agent not in self._files:
            self._files[agent] = LockedJsonFile(self.home.inbox_path(self.team, agent), InboxCodec(),
                                                durable_when=bool)  # an emptied inbox has nothing to lose
        return self._files[agent]


def _wire_msg_id(raw: Any) -> str | None:
    """The ``msg_id`` of an inbox entry as it is on disk (None for entries without one)."""
    value = raw.get("msg_id") if isinstance(raw, dict) else None
    return value if isinstance(value, str) else None


def delivery_key(entry: InboxEntry) -> str:
    """The id that names an entry for acknowledgement and de-duplication.

    ``msg_id`` when present; entries written without one (older writers) get a
    digest of sender, timestamp and text.
    """
    if entry.msg_id:
        return entry.msg_id
    digest = hashlib.sha256(f"{entry.sender}\0{entry.timestamp}\0{entry.text}".encode()).hexdigest()
    return f"sha256:{digest[:32]}"


def _check_size(text: str) -> None:
    size = len(text.encode("utf-8", errors="surrogatepass"))
    if size > MAX_MESSAGE_BYTES:
        raise UsageError(
            f"message is {size} bytes; the limit is {MAX_MESSAGE_BYTES} — put large content in a file and send its path"
        )
