"""The agent types an agent may start, told to its model in a message attachment, not in the Agent tool's text.

Tool definitions sit near the front of every request's cached prefix: if
the list of agent types were part of the Agent tool's description (as it
was), adding a definition file would change the tools and so break the
prompt cache of every later request (seed 000, "the agent list as an
attachment"). So the Agent tool's text is fixed for the process
(``swarm.agent.tools.agent_tool``), and the list travels as a
``<system-reminder>`` user text block: in the conversation's first message,
and again whenever the list changes (a definition added, changed or removed
between two model calls) or is no longer in the conversation (compaction
summarised it away). ``AgentListing`` remembers what the model was told.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from swarm.agent.definitions import AgentCatalog
from swarm.agent.peer_messages import neutral
from swarm.models.messages import Message, TextBlock

OPENING = "<system-reminder>\nAgent types the Agent tool can start (its subagent_type):\n"
CHANGED = "<system-reminder>\nThe agent types the Agent tool can start have changed; this list replaces earlier ones:\n"
CLOSING = "\n</system-reminder>"


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
    return "\n".join(lines) or "(none)"


def agent_types_attachment(catalog: AgentCatalog, spawnable: frozenset[str] | None = None) -> str:
    """The attachment that opens a conversation: every type the agent may start."""
    return OPENING + agent_types(catalog, spawnable) + CLOSING


def is_listing(text: str) -> bool:
    return text.startswith(OPENING) or text.startswith(CHANGED)


class AgentListing:
    """What the model was last told about the agent types, and the attachment that brings it up to date.

    ``reload`` reads the definitions afresh (from the agent's cwd); None: the
    catalog is fixed. ``catalog`` is the latest one read, for the Agent tool's
    host to start from.
    """

    def __init__(self, catalog: AgentCatalog, *, spawnable: frozenset[str] | None = None,
                 reload: Callable[[], AgentCatalog] | None = None) -> None:
        self.catalog = catalog
        self.spawnable = spawnable
        self._reload = reload
        self._told = ""

    def first(self) -> str:
        """The attachment for the conversation's first message."""
        self._told = agent_types_attachment(self.catalog, self.spawnable)
        return self._told

    def update(self, messages: Sequence[Message]) -> str | None:
        """The attachment for the next model request, if the list changed or left the conversation; else None."""
        if self._reload is not None:
            self.catalog = self._reload()
        types = agent_types(self.catalog, self.spawnable)
        if self._told and self._told.endswith(types + CLOSING) and _present(self._told, messages):
            return None
        self._told = (CHANGED if self._told else OPENING) + types + CLOSING
        return self._told


def _present(text: str, messages: Sequence[Message]) -> bool:
    return any(isinstance(block, TextBlock) and block.text == text
               for message in messages if message.role == "user" for block in message.content)
