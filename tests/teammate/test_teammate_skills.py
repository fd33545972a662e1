"""Skills in a real teammate process: a forked skill's grants hold in its subagent (only), a deny rule beats them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from swarm.agent.transcript import Transcript
from swarm.core.home import Home
from swarm.core.permlog import PermissionLog
from swarm.core.protocol import Member
from swarm.models.messages import ToolResultBlock
from swarm.runtime.permission_desk import deny
from tests.backends.helpers import retry_until
from tests.teammate.conftest import idle_results

TOUCHING = r"""
[[rules]]
name = "use the skill"
match = 'check (?P<tok>\w+)'
[[rules.steps]]
tool_calls = [{ name = "Skill", input = { skill = "toucher", args = "{tok}" } }]
[[rules.steps]]
tool_calls = [{ name = "Bash", input = { command = "touch parent-{tok}.txt" } }]
[[rules.steps]]
text = "checked {tok}"

[[rules]]
name = "skill body"
match = 'Touch the marker (?P<tok>\w+)'
[[rules.steps]]
tool_calls = [{ name = "Bash", input = { command = "touch marker-{tok}.txt" } }]
[[rules.steps]]
text = "touched {tok}"
"""


def _toucher(workdir: Path, *, fork: bool) -> None:
    folder = workdir / ".claude" / "skills" / "toucher"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\ndescription: touches a marker\nallowed-tools: Bash(touch *)\n"
                                     + ("context: fork\n" if fork else "") + "---\nTouch the marker $0.\n")


def _tool_results(transcript: Transcript) -> list[ToolResultBlock]:
    return [b for m in transcript.messages() for b in m.content if isinstance(b, ToolResultBlock)]


def test_a_forked_skills_allowed_tools_run_without_asking_in_its_subagent_only(
        home: Home, team: str, tmp_path: Path, workdir: Path, start: Callable[..., Member]) -> None:
    _toucher(workdir, fork=True)
    book = tmp_path / "touching.toml"
    book.write_text(TOUCHING)
    start("w", "check one", book=book)
    permlog = PermissionLog(home, team)
    retry_until(lambda: len(permlog.pending()) == 1, 20, what="the teammate's own touch to ask")
    [request] = permlog.pending()
    assert request.input is not None and request.input["command"] == "touch parent-one.txt"  # the child's never asked
    assert (workdir / "marker-one.txt").exists() and not (workdir / "parent-one.txt").exists()
    deny(home, team, request.request_id, reason="the grant was the subagent's")
    retry_until(lambda: idle_results(home, team, "w") == ["checked one"], 20, what="the turn to end")
    transcript = Transcript(home.transcript_path(team, "w"))
    [link] = transcript.events("subagent")
    [child_result] = _tool_results(Transcript(Path(link["transcript"])))
    assert not child_result.is_error
    assert _tool_results(transcript)[0].content == "Skill toucher ran in a separate context and returned: touched one"


@pytest.mark.parametrize("fork", [False, True], ids=["inline", "fork"])
def test_a_deny_rule_beats_a_skills_allowed_tools(home: Home, team: str, tmp_path: Path, workdir: Path,
                                                  start: Callable[..., Member], fork: bool) -> None:
    _toucher(workdir, fork=fork)
    book = tmp_path / "touching.toml"
    book.write_text(TOUCHING)
    start("w", "/toucher one", book=book, disallowed_tools=["Bash(touch *)"])  # a slash command as the first prompt
    retry_until(lambda: len(idle_results(home, team, "w")) == 1, 20, what="the skill's turn")
    assert not (workdir / "marker-one.txt").exists() and not PermissionLog(home, team).path.exists()
    transcript = Transcript(home.transcript_path(team, "w"))
    [denied] = transcript.events("permission_denied")
    assert denied["by"] == "rule:Bash(touch *)"
    ran_in = Transcript(Path(transcript.events("subagent")[0]["transcript"])) if fork else transcript
    [result] = _tool_results(ran_in)
    assert result.is_error and result.content.startswith("permission denied")
