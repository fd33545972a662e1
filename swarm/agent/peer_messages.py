"""How what others sent becomes model input: each message wrapped as a <teammate-message>.

The one owner of that wrapping, for a teammate's inbox (``wrap``) and for
what the lead model reads (``runtime.lead.render``): the sender and summary
are attributes, escaped; the text is the body, with every tag look-alike
made inert (``neutral``), so a peer's text cannot close its own block and
open one that seems to come from someone else (the lead, the runtime).

Sizes are capped here, on the reading side, because a teammate can write
another's inbox file directly: the body at ``PEER_TEXT_CHARS`` with a marker,
the summary and sender at ``PEER_LABEL_CHARS`` (``agent.output_cap``).
"""

from __future__ import annotations

import re
from html import escape

from swarm.agent.output_cap import PEER_TEXT_CHARS, cap_label, cap_text
from swarm.core.protocol import InboxEntry

TOO_LONG_HINT = "the sender wrote more than a teammate reads; ask for a file path instead"

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
    A body over ``PEER_TEXT_CHARS`` is cut with a marker; long attributes are cut too.
    """
    attrs = [f'teammate_id="{escape(cap_label(sender))}"']
    if color:
        attrs.append(f'color="{escape(cap_label(color))}"')
    if summary:
        attrs.append(f'summary="{escape(cap_label(summary))}"')
    if not verified:
        attrs.append('verified="false"')
    return f"<teammate-message {' '.join(attrs)}>{neutral(cap_text(body, PEER_TEXT_CHARS, TOO_LONG_HINT))}</teammate-message>"


def wrap(entry: InboxEntry, *, verified: bool = True) -> str:
    """An inbox entry as the block its recipient's model reads (see ``teammate_block``)."""
    return teammate_block(entry.sender, entry.text, color=entry.color, summary=entry.summary, verified=verified)
