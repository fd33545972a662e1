"""How what others sent becomes model input: each message wrapped as a <teammate-message>.

The one owner of that wrapping, for a teammate's inbox (``wrap``) and for
what the lead model reads (``runtime.lead.render``): the sender and summary
are attributes, escaped; the text is the body, with every tag look-alike
made inert (``neutral``), so a peer's text cannot close its own block and
open one that seems to come from someone else (the lead, the runtime).
"""

from __future__ import annotations

import re
from html import escape

from swarm.core.protocol import InboxEntry

_TAG_LOOKALIKE = re.compile(r"<(?=\s*/?\s*[A-Za-z][A-Za-z0-9]*(?:\s*[-_]\s*[A-Za-z0-9]+)+)")
"""The ``<`` of something shaped like one of the runtime's tags: a compound name (``teammate-message``,
``task_notification``, ``system-reminder``), opening or closing, in any case or spacing. Plain markup and
code (``<div>``, ``List<T>``, ``a < b``) is left as written."""


def neutral(text: str) -> str:
    """``text`` with every tag look-alike made inert (its ``<`` written ``&lt;``); nothing else changes."""
    return _TAG_LOOKALIKE.sub("&lt;", text)


def teammate_block(sender: str, body: str, *, color: str | None = None, summary: str | None = None,
                   verified: bool = True) -> str:
    """``<teammate-message teammate_id="alice" color="blue" summary="...">body</teammate-message>``.

    ``verified=False`` marks an entry that claims to be the lead's but whose
    signature could not be verified (``verified="false"``, as Claude Code does).
    """
    attrs = [f'teammate_id="{escape(sender)}"']
    if color:
        attrs.append(f'color="{escape(color)}"')
    if summary:
        attrs.append(f'summary="{escape(summary)}"')
    if not verified:
        attrs.append('verified="false"')
    return f"<teammate-message {' '.join(attrs)}>{neutral(body)}</teammate-message>"


def wrap(entry: InboxEntry, *, verified: bool = True) -> str:
    """An inbox entry as the block its recipient's model reads (see ``teammate_block``)."""
    return teammate_block(entry.sender, entry.text, color=entry.color, summary=entry.summary, verified=verified)
