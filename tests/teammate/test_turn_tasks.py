"""A teammate's turn never reads the task list to find what it completed: TaskUpdate records it.

The session runs in this process (``TeammateSession``, the offline scripted
model) so every read of the task list can be counted: ``TaskStore._load`` is
where each of them (list, get, claimable, a change) reads the directory.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from swarm.core.frames import IdleNotification, entry_frame
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.protocol import Member
from swarm.core.tasks import TaskStore
from swarm.core.teams import TeamStore
from swarm.models.messages import Message
from swarm.teammate.config import TeammateConfig
from swarm.teammate.session import TeammateSession

BOOK = r"""
[[rules]]
name = "finish"
match = 'finish task (?P<id>\d+)'
[[rules.steps]]
tool_calls = [{ name = "TaskUpdate", input = { taskId = "{id}", status = "in_progress" } }]
[[rules.steps]]
tool_calls = [{ name = "TaskUpdate", input = { taskId = "{id}", status = "completed" } }]
[[rules.steps]]
text = "finished {id}"

[[rules]]
name = "chat"
match = 'how are you'
text = "fine"
"""


@pytest.fixture
def session(home: Home, tmp_path: Path) -> Iterator[TeammateSession]:
    """Teammate ``w`` of team ``t``, 40 tasks in its list, its session built as its process builds it."""
    TeamStore(home).create("t")
    TeamStore(home).add_member("t", Member(agent_id="w@t", name="w", is_active=True, status="idle"))
    tasks = TaskStore(home, "t")
    for n in range(40):
        tasks.create(f"task {n + 1}")
    book = tmp_path / "book.toml"
    book.write_text(BOOK)
    work = tmp_path / "work"
    work.mkdir()
    made = TeammateSession(TeammateConfig(team="t", name="w", agent_id="w@t", cwd=work, playbook=book), home, {})
    yield made
    made.spec.provider.close()


def _turn(session: TeammateSession, text: str) -> IdleNotification:
    """One turn on ``text``; the idle notification it ended with."""
    session.conversation.add(Message.user_text(text))
    session._turn()
    [notice] = [f for f in (entry_frame(e) for e in Mailbox(session.mailbox.home, "t").take("team-lead"))
                if isinstance(f, IdleNotification)]
    return notice


def test_a_turn_reads_no_task_list_and_reports_the_task_taskupdate_completed(
        session: TeammateSession, monkeypatch: pytest.MonkeyPatch) -> None:
    loads: list[str] = []
    load = TaskStore._load

    def counted(store: TaskStore, *, quarantine: bool = False):  # type: ignore[no-untyped-def]
        loads.append("change" if quarantine else "read")
        return load(store, quarantine=quarantine)

    monkeypatch.setattr(TaskStore, "_load", counted)

    quiet = _turn(session, "how are you")
    assert loads == []  # a turn that touched no task read the list not once (before: twice, every file)
    assert quiet.result == "fine" and quiet.completed_task_id is None

    done = _turn(session, "finish task 7")
    assert (done.completed_task_id, done.completed_status) == ("7", "resolved")
    assert done.result == "finished 7"
    # the reads are the tools' own: the claim looks the task up, each update is one change, and the
    # completion's answer names the tasks free to claim next; the session adds none
    assert loads == ["read", "change", "change", "read"]
    assert TaskStore(session.mailbox.home, "t").get("7").status == "completed"

    loads.clear()
    after = _turn(session, "how are you")  # the next turn completed nothing: nothing is reported again
    assert after.completed_task_id is None and loads == []
