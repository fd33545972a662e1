"""``swarm logs -f`` follows a subprocess teammate's live transcript from another terminal (installed executable)."""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from swarm.agent.live_events import EventReader
from swarm.core.home import Home
from tests.backends.helpers import retry_until
from tests.cli.conftest import SWARM_EXE
from tests.cli.test_cli_teammates import cli_team, swarm  # noqa: F401 (the fixture)

pytestmark = pytest.mark.usefixtures("served")  # teammates forked from the home's CLI server (tests.zygote)

PLAYBOOK = r"""
[[rules]]
name = "work"
match = 'work on (?P<tok>\w+)'
[[rules.steps]]
text = "looking at {tok}"
tool_calls = [{ name = "Bash", input = { command = "echo listed-{tok}" } }]
[[rules.steps]]
text = "finished {tok}"
"""


class Follower:
    """``swarm logs`` in a subprocess, its stdout read line by line on a thread."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen([str(SWARM_EXE), "logs", *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def text(self) -> str:
        return "\n".join(self.lines)


@pytest.fixture
def ann(cli_team: tuple[Home, Path], tmp_path: Path) -> Iterator[Home]:  # noqa: F811
    home, work = cli_team
    book = tmp_path / "book.toml"
    book.write_text(PLAYBOOK)
    out = swarm("spawn", "ann", "--team", "t", "--prompt", "work on alpha", "--backend", "subprocess",
                "--cwd", str(work), "--playbook", str(book), "--allowed-tools", "Bash(echo *)")
    assert out.returncode == 0, out.stderr
    yield home


def test_follow_shows_the_teammates_events_as_they_happen_and_ends_when_it_is_gone(ann: Home) -> None:
    home = ann
    follower = Follower("ann", "--team", "t", "-f")
    try:
        retry_until(lambda: "◆ answer" in follower.text(), 20, what="the first turn in the follow")
        assert swarm("send", "ann", "work on beta", "--team", "t").returncode == 0
        retry_until(lambda: "finished beta" in follower.text(), 20, what="the second turn, live")
        shown = follower.text()
        assert "⇐ team-lead work on beta" in shown
        assert "● looking at beta" in shown and "[2] Bash run: echo listed-beta → ok: listed-beta" in shown
        assert "joined team" not in shown  # log lines are not events
        down = swarm("shutdown", "ann", "--team", "t", "--timeout", "10")
        assert down.returncode == 0, down.stderr
        assert follower.proc.wait(timeout=20) == 0  # the follow ends with the teammate
    finally:
        follower.proc.kill()
    assert follower.lines[-1].startswith("— gone")
    log = home.log_path("t", "ann").read_text()  # a subprocess teammate's log: the same rendering, plain
    assert "[2] Bash run: echo listed-beta → ok: listed-beta" in log and "joined team" in log
    assert "\x1b[" not in log  # no colours or cursor moves in a file

    # the same events, one JSON object a line; the last N; since a time
    every = EventReader(home.events_path("t", "ann")).history()
    as_json = swarm("logs", "ann", "--team", "t", "--json")
    parsed = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert parsed == [e.wire() for e in every if e.type != "text_delta"]
    tail = swarm("logs", "ann", "--team", "t", "--json", "--tail", "2").stdout.splitlines()
    assert [json.loads(line) for line in tail] == parsed[-2:]
    assert swarm("logs", "ann", "--team", "t", "--since", "2999-01-01T00:00:00Z").stdout == ""
    assert "finished alpha" in swarm("logs", "ann", "--team", "t", "--since", "1h").stdout
    bad = swarm("logs", "ann", "--team", "t", "--since", "yesterday")
    assert bad.returncode != 0 and "--since 'yesterday' is neither a duration" in bad.stderr
