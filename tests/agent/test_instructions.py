"""The context block from real instruction files and a real git repository in tmp dirs."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from swarm.agent.instructions import FILE_CAP, STATUS_LINES, context_block
from tests.conftest import trust_tmp_dirs
from tests.runtime.worktrees.conftest import git

TODAY = date(2025, 3, 14)


@pytest.fixture
def env(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    config = tmp_path / "claude-config"
    config.mkdir()
    trust_tmp_dirs(config, tmp_path_factory)
    (config / "CLAUDE.md").write_text("user: answer tersely\n")
    return {"CLAUDE_CONFIG_DIR": str(config), "HOME": "/nonexistent-home"}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository in ``outer/`` (which has its own CLAUDE.md) with instructions at its root and in ``pkg/``."""
    (tmp_path / "outer").mkdir()
    (tmp_path / "outer" / "CLAUDE.md").write_text("outer: not part of the project\n")
    path = tmp_path / "outer" / "repo"
    (path / "pkg" / ".claude").mkdir(parents=True)
    git(path, "init", "-q", "-b", "trunk")
    (path / "CLAUDE.md").write_text("root: run make test\n")
    (path / "CLAUDE.local.md").write_text("root-local: my sandbox URL\n")
    (path / "pkg" / "CLAUDE.md").write_text("pkg: use pydantic\n")
    (path / "pkg" / ".claude" / "CLAUDE.md").write_text("pkg-dot-claude: no prints\n")
    (path / "pkg" / "AGENTS.md").write_text("pkg-agents: keep functions small\n")
    return path


def commit(repo: Path, subject: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", subject)


def test_instruction_files_from_user_then_repository_root_down_to_cwd(repo: Path, env: dict[str, str]) -> None:
    cwd = repo / "pkg"
    block = context_block(cwd, env=env, today=TODAY)
    assert block.startswith("<system-reminder>\n") and block.endswith("\n</system-reminder>")
    markers = ["user: answer tersely", "root: run make test", "root-local: my sandbox URL", "pkg: use pydantic",
               "pkg-dot-claude: no prints", "pkg-agents: keep functions small"]
    positions = [block.index(marker) for marker in markers]
    assert positions == sorted(positions)
    assert f"Contents of {repo / 'CLAUDE.md'} (" in block
    assert f"Contents of {cwd / '.claude' / 'CLAUDE.md'} (" in block
    assert "outer: not part of the project" not in block
    assert "Today's date is 2025-03-14." in block


def test_git_snapshot_has_branch_capped_status_and_the_last_three_commits(repo: Path, env: dict[str, str]) -> None:
    for subject in ("first commit", "second commit", "third commit", "fourth commit"):
        (repo / "log.txt").write_text(subject)
        commit(repo, subject)
    (repo / "CLAUDE.md").write_text("root: changed\n")
    for i in range(STATUS_LINES + 5):
        (repo / f"untracked-{i:02d}.txt").write_text("x")

    block = context_block(repo, env=env, today=TODAY)
    assert "Current branch: trunk" in block
    assert " M CLAUDE.md" in block
    assert "untracked-00.txt" in block and f"untracked-{STATUS_LINES + 4:02d}.txt" not in block
    assert "and 6 more" in block  # 26 changed paths: 20 shown
    assert "fourth commit" in block and "second commit" in block and "first commit" not in block


def test_omit_instructions_keeps_git_status_and_date(repo: Path, env: dict[str, str]) -> None:
    block = context_block(repo / "pkg", env=env, omit_instructions=True, today=TODAY)
    assert "Contents of" not in block and "root: run make test" not in block and "user: answer" not in block
    assert "Current branch: trunk" in block and "(no commits yet)" in block
    assert "Today's date is 2025-03-14." in block


def test_outside_a_repository_there_is_no_git_section(tmp_path: Path, env: dict[str, str]) -> None:
    cwd = tmp_path / "plain"
    cwd.mkdir()
    (cwd / "AGENTS.md").write_text("plain: agents file\n")
    block = context_block(cwd, env=env, today=TODAY)
    assert "plain: agents file" in block and "user: answer tersely" in block
    assert "Current branch" not in block


def test_a_big_file_is_cut_and_says_so(repo: Path, env: dict[str, str]) -> None:
    (repo / "CLAUDE.md").write_text("big-start\n" + "x" * (2 * FILE_CAP) + "\nbig-end\n")
    block = context_block(repo, env=env, today=TODAY)
    assert "big-start" in block and "big-end" not in block
    assert f"[truncated: {repo / 'CLAUDE.md'} is {2 * FILE_CAP + 19} bytes; only the first 40 KB are shown" in block
    assert len(block) < 2 * FILE_CAP


def test_a_file_that_cannot_be_read_is_skipped(repo: Path, env: dict[str, str]) -> None:
    (repo / "CLAUDE.local.md").unlink()
    (repo / "CLAUDE.local.md").symlink_to(repo / "missing-target.md")  # dangling: exists as a name only
    (repo / "AGENTS.md").mkdir()  # a directory where a file would be
    block = context_block(repo, env=env, today=TODAY)
    assert "root: run make test" in block
    assert f"Contents of {repo / 'CLAUDE.local.md'}" not in block and f"Contents of {repo / 'AGENTS.md'}" not in block


def test_same_inputs_give_the_same_bytes(repo: Path, env: dict[str, str]) -> None:
    commit(repo, "initial")
    assert context_block(repo / "pkg", env=env, today=TODAY) == context_block(repo / "pkg", env=env, today=TODAY)
