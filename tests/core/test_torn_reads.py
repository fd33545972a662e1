"""Reading a file another program rewrites in place, and rewriting it the way it was written.

Claude Code rewrites ``config.json`` in place at times (truncate, then
write), so a reader may see an empty or cut-off file for a few
milliseconds. swarm re-reads such a file for up to ~0.5 s before it counts
as corrupt, and a read-only look never moves it aside.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.teams import TeamStore
from tests.cli.conftest import SWARM_EXE

if TYPE_CHECKING:
    from conftest import Workers  # tests/core/conftest.py; only for annotations

TEAM = "crew"
READ_FOR = 3.0
"""Seconds the readers keep reading while the file is being torn (longer if the CLI has not run ``MIN_SHOWS`` times)."""
MIN_SHOWS = 3

TEARER = """
import os, signal, sys, time
stopping = []
signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))  # finish the round, leave the file whole
path = sys.argv[1]
data = open(path, "rb").read()
cut = len(data) // 2
print("tearing", flush=True)
rounds = 0
while not stopping:
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)   # in place, like Claude Code at times
    time.sleep(0.001)                               # empty
    os.write(fd, data[:cut])
    time.sleep(0.002)                               # a valid prefix, a bad tail
    os.write(fd, data[cut:])
    os.close(fd)
    rounds += 1
    if rounds % 50 == 0:
        print(f"rounds {rounds}", flush=True)
    time.sleep(0.01)                                # whole, until the next rewrite
print("stopped", flush=True)
"""


def _corrupt(config: Path) -> list[Path]:
    return sorted(config.parent.glob(f"{config.name}.corrupt-*"))


def test_readers_of_a_file_rewritten_in_place_see_it_whole_and_never_move_it(
    workers: Workers, team: Home, caplog: pytest.LogCaptureFixture
) -> None:
    config = team.config_path(TEAM)
    store = TeamStore(team)
    tearer = workers.start("tearer", TEARER, config, prologue=False)
    tearer.expect("tearing")
    tearer.expect("rounds 50")  # the tearing is under way

    reads, shows = 0, 0
    deadline = time.monotonic() + READ_FOR
    env = {**os.environ, "SWARM_HOME": str(team.root)}
    show = subprocess.Popen([str(SWARM_EXE), "team", "show", TEAM], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        while time.monotonic() < deadline or show.poll() is None:
            assert [m.name for m in store.get(TEAM).members] == ["team-lead", "bob"]
            reads += 1
            if show.poll() is not None:
                out, err = show.communicate()
                assert show.returncode == 0 and err == "" and "bob" in out, (show.returncode, err)
                shows += 1
                if time.monotonic() < deadline or shows < MIN_SHOWS:  # a loaded machine: slow CLI runs
                    show = subprocess.Popen([str(SWARM_EXE), "team", "show", TEAM], stdout=subprocess.PIPE,
                                            stderr=subprocess.PIPE, text=True, env=env)
    finally:
        if show.poll() is None:
            show.kill()
        show.communicate()
    os.kill(tearer.pid, signal.SIGTERM)  # a SIGKILL could cut a round and leave the file torn
    tearer.expect("stopped")
    tearer.join(10)

    assert reads > 50 and shows >= MIN_SHOWS, (reads, shows)
    assert not _corrupt(config), "a read-only look moved a live file aside"
    assert not [r for r in caplog.records if r.levelname in ("WARNING", "ERROR")]
    assert json.loads(config.read_bytes())["name"] == TEAM


def test_a_writer_waits_out_a_torn_file_instead_of_quarantining(workers: Workers, team: Home) -> None:
    config = team.config_path(TEAM)
    tearer = workers.start("tearer", TEARER, config, prologue=False)
    tearer.expect("rounds 50")
    for _ in range(20):
        Mailbox(team, TEAM).send("bob", "hi", sender="team-lead")  # reads config.json
    tearer.kill()
    assert not _corrupt(config)


# -- rewriting keeps the file's style ---------------------------------------------------------


@pytest.mark.parametrize(("indent", "mode"), [(2, 0o644), (None, 0o600), (4, 0o640)], ids=["cc", "compact", "four"])
def test_a_rewrite_keeps_indentation_and_mode(home: Home, indent: int | None, mode: int) -> None:
    TeamStore(home).create(TEAM)
    inbox = home.inbox_path(TEAM, "team-lead")
    entry = {"from": "cc", "text": "hi", "timestamp": "2026-01-01T00:00:00.000Z", "read": False}
    inbox.write_text(json.dumps([entry], indent=indent))
    os.chmod(inbox, mode)
    Mailbox(home, TEAM).send("team-lead", "hello", sender="bob")
    written = inbox.read_bytes()
    doc = json.loads(written)
    assert [e["text"] for e in doc] == ["hi", "hello"]
    compact = (",", ":") if indent is None else None  # compact is written with no whitespace at all
    assert written == json.dumps(doc, indent=indent, ensure_ascii=False, separators=compact).encode()
    assert os.stat(inbox).st_mode & 0o777 == mode


@pytest.mark.parametrize("start", [None, b"[]"], ids=["absent", "claude-codes-fresh-inbox"])
@pytest.mark.parametrize(("lead_session", "indent"), [("s-1", 2), (None, None)], ids=["claude-code-team", "swarm-team"])
def test_an_inbox_with_no_style_of_its_own_follows_the_team(home: Home, start: bytes | None,
                                                             lead_session: str | None, indent: int | None) -> None:
    # Claude Code creates an inbox as `[]` before its first write: nothing there says 2-space
    TeamStore(home).create(TEAM, lead_session_id=lead_session)
    inbox = home.inbox_path(TEAM, "team-lead")
    if start is not None:
        inbox.write_bytes(start)
    Mailbox(home, TEAM).send("team-lead", "hello", sender="bob")
    written = inbox.read_bytes()
    compact = (",", ":") if indent is None else None
    assert written == json.dumps(json.loads(written), indent=indent, ensure_ascii=False, separators=compact).encode()


def test_a_config_that_stays_unparsable_is_named_not_reported_missing(home: Home) -> None:
    from swarm.core.teams import TeamStore
    from swarm.errors import CorruptFileError

    TeamStore(home).create("t")
    home.config_path("t").write_text('{"name": "t", "members": [')
    with pytest.raises(CorruptFileError, match="does not parse"):
        TeamStore(home).get("t")
    assert home.config_path("t").exists()  # a reader never moves it aside
