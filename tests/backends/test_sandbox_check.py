"""``swarm.backends.sandbox.check``: what keeps a sandbox from starting, named with its fix."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from swarm.backends.sandbox import check


def test_missing_programs_and_forbidden_namespaces_are_named_with_the_fix(tmp_path: Path) -> None:
    assert "bubblewrap (bwrap) is not installed" in (check(str(tmp_path / "bwrap")) or "")
    refusing = tmp_path / "bwrap"  # what bubblewrap says in a container that forbids user namespaces
    refusing.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    refusing.chmod(0o755)
    said = check(str(refusing), "sh") or ""
    assert "cannot create namespaces here (bwrap: No permissions to create new namespace)" in said
    assert "user namespaces" in said
    assert "socat is not installed" in (check(str(refusing), str(tmp_path / "socat")) or "")


@pytest.mark.skipif(shutil.which("bwrap") is None or shutil.which("socat") is None, reason="no bubblewrap here")
def test_here_a_sandbox_starts() -> None:
    assert check() is None
