"""Bad files in the home: every command answers with one line, never a traceback, never a hang.

What a hostile teammate with a Bash tool (or a broken disk) can leave where
swarm keeps a file: a directory, a FIFO, a symlink loop, binary junk, a line
nested too deep for the JSON parser. Each is planted, then every command that
reads that file runs through the installed ``swarm`` executable.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from swarm.core.home import Home
from swarm.core.protocol import Member
from swarm.core.teams import TeamStore
from tests.cli.conftest import SWARM_EXE
from tests.forked import run_swarm

TEAM = "t"

COMMANDS: dict[str, list[str]] = {
    "team list": ["team", "list"],
    "team show": ["team", "show", TEAM],
    "status": ["status", "--team", TEAM],
    "send": ["send", "bob", "hello", "--team", TEAM],
    "inbox": ["inbox", "bob", "--team", TEAM],
    "permissions": ["permissions", "--team", TEAM],
    "logs": ["logs", "bob", "--team", TEAM],
}


def _plant_dir(path: Path) -> None:
    path.mkdir()


def _plant_fifo(path: Path) -> None:
    os.mkfifo(path)


def _plant_loop(path: Path) -> None:
    path.symlink_to(path.name)  # points at itself: ELOOP


PLANTS: dict[str, Callable[[Path], None]] = {"dir": _plant_dir, "fifo": _plant_fifo, "loop": _plant_loop}


def _files(home: Home) -> dict[str, Path]:
    return {
        "config": home.config_path(TEAM),
        "inbox": home.inbox_path(TEAM, "bob"),
        "permissions": home.team_dir(TEAM) / "permissions.jsonl",
        "log": home.log_path(TEAM, "bob"),
    }


READERS: dict[str, list[str]] = {
    "config": list(COMMANDS),
    "inbox": ["status", "send", "inbox"],
    "permissions": ["status", "permissions"],
    "log": ["logs"],
}
"""Which commands read which file (each pair is one case)."""


def _team_with_bob(home: Home) -> None:
    store = TeamStore(home)
    store.create(TEAM)
    store.add_member(TEAM, Member(agent_id=f"bob@{TEAM}", name="bob", joined_at=1, cwd=str(home.root),
                                  is_active=False, status="stopped", subscriptions=[]))
    home.logs_dir(TEAM).mkdir(parents=True, exist_ok=True)
    home.log_path(TEAM, "bob").write_text("bob started\n")
    (home.team_dir(TEAM) / "permissions.jsonl").write_text("")


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    """``swarm ARGS`` as a process of its own; a hang is a failure (TimeoutExpired), not a stuck test run."""
    return run_swarm(args, timeout=20)


def _assert_one_line_error(result: subprocess.CompletedProcess[str], *expected: str) -> None:
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("swarm: error: "), result.stderr
    for text in expected:
        assert text in lines[0], lines[0]


CASES = [(file, kind, command) for file, commands in READERS.items() for kind in PLANTS for command in commands
         if (file, kind) != ("log", "loop")]
"""Left out: a looping link in place of a log reads as a missing log, and that was already one line."""


@pytest.mark.parametrize(("file", "kind", "command"), CASES, ids=[f"{f}-{k}-{c}" for f, k, c in CASES])
def test_planted_file_gives_one_line(home: Home, file: str, kind: str, command: str) -> None:
    _team_with_bob(home)
    path = _files(home)[file]
    path.unlink(missing_ok=True)
    PLANTS[kind](path)
    result = _run(COMMANDS[command])
    _assert_one_line_error(result, str(path))


def test_deeply_nested_permission_record_is_skipped(home: Home) -> None:
    """One line of ``[`` * 100000 broke the JSON parser with RecursionError in status and permissions."""
    _team_with_bob(home)
    record = home.team_dir(TEAM) / "permissions.jsonl"
    record.write_text("[" * 100_000 + "\n")
    for command in ("status", "permissions"):
        result = _run(COMMANDS[command])
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr and "RecursionError" not in result.stderr, result.stderr


def test_sigint_while_loading_is_one_line(home: Home) -> None:
    """Ctrl-C while ``swarm`` is still importing its modules: the one line and 130, no traceback.

    ``PYTHONPROFILEIMPORTTIME`` makes the interpreter report each import as it
    completes; the signal is sent when ``click`` is reported, i.e. while
    ``swarm.cli.main`` (which imports click) is itself still being imported.
    """
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    child = subprocess.Popen([str(SWARM_EXE), "team", "list"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True, env=env)
    try:
        assert child.stderr is not None
        seen: list[str] = []
        for line in child.stderr:
            seen.append(line)
            if _imported(line) == "click":
                child.send_signal(signal.SIGINT)
                break
        rest = child.stderr.read()
        code = child.wait(timeout=20)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert any(_imported(line) == "click" for line in seen), "click was never imported"
    errors = [line for line in rest.splitlines() if not line.startswith("import time:")]
    assert "Traceback" not in rest and "KeyboardInterrupt" not in rest, rest
    assert code == 130 and errors == ["swarm: error: interrupted"], (code, errors)


def _imported(line: str) -> str:
    """The module named by a ``-X importtime`` line (``import time: 12 | 34 |   click``)."""
    return line.rsplit("|", 1)[-1].strip() if line.startswith("import time:") else ""


def test_team_list_names_a_team_it_cannot_read(home: Home) -> None:
    """An unparsable config.json made `team list` say "no teams" and exit 0."""
    _team_with_bob(home)
    TeamStore(home).create("good")
    home.config_path(TEAM).write_text("{not json")
    result = _run(COMMANDS["team list"])
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert [line.split()[0] for line in result.stdout.splitlines()] == ["TEAM", "good"], result.stdout
    [line] = [line for line in result.stderr.splitlines() if line.startswith("swarm: error:")]
    assert line.startswith(f"swarm: error: team {TEAM} is unreadable: ") and "does not parse" in line, line

    home.config_path("good").unlink()  # the unreadable team is the only one: still not "no teams"
    alone = _run(COMMANDS["team list"])
    assert alone.returncode == 1 and alone.stdout == "" and f"team {TEAM} is unreadable" in alone.stderr
