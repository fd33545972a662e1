"""``teams.example/hooks``: a Claude Code project's ``.claude/`` (settings.json with hooks, shell scripts) copied
into a sample repository works unchanged under ``swarm run -p``, offline on the example's playbook."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from swarm.agent.transcript import Transcript
from swarm.runtime.sample_repo import make_sample_repo
from tests.forked import run_swarm

EXAMPLE = Path(__file__).resolve().parents[2] / "teams.example" / "hooks"


def test_the_hooks_example_blocks_rm_rf_reports_the_edit_and_lets_the_turn_end(tmp_path: Path) -> None:
    repo = make_sample_repo(tmp_path / "repo")
    shutil.copytree(EXAMPLE / "claude", repo / ".claude", dirs_exist_ok=True)
    (repo / "__pycache__").mkdir()
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    transcript = tmp_path / "run.jsonl"
    result = run_swarm(["run", "--cwd", str(repo), "--playbook", str(EXAMPLE / "lead.toml"), "--transcript",
                        str(transcript), "-p", "tidy up"], env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Tidied up")
    assert (repo / "__pycache__").is_dir()  # the rm -rf never ran
    assert "# add new helpers below" in (repo / "text_utils.py").read_text()
    messages = Transcript(transcript).messages()
    assert "never delete directories with rm -rf" in messages[0].text()  # SessionStart's context
    results = [b for m in messages for b in m.content if b.type == "tool_result"]
    assert results[0].is_error and "Blocked by the project's no-rm-rf hook" in results[0].text()
    assert "check-python hook: text_utils.py compiles" in results[2].text()
