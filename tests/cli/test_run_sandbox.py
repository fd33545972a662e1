"""``swarm run -p --sandbox``: the lead's own Bash runs in the OS sandbox (headless, no gate asks anything)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.agent.sandbox.conftest import needs_bwrap
from tests.cli.conftest import SWARM_EXE
from tests.fakes import FakeAnthropicServer
from tests.fakes.anthropic_server import text_reply, tool_use_reply

pytestmark = needs_bwrap


def test_the_leads_own_bash_cannot_write_outside_its_cwd(tmp_path: Path, api: FakeAnthropicServer) -> None:
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    command = f"touch inside.txt && python3 -c \"open('{outside}/escaped', 'w')\""
    api.enqueue(tool_use_reply("Bash", {"command": command}), text_reply("done"))
    done = subprocess.run([str(SWARM_EXE), "run", "--sandbox", "-p", "go"], cwd=work, capture_output=True,
                          text=True, timeout=60,
                          env={**os.environ, "ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": api.base_url})
    assert done.returncode == 0, done.stderr
    result = api.requests[1].body["messages"][-1]["content"][0]
    assert result["is_error"] and "Read-only file system" in str(result["content"])
    assert (work / "inside.txt").exists() and not (outside / "escaped").exists()
