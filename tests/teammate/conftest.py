"""Real teammate processes (tmux on a private server, or subprocesses), offline scripted model."""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from swarm.backends.procs import kill_tree
from swarm.core.frames import IdleNotification, entry_frame
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.protocol import Member
from swarm.core.teams import TeamStore
from swarm.runtime.spawn import SpawnRequest, spawn
from swarm.teammate.served import teammate_processes
from tests.backends.helpers import retry_until

PLAYBOOK = r"""
[[rules]]
name = "ping"
match = 'ping (?P<tok>\w+)'
[[rules.steps]]
tool_calls = [{ name = "SendMessage", input = { to = "team-lead", message = "pong {tok} from {agent_name}", summary = "pong" } }]
[[rules.steps]]
text = "answered ping {tok}"

[[rules]]
name = "slow"
match = 'slow job (?P<tok>\w+)'
tool_calls = [{ name = "Bash", input = { command = "echo {tok} >> runs.txt; sleep 30" } }]
"""

REFUSER = r"""
[[rules]]
name = "refuse"
match = '"type":\s*"shutdown_request".*"requestId":\s*"(?P<rid>[^"]+)"'
[[rules.steps]]
tool_calls = [{ name = "SendMessage", input = { to = "team-lead", message = { type = "shutdown_response", request_id = "{rid}", approve = false, reason = "still merging" } } }]
[[rules.steps]]
text = "refused"

[[rules]]
name = "hello"
match = 'hello'
text = "ready"
"""
"""A teammate that refuses every shutdown ("still merging") and answers 'hello' with 'ready'."""

STUBBORN = r"""
[[rules]]
name = "stubborn"
match = 'shutdown_request'
tool_calls = [{ name = "Bash", input = { command = "sleep 60" } }]
"""


@pytest.fixture
def tmux_socket() -> Iterator[str]:
    """A private tmux server for this test, killed at teardown."""
    name = f"swarm-test-{uuid.uuid4().hex[:10]}"
    yield name
    subprocess.run(["tmux", "-L", name, "kill-server"], capture_output=True, check=False)


@pytest.fixture
def team(home: Home, tmp_path: Path, team_store: str | None) -> Iterator[str]:
    """Team ``t`` in a fresh home (in files, or in ``team_store``'s database); every teammate process still alive
    at teardown is killed."""
    TeamStore(home).create("t", store=team_store)
    yield "t"
    for member in TeamStore(home).get("t").members if TeamStore(home).exists("t") else []:
        if member.pid and member.name != "team-lead" and psutil.pid_exists(member.pid):
            kill_tree(member.pid, 1.0)


@pytest.fixture
def playbook(tmp_path: Path) -> Path:
    path = tmp_path / "playbook.toml"
    path.write_text(PLAYBOOK)
    return path


@pytest.fixture
def stubborn_playbook(tmp_path: Path) -> Path:
    """Answers every shutdown request by starting a minute-long command."""
    path = tmp_path / "stubborn.toml"
    path.write_text(STUBBORN)
    return path


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


@pytest.fixture
def start(home: Home, team: str, playbook: Path, workdir: Path, tmux_socket: str,
          request: pytest.FixtureRequest) -> Callable[..., Member]:
    """Starts a teammate. Teammates are forked from the home's CLI server (``served``), as a person's are, unless
    the test is marked ``unserved`` (one about a new interpreter's own process tree)."""
    if request.node.get_closest_marker("unserved") is None:
        request.getfixturevalue("served")

    def run(name: str, prompt: str = "hello", *, backend: str = "subprocess", book: Path | None = None,
            **extra: object) -> Member:
        options: dict[str, object] = {"cwd": workdir, **extra}
        request = SpawnRequest(team=team, name=name, prompt=prompt, backend=backend,
                               playbook=book or playbook, tmux_socket=tmux_socket, **options)
        return spawn(home, request, dict(os.environ))

    return run


def wait_status(home: Home, team: str, name: str, status: str, timeout: float = 15.0) -> None:
    def check() -> bool:
        member = TeamStore(home).get(team).member(name)
        return member is not None and member.status == status and bool(member.is_active or status != "idle")

    retry_until(check, timeout, what=f"{name} to be {status}")


def lead_texts(home: Home, team: str) -> list[str]:
    """The text of every entry in the lead's inbox, oldest first."""
    return [e.text for e in Mailbox(home, team).read("team-lead")]


def idle_results(home: Home, team: str, name: str) -> list[str | None]:
    """The ``result`` of each idle notification ``name`` sent the lead, oldest first (one per finished turn)."""
    frames = [entry_frame(e) for e in Mailbox(home, team).read("team-lead")]
    return [f.result for f in frames if isinstance(f, IdleNotification) and f.sender == name]


def teammate_pids(home: Home) -> list[int]:
    """Live teammate processes of this home: launchers, forked workers and unserved teammates."""
    return [proc.pid for proc in teammate_processes(str(home.root))]
