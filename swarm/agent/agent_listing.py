"""Lists told to the model in message attachments, not in tool texts: the agent types and the skills.

Tool definitions sit near the front of every request's cached prefix: if
the list of agent types were part of the Agent tool's description, or the
skills part of the Skill tool's (as both were), adding a definition or a
skill file would change the tools and so break the prompt cache of every
later request (seed 000, "the agent list as an attachment"). So those tools'
texts are fixed for the process (``swarm.agent.tools.agent_tool``,
``swarm.agent.tools.skill_tool``), and each list travels as a
``<system-reminder>`` user text block: in the conversation's first message,
and again whenever the list changes (a file added, changed or removed
between two model calls) or is no longer in the conversation (compaction
summarised it away). A ``Listing`` remembers what the model was told of one
list; ``AgentListing`` and ``SkillListing`` are the two lists;
``listing_updates`` brings several up to date at once.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from swarm.agent.definitions import AgentCatalog
from swarm.agent.peer_messages import neutral
from swarm.agent.skills import SkillCatalog, catalog_text
from swarm.models.messages import Message, TextBlock

OPENING = "<system-reminder>\nAgent types the Agent tool can start (its subagent_type):\n"
CHANGED = "<system-reminder>\nThe agent types the Agent tool can start have changed; this list replaces earlier ones:\n"
SKILLS_OPENING = "<system-reminder>\nSkills the Skill tool can use (its skill argument):\n"
SKILLS_CHANGED = "<system-reminder>\nThe skills the Skill tool can use have changed; this list replaces earlier ones:\n"
CLOSING = "\n</system-reminder>"
NONE = "(none)"


@dataclass(frozen=True)
class ListKind:
    """How one list is introduced: first, and when it replaces what the model was told before."""

    opening: str
    changed: str
    when_empty: bool = True
    """Told even when it has no entries (agent types always; skills only once there are some)."""


AGENT_TYPES = ListKind(OPENING, CHANGED)
SKILLS = ListKind(SKILLS_OPENING, SKILLS_CHANGED, when_empty=False)


def agent_types(catalog: AgentCatalog, spawnable: frozenset[str] | None = None) -> str:
    """One line per type the agent may start: its name, its whole description, its tools."""
    lines = []
    for name in catalog.names():
        definition = catalog.get(name)
        if definition is None or (spawnable is not None and name not in spawnable):
            continue
        tools = ", ".join(definition.tools) if definition.tools else "all tools"
        about = " ".join(definition.description.split())  # whole: "use proactively" is often at its end
        lines.append(neutral(f"- {name}: {about} (Tools: {tools})"))  # a file's text cannot close the block
    return "\n".join(lines) or NONE


def skill_names(catalog: SkillCatalog) -> str:
    """One line per skill the model may invoke (``skills.catalog_text``), made inert like the agent types."""
    return "\n".join(neutral(line) for line in catalog_text(catalog).splitlines()) or NONE


def is_listing(text: str) -> bool:
    return text.startswith((OPENING, CHANGED, SKILLS_OPENING, SKILLS_CHANGED))


class Listing(ABC):
    """What the model was last told of one list, and the attachment that brings it up to date; a subclass says
    what the list is now (``entries``: re-read from disk when ``fresh``)."""

    kind: ListKind

    def __init__(self) -> None:
        self._told = ""

    @abstractmethod
    def entries(self, fresh: bool) -> str:
        """The list as the model should know it now, one line per entry (``NONE`` when empty)."""

    def first(self) -> str:
        """The attachment for the conversation's first message, from the list as loaded ("" when an empty list
        is not told)."""
        entries = self.entries(fresh=False)
        if entries == NONE and not self.kind.when_empty:
            return ""
        self._told = self.kind.opening + entries + CLOSING
        return self._told

    def update(self, messages: Sequence[Message]) -> str | None:
        """The attachment for the next model request, if the list changed or left the conversation; else None."""
        entries = self.entries(fresh=True)
        if not self._told and entries == NONE and not self.kind.when_empty:
            return None
        if self._told and self._told.endswith(entries + CLOSING) and _present(self._told, messages):
            return None
        self._told = (self.kind.changed if self._told else self.kind.opening) + entries + CLOSING
        return self._told


class AgentListing(Listing):
    """The agent types an agent may start. ``reload`` reads the definitions afresh (from the agent's cwd); None:
    the catalog is fixed. ``catalog`` is the latest one read, for the Agent tool's host to start from."""

    kind = AGENT_TYPES

    def __init__(self, catalog: AgentCatalog, *, spawnable: frozenset[str] | None = None,
                 reload: Callable[[], AgentCatalog] | None = None) -> None:
        super().__init__()
        self.catalog = catalog
        self.spawnable = spawnable
        self._reload = reload

    def entries(self, fresh: bool) -> str:
        if fresh and self._reload is not None:
            self.catalog = self._reload()
        return agent_types(self.catalog, self.spawnable)


class SkillListing(Listing):
    """The skills the model may invoke. ``reload`` reads the skills afresh (from the agent's cwd); None: the
    catalog is fixed. ``catalog`` is the latest one read, for the Skill tool to run from."""

    kind = SKILLS

    def __init__(self, catalog: SkillCatalog, *, reload: Callable[[], SkillCatalog] | None = None) -> None:
        super().__init__()
        self.catalog = catalog
        self._reload = reload

    def entries(self, fresh: bool) -> str:
        if fresh and self._reload is not None:
            self.catalog = self._reload()
        return skill_names(self.catalog)


def agent_types_attachment(catalog: AgentCatalog, spawnable: frozenset[str] | None = None) -> str:
    """The attachment that opens a conversation told once (a teammate's): every type the agent may start."""
    return AgentListing(catalog, spawnable=spawnable).first()


def skills_attachment(catalog: SkillCatalog) -> str:
    """The attachment that opens a conversation told once (a teammate's, a subagent's): every skill the model may
    invoke; "" when there is none."""
    return SkillListing(catalog).first()


def listing_updates(listings: Sequence[Listing], messages: Sequence[Message]) -> list[str]:
    """The attachments that bring every list in ``listings`` up to date before the next request."""
    return [text for text in (listing.update(messages) for listing in listings) if text is not None]


def _present(text: str, messages: Sequence[Message]) -> bool:
    return any(isinstance(block, TextBlock) and block.text == text
               for message in messages if message.role == "user" for block in message.content)
