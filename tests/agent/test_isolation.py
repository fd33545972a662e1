"""A subagent's worktree, with real git repositories in tmp dirs: removed when untouched, kept when changed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from swarm.agent.isolation import BRANCH_PREFIX, IsolatedTree, isolated_worktree
from swarm.errors import InvalidNameError, UsageError
from tests.runtime.worktrees.conftest import branches, git


def registered(repo: Path) -> list[str]:
    """Paths of the worktrees git knows, the main one included."""
    return [line.removeprefix("worktree ") for line in git(repo, "worktree", "list", "--porcelain").splitlines()
            if line.startswith("worktree ")]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository on ``main`` with ``notes.txt`` and ``src/app.py`` committed and ``*.log`` ignored."""
    path = tmp_path / "repo"
    (path / "src").mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    (path / "notes.txt").write_text("first\n")
    (path / "src" / "app.py").write_text("print('hi')\n")
    (path / ".gitignore").write_text("*.log\n")
    git(path, "add", ".")
    git(path, "commit", "-qm", "initial")
    return path


def commit_a_change(tree: Path) -> None:
    (tree / "notes.txt").write_text("second\n")
    git(tree, "commit", "-qam", "second")


def edit_tracked(tree: Path) -> None:
    (tree / "src" / "app.py").write_text("print('changed')\n")


def add_untracked(tree: Path) -> None:
    (tree / "new.txt").write_text("new\n")


def stage_new(tree: Path) -> None:
    add_untracked(tree)
    git(tree, "add", "new.txt")


def write_ignored(tree: Path) -> None:
    (tree / "build.log").write_text("noise\n")


def nothing(tree: Path) -> None:
    pass


def test_inside_the_block_the_worktree_is_a_fresh_checkout_of_head(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    with isolated_worktree(repo / "src", "ab12cd") as tree:
        assert tree.path.is_dir() and (tree.path / "notes.txt").read_text() == "first\n"
        assert tree.path.is_relative_to(repo) and tree.repo == repo.resolve()
        assert tree.branch == f"{BRANCH_PREFIX}/ab12cd" and tree.branch in branches(repo)
        assert tree.base == head == git(tree.path, "rev-parse", "HEAD")
        assert git(repo, "status", "--porcelain") == ""  # .swarm/ is excluded: the main checkout stays clean
        assert (tree.kept, tree.summary) == (False, "")


@pytest.mark.parametrize("work", [nothing, write_ignored], ids=["nothing", "ignored-file"])
def test_an_unchanged_worktree_is_removed_with_its_branch(repo: Path, work: Callable[[Path], None]) -> None:
    with isolated_worktree(repo, "quiet") as tree:
        work(tree.path)
    assert not tree.path.exists()
    assert tree.branch not in branches(repo) and str(tree.path) not in registered(repo)
    assert (tree.kept, tree.summary) == (False, "removed (no changes)")


@pytest.mark.parametrize(("work", "says"), [
    (commit_a_change, "1 commit ahead"),
    (edit_tracked, "1 uncommitted path"),
    (add_untracked, "1 uncommitted path"),
    (stage_new, "1 uncommitted path"),
], ids=["commit", "tracked-edit", "untracked-file", "staged-file"])
def test_a_changed_worktree_is_kept_and_reported(repo: Path, work: Callable[[Path], None], says: str) -> None:
    with isolated_worktree(repo, "busy") as tree:
        work(tree.path)
    assert tree.kept and tree.path.is_dir() and tree.branch in branches(repo)
    assert tree.summary.startswith(f"kept worktree {tree.path} on branch {tree.branch}: ")
    assert says in tree.summary


def test_a_kept_commit_stays_on_its_branch_and_main_is_untouched(repo: Path) -> None:
    main_head = git(repo, "rev-parse", "HEAD")
    with isolated_worktree(repo, "writer") as tree:
        commit_a_change(tree.path)
    assert git(repo, "log", "-1", "--format=%s", tree.branch) == "second"
    assert git(repo, "rev-parse", "HEAD") == main_head and (repo / "notes.txt").read_text() == "first\n"
    assert "1 file changed" in tree.summary


@pytest.mark.parametrize(("work", "kept"), [(nothing, False), (edit_tracked, True)], ids=["unchanged", "changed"])
def test_an_exception_in_the_block_still_settles_the_worktree(repo: Path, work: Callable[[Path], None],
                                                              kept: bool) -> None:
    seen: list[IsolatedTree] = []
    with pytest.raises(RuntimeError, match="child failed"), isolated_worktree(repo, "crash") as tree:
        seen.append(tree)
        work(tree.path)
        raise RuntimeError("child failed")
    assert seen[0].kept is kept and seen[0].path.is_dir() is kept and (seen[0].branch in branches(repo)) is kept


def test_a_taken_label_gets_the_next_free_suffix(repo: Path) -> None:
    with isolated_worktree(repo, "twin") as first, isolated_worktree(repo, "twin") as second:
        assert (first.branch, second.branch) == (f"{BRANCH_PREFIX}/twin", f"{BRANCH_PREFIX}/twin-2")
        assert first.path != second.path and second.path.is_dir()
    assert not first.path.exists() and not second.path.exists()
    assert not {first.branch, second.branch} & branches(repo)


def test_a_worktree_that_cannot_be_measured_is_kept_and_says_why(repo: Path) -> None:
    with isolated_worktree(repo, "lost") as tree:
        (tree.path / ".git").unlink()  # no longer a working tree git recognises
    assert tree.kept and "could not check it" in tree.summary and tree.branch in tree.summary


def test_outside_a_repository_is_a_one_line_usage_error(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(UsageError) as caught, isolated_worktree(plain, "nope"):
        pytest.fail("the block must not run")
    message = str(caught.value)
    assert "\n" not in message and str(plain) in message and "not inside a git repository" in message
    assert list(plain.iterdir()) == []


def test_a_repository_without_commits_is_a_usage_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    with pytest.raises(UsageError, match="no commits yet"), isolated_worktree(empty, "nope"):
        pytest.fail("the block must not run")
    assert not (empty / ".swarm").exists()


@pytest.mark.parametrize("label", ["", "a/b", "../up", "x" * 65, "sp ace"])
def test_a_bad_label_is_refused_before_anything_is_created(repo: Path, label: str) -> None:
    with pytest.raises(InvalidNameError), isolated_worktree(repo, label):
        pytest.fail("the block must not run")
    assert len(registered(repo)) == 1 and branches(repo) == {"main"}
