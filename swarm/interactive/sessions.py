"""Where interactive sessions live: ``<home>/sessions/<id>.jsonl`` (the transcript) and the prompt history.

An id is the start time and a short random tail (``20261201-134502-3fa9``),
so ids sort by age and ``--resume`` with no id continues the newest session.
"""

from __future__ import annotations

import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from swarm.core.home import Home, ensure_dir
from swarm.errors import UsageError

HISTORY_FILE = "history"
_ID = re.compile(r"^\d{8}-\d{6}-[0-9a-f]{4}$")


@dataclass(frozen=True)
class SessionFile:
    id: str
    transcript: Path


def new_session(home: Home) -> SessionFile:
    directory = ensure_dir(home.sessions_dir)
    session_id = f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"
    return SessionFile(session_id, directory / f"{session_id}.jsonl")


def find_session(home: Home, wanted: str) -> SessionFile:
    """The session ``wanted`` (an id or a unique prefix of one); ``""`` means the newest."""
    known = sorted(p.stem for p in home.sessions_dir.glob("*.jsonl") if _ID.match(p.stem)) \
        if home.sessions_dir.is_dir() else []
    if not known:
        raise UsageError(f"no earlier session under {home.sessions_dir}; start one with `swarm run`")
    matches = [k for k in known if k.startswith(wanted)] if wanted else known[-1:]
    if len(matches) != 1:
        what = "no session" if not matches else f"{len(matches)} sessions"
        raise UsageError(f"{what} matching {wanted!r}; recent ones: {', '.join(known[-5:])}")
    return SessionFile(matches[0], home.sessions_dir / f"{matches[0]}.jsonl")


def history_path(home: Home) -> Path:
    return ensure_dir(home.sessions_dir) / HISTORY_FILE
