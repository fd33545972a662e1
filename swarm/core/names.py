"""Validation of names that become path components (teams, agents)."""

from __future__ import annotations

import re
import unicodedata

from swarm.errors import InvalidNameError

NAME_MAX = 64
_VALID = re.compile(r"[A-Za-z0-9_-]{1,64}")
LEAD_NAME = "team-lead"
RUNTIME_NAME = "swarm"
"""Sender of the frames the runtime itself writes (``teammate_terminated``); no member may take this name."""
RESERVED_NAMES = frozenset({LEAD_NAME, RUNTIME_NAME})
"""Names a teammate may not have: the lead's and the runtime's."""
BROADCAST = "*"


def _describe(char: str) -> str:
    if char == "\x00":
        return "NUL"
    if char.isprintable() and not char.isspace():
        return f"{char!r}" if char.isascii() else f"{char!r} (U+{ord(char):04X})"
    name = unicodedata.name(char, "")
    return f"U+{ord(char):04X}" + (f" ({name.lower()})" if name else "")


def valid_name(name: str) -> bool:
    """True if ``name`` may be a path component (see ``validate_name``)."""
    return isinstance(name, str) and _VALID.fullmatch(name) is not None


def validate_name(name: str, kind: str = "name") -> str:
    """Return ``name`` unchanged if it is 1-64 of ``[A-Za-z0-9_-]``, else raise.

    The error names the first offending character, so the user knows what to
    change; a name is never silently rewritten.
    """
    if not isinstance(name, str) or name == "":
        raise InvalidNameError(f"{kind} must not be empty; use 1-{NAME_MAX} of A-Z a-z 0-9 _ -")
    if len(name) > NAME_MAX:
        raise InvalidNameError(
            f"{kind} {name[:20]!r}... is {len(name)} characters; the limit is {NAME_MAX}"
        )
    if _VALID.fullmatch(name):
        return name
    bad = next(c for c in name if not re.fullmatch(r"[A-Za-z0-9_-]", c))
    raise InvalidNameError(
        f"{kind} {name!r} contains {_describe(bad)}; use only A-Z a-z 0-9 _ -"
    )


def agent_id(name: str, team: str) -> str:
    """The ``<name>@<team>`` id of an agent."""
    return f"{name}@{team}"
