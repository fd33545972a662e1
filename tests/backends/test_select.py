"""Choosing a backend, including a machine without tmux (PATH is an empty dir)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from swarm.backends.select import make_backend, tmux_usable
from swarm.backends.subprocess_backend import SubprocessBackend
from swarm.backends.tmux_backend import TmuxBackend
from swarm.errors import BackendError, UsageError


@pytest.fixture
def no_tmux_env(tmp_path: Path) -> dict[str, str]:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    return {**os.environ, "PATH": str(empty)}


def test_missing_tmux_is_detected(no_tmux_env: dict[str, str]) -> None:
    assert not tmux_usable(no_tmux_env)


def test_explicit_tmux_without_tmux_names_the_way_out(no_tmux_env: dict[str, str]) -> None:
    with pytest.raises(BackendError, match="--backend subprocess"):
        make_backend("tmux", env=no_tmux_env, tmux_socket=None)
    with pytest.raises(BackendError, match="--backend subprocess"):
        TmuxBackend(None, no_tmux_env)


def test_auto_without_tmux_falls_back_silently(no_tmux_env: dict[str, str]) -> None:
    backend = make_backend("auto", env=no_tmux_env, tmux_socket=None)
    assert isinstance(backend, SubprocessBackend) and backend.name == "subprocess"


def test_auto_with_tmux_picks_tmux() -> None:
    env = dict(os.environ)
    assert tmux_usable(env)
    backend = make_backend("auto", env=env, tmux_socket="swarm-test-unused")
    assert isinstance(backend, TmuxBackend) and backend.name == "tmux"
    assert make_backend("subprocess", env=env, tmux_socket=None).name == "subprocess"


def test_unknown_kind_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown backend"):
        make_backend("docker", env=os.environ, tmux_socket=None)


def _fake_tmux(bin_dir: Path, banner: str, calls: Path) -> None:
    script = bin_dir / "tmux"
    fresh = bin_dir / "tmux.new"  # a new file moved into place: what an upgrade does
    fresh.write_text(f"#!/bin/sh\necho run >> {calls}\necho '{banner}'\n")
    fresh.chmod(0o755)
    fresh.replace(script)


def test_tmux_version_is_asked_once_per_binary_and_again_after_an_upgrade(tmp_path: Path) -> None:
    bin_dir, calls = tmp_path / "bin", tmp_path / "calls"
    bin_dir.mkdir()
    env = {**os.environ, "PATH": str(bin_dir)}
    _fake_tmux(bin_dir, "tmux 3.4", calls)
    assert tmux_usable(env) and tmux_usable(env) and tmux_usable(env)
    assert calls.read_text().count("run") == 1  # one `tmux -V` for three spawns
    _fake_tmux(bin_dir, "tmux 2.9 with a longer banner", calls)
    assert not tmux_usable(env)  # the replaced binary is asked again, and it is too old
    with pytest.raises(BackendError, match=r"tmux 2\.9 .* is too old"):
        make_backend("tmux", env=env, tmux_socket=None)
    assert calls.read_text().count("run") == 2
