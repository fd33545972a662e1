"""An inbox watcher wakes for its own inbox and for nothing else in the directory (``swarm.core.watch.FileWatcher``).

A directory watch woke every idle teammate of a team several times for each
message to any other (an inbox write is six events in ``inboxes/``). The
watcher now watches the inbox's inode and moves to the new inode on each
replace, so these tests check both halves: an idle watcher of another inbox
is not woken at all (a real process, its context switches counted), and its
own inbox's changes are never missed however they are made (rename, Claude
Code's in-place write, first creation, removal, a burst of sends).
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import psutil

from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.protocol import Member
from swarm.core.teams import TeamStore
from swarm.core.watch import POLL_INTERVAL, FileWatcher, watch_file

from .conftest import RECIPIENT, TEAM, Workers

IDLE_WATCHER = """
watcher = mb.watcher(sys.argv[1])
say("ready")
while True:
    watcher.wait(3600)
    say("woken")
"""


def _switches(pid: int) -> int:
    counts = psutil.Process(pid).num_ctx_switches()
    return counts.voluntary + counts.involuntary


def test_an_idle_watcher_is_not_woken_by_messages_to_other_inboxes(team: Home, workers: Workers) -> None:
    TeamStore(team).add_member(TEAM, Member(agent_id=f"ann@{TEAM}", name="ann"))
    mailbox = Mailbox(team, TEAM)
    mailbox.send("ann", "make the inbox", sender="team-lead")
    mailbox.send(RECIPIENT, "make the inbox", sender="team-lead")
    idle = workers.start("idle", IDLE_WATCHER, "ann")
    idle.expect("ready")
    time.sleep(0.2)  # its start-up's own wake-ups are over
    before = _switches(idle.pid)
    for n in range(100):  # each: the lock directory in and out, a temp file made and closed, a rename, a flock file
        mailbox.send(RECIPIENT, f"for bob {n}", sender="team-lead")
    mailbox.take(RECIPIENT)
    time.sleep(0.1)
    # a directory watch wakes it several times per write (hundreds here); the inode watch not once
    assert _switches(idle.pid) - before < 10
    mailbox.send("ann", "now you", sender="team-lead")
    idle.expect("woken", timeout=5)


def test_its_own_inbox_wakes_it_however_it_is_changed(team: Home) -> None:
    mailbox = Mailbox(team, TEAM)
    path = team.inbox_path(TEAM, RECIPIENT)
    path.parent.mkdir(parents=True, exist_ok=True)
    watcher = watch_file(path)
    assert isinstance(watcher, FileWatcher)
    try:
        assert not watcher.wait(0.05)
        mailbox.send(RECIPIENT, "the first write creates it", sender="team-lead")
        assert watcher.wait(2)
        mailbox.send(RECIPIENT, "a replace", sender="team-lead")
        assert watcher.wait(2)
        with path.open("r+") as in_place:  # Claude Code writes an inbox in place
            in_place.write(" ")
        assert watcher.wait(2)
        path.unlink()
        assert watcher.wait(2)
        assert not watcher.wait(0.05)
        mailbox.send(RECIPIENT, "made again", sender="team-lead")
        assert watcher.wait(2)
    finally:
        watcher.close()


def test_the_replaced_inode_going_away_later_is_not_a_change(team: Home) -> None:
    mailbox = Mailbox(team, TEAM)
    mailbox.send(RECIPIENT, "one", sender="team-lead")
    path = team.inbox_path(TEAM, RECIPIENT)
    watcher = watch_file(path)
    try:
        held = os.open(path, os.O_RDONLY)  # a reader still has the old inode open across the replace
        mailbox.send(RECIPIENT, "two", sender="team-lead")
        assert watcher.wait(2)
        os.close(held)  # the old inode is freed now: its removal is not news about the inbox
        assert not watcher.wait(0.1)
        mailbox.send(RECIPIENT, "three", sender="team-lead")
        assert watcher.wait(2)
    finally:
        watcher.close()


def test_no_send_of_a_burst_is_missed(team: Home) -> None:
    """The watch moves to the new inode before ``wait`` returns: a send landing between that and the read is seen
    by the read, and one after it wakes the next wait. A lost wake-up shows as a wait running out with mail due."""
    mailbox = Mailbox(team, TEAM)
    count = 300
    sender = threading.Thread(target=lambda: [mailbox.send(RECIPIENT, f"m{n}", sender="team-lead")
                                              for n in range(count)])
    watcher = mailbox.watcher(RECIPIENT)
    got: list[str] = []
    try:
        sender.start()
        while len(got) < count:
            got += [entry.text for entry in mailbox.take(RECIPIENT)]
            if len(got) < count and not watcher.wait(3):
                assert not mailbox.pending(RECIPIENT), f"woken for none of the {count - len(got)} left"
        sender.join()
    finally:
        watcher.close()
    assert got == [f"m{n}" for n in range(count)]


def test_its_directory_removed_and_made_again(team: Home) -> None:
    mailbox = Mailbox(team, TEAM)
    mailbox.send(RECIPIENT, "one", sender="team-lead")
    path = team.inbox_path(TEAM, RECIPIENT)
    watcher = watch_file(path)
    try:
        shutil.rmtree(path.parent)
        assert watcher.wait(2)  # the file went with it
        assert not watcher.wait(3 * POLL_INTERVAL)  # nothing to watch: no error, no busy loop of wake-ups
        path.parent.mkdir()
        Path(path).write_text("[]")
        assert watcher.wait(2)
    finally:
        watcher.close()


def test_a_follower_of_one_events_file_wakes_for_its_appends_only(tmp_path: Path) -> None:
    """``swarm logs -f ann``: ann's events are appended by a writer that keeps the file open (no close, no rename),
    and rotated by a rename; bob's events beside them are not news to ann's follower."""
    ann, bob = tmp_path / "ann.jsonl", tmp_path / "bob.jsonl"
    watcher = watch_file(ann, appended=True)
    try:
        with ann.open("a") as ann_writer, bob.open("a") as bob_writer:
            assert watcher.wait(2)  # ann's file arrived
            for n in range(5):
                bob_writer.write(f"{n}\n")
                bob_writer.flush()
            assert not watcher.wait(0.1)
            ann_writer.write("one\n")
            ann_writer.flush()
            assert watcher.wait(2)
        ann.rename(tmp_path / "ann.jsonl.1")  # rotated: the next event starts a new file
        assert watcher.wait(2)
        with ann.open("a") as ann_writer:
            assert watcher.wait(2)
            ann_writer.write("two\n")
            ann_writer.flush()
            assert watcher.wait(2)
    finally:
        watcher.close()
