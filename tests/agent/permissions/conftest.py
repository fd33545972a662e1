from __future__ import annotations

import json
from pathlib import Path

import pytest

from swarm.core.home import Home
from tests.teammate.conftest import start, team, tmux_socket, workdir  # noqa: F401 - shared fixtures

PERMISSIONS_PLAYBOOK = r"""
[[rules]]
name = "bash"
match = 'run (?P<cmd>[^<]+)'
[[rules.steps]]
tool_calls = [{ name = "Bash", input = { command = "{cmd}" } }]
[[rules.steps]]
text = "ran it"

[[rules]]
name = "write"
match = 'write (?P<path>[^ <]+)'
[[rules.steps]]
tool_calls = [{ name = "Write", input = { file_path = "{path}", content = "written" } }]
[[rules.steps]]
text = "wrote it"

[[rules]]
name = "plan in the message"
match = 'propose'
[[rules.steps]]
text = "1. read the code\n2. change it"
tool_calls = [{ name = "ExitPlanMode", input = {} }]
[[rules.steps]]
text = "proposed"

[[rules]]
name = "plan"
match = 'implement'
[[rules.steps]]
tool_calls = [{ name = "Write", input = { file_path = "feature.py", content = "print('feature')" } }]
[[rules.steps]]
tool_calls = [{ name = "ExitPlanMode", input = { plan = "1. write feature.py\n2. run it" } }]
[[rules.steps]]
tool_calls = [{ name = "Write", input = { file_path = "feature.py", content = "print('feature')" } }]
[[rules.steps]]
text = "done implementing"
"""


@pytest.fixture
def playbook(tmp_path: Path) -> Path:
    path = tmp_path / "permissions.toml"
    path.write_text(PERMISSIONS_PLAYBOOK)
    return path


def tool_results(home: Home, team: str, name: str) -> list[dict]:  # type: ignore[type-arg]
    """The teammate's tool results so far (a line it is appending right now is not read yet)."""
    path = home.transcript_path(team, name)
    out = []
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            record = json.loads(line)
        except ValueError:
            break  # torn: being written
        if record["kind"] == "message":
            out += [b for b in record["message"]["content"] if b["type"] == "tool_result"]
    return out
