"""``swarm.core.rendezvous`` finds the CLI server's files where ``Home`` puts them, without pathlib."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from swarm.core.home import Home
from swarm.core.rendezvous import CLI_LOCK, CLI_SOCKET, home_root, run_file


@pytest.mark.parametrize("value", ["", "/srv//swarm/", "~/h", "relative/home", "./x/../y"])
def test_the_server_files_are_the_homes(value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.setenv("SWARM_HOME", value)
    home = Home.from_env()
    root = home_root(os.environ)
    assert os.path.isabs(root)
    for name, path in ((CLI_SOCKET, home.cli_socket_path), (CLI_LOCK, home.cli_lock_path)):
        # the same file: pathlib folds "//" and "/./", the kernel does the same with the string
        assert os.path.normpath(run_file(root, name)) == os.path.normpath(path)
