"""How inbox entries become model input: each wrapped as a <teammate-message>."""

from __future__ import annotations

from html import escape

from swarm.core.protocol import InboxEntry


def wrap(entry: InboxEntry, *, verified: bool = True) -> str:
    """``<teammate-message teammate_id="alice" color="blue" summary="...">text</teammate-message>``.

    ``verified=False`` marks an entry that claims to be the lead's but whose
    signature could not be verified (``verified="false"``, as Claude Code does).
    """
    attrs = [f'teammate_id="{escape(entry.sender)}"']
    if entry.color:
        attrs.append(f'color="{escape(entry.color)}"')
    if entry.summary:
        attrs.append(f'summary="{escape(entry.summary)}"')
    if not verified:
        attrs.append('verified="false"')
    return f"<teammate-message {' '.join(attrs)}>{entry.text}</teammate-message>"
