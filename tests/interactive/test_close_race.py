"""Closing the interactive session while its inbox watcher is waiting: the shutdown still hears the answers.

The session's watcher pumps the lead's inbox on its own thread; ``close`` asks
every teammate to stop from the person's thread. Both look at the same inbox,
so an answer the watcher takes must still reach the shutdown that waits for it
(issue 28: a ``shutdown_rejected`` taken by the watcher left the shutdown
waiting until the timeout, and then the teammate was forced down).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from swarm.agent.tools import ToolContext
from swarm.agent.tool_api.context import AgentIdentity
from swarm.backends.procs import kill_tree
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.teams import TeamStore
from swarm.interactive import chat as chat_module
from swarm.interactive.chat import Chat
from swarm.interactive.questions import Desk
from swarm.interactive.view import View
from swarm.runtime.lead import LeadTeam
from tests.backends.helpers import retry_until
from tests.teammate.conftest import REFUSER, teammate_pids



class _Session:
    """The lead's session as ``Chat`` uses it at close: nothing runs in it (no turn is part of this race)."""

    def __init__(self, cwd: Path) -> None:
        self.ctx = ToolContext(AgentIdentity(cwd=cwd))
        self.closed = False

    def close(self) -> None:
        self.closed = True


@pytest.fixture(autouse=True)
def _reap(home: Home) -> Iterator[None]:
    """The teammate that refused is still running when the test ends: it is stopped here."""
    yield
    for pid in teammate_pids(home):
        with contextlib.suppress(OSError):
            kill_tree(pid, 1.0)


def test_a_rejection_taken_by_the_inbox_watcher_still_reaches_the_shutdown_at_close(
        home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the watcher's pump stays in flight for the whole close: whatever reaches the lead, it takes first
    monkeypatch.setattr(chat_module, "WATCH_WAIT", 60.0)
    work = tmp_path / "work"
    work.mkdir()
    book = tmp_path / "refuser.toml"
    book.write_text(REFUSER)
    lead = LeadTeam(home, dict(os.environ), work, backend="subprocess", playbooks={"mule": book})
    ctx = ToolContext(AgentIdentity(cwd=work))
    lead.create("t", None, ctx)
    lead.spawn(ctx, name="mule", prompt="hello", agent_type=None, model=None, runtime=None, isolation=None,
               plan_mode_required=False, mode=None, cwd=None)
    retry_until(lambda: bool((m := TeamStore(home).get("t").member("mule")) and m.idle()), 20,
                what="mule to finish its first turn")
    Mailbox(home, "t").take("team-lead")  # its first idle notification would be a turn of the lead: none runs here
    session: Any = _Session(work)
    chat = Chat(session, lead, View(work, plain=True), Desk(), "s1", shutdown_timeout=8.0)
    chat.start()
    retry_until(_watcher_in_pump, 5, what="the inbox watcher's pump to be in flight")
    [pid] = teammate_pids(home)

    kept = chat.close()

    mule = TeamStore(home).get("t").member("mule")
    assert mule is not None and mule.status != "killed", "the teammate that refused was forced down"
    assert psutil.pid_exists(pid) and mule.is_active  # it refused: it goes on running
    assert any(line.startswith("mule refused to shut down: still merging") for line in kept), kept


def _watcher_in_pump() -> bool:
    """The session's inbox thread is inside ``pump`` (its stack shows it), waiting for the inbox to change."""
    frames = sys._current_frames()
    return any(thread.name == "lead-inbox" and thread.ident in frames
               and any(f.name == "pump" for f in traceback.extract_stack(frames[thread.ident]))
               for thread in threading.enumerate())
