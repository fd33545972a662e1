"""A git repository with a linked worktree, a fake home with keys, a directory outside, and a loopback web server.

Shared by the sandbox tests (module scope: the set-up is a few git commands and one server).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.fakes.web_site import local_site

needs_bwrap = pytest.mark.skipif(
    subprocess.run(["sh", "-c", "command -v bwrap && command -v socat"], capture_output=True).returncode != 0,
    reason="bubblewrap and socat are not installed (.ci/run installs them)")


@dataclass(frozen=True)
class Place:
    repo: Path
    worktree: Path
    outside: Path
    home: Path
    web_port: int


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@e", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Place]:
    root = tmp_path_factory.mktemp("sandbox")
    repo, outside, home = root / "repo", root / "outside", root / "home"
    for path in (repo, outside, home / ".ssh"):
        path.mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
    git(repo, "init", "-q", "-b", "main")
    (repo / "README").write_text("hi\n")
    git(repo, "add", "README")
    git(repo, "commit", "-qm", "init")
    git(repo, "worktree", "add", "-q", "-b", "work", str(root / "wt"))
    with local_site(lambda _path: b"hello from the allowed site\n") as port:
        yield Place(repo=repo, worktree=root / "wt", outside=outside, home=home, web_port=port)
