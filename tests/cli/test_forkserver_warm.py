"""What the CLI server imports before it forks: the ``anthropic`` SDK when it was started with credentials.

A real-model teammate forked from a server that has the SDK loaded shares its
pages and does not spend ~1 s of CPU importing it at its first request; a
server started without credentials (an offline team) does not pay for it. The
SDK's JSON parser (``jiter``, an extension module) mapped in the server is the
outside sign that the SDK was imported.
"""

from __future__ import annotations

import os
import subprocess
import time

import psutil
import pytest

from swarm.core.home import Home
from tests.cli.conftest import SWARM_EXE, live_cli_server


def _served_status(home: Home, **extra: str) -> int:
    """Start the home's CLI server with the environment ``extra`` adds; its pid once it is ready."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SWARM_", "ANTHROPIC_"))}
    env.update(SWARM_HOME=str(home.root), SWARM_CLI_SERVER="1", **extra)
    made = subprocess.run([str(SWARM_EXE), "team", "create", "t1"], env={**env, "SWARM_CLI_SERVER": "0"},
                          capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    assert subprocess.run([str(SWARM_EXE), "status", "-t", "t1"], env=env, capture_output=True,
                          timeout=60).returncode == 0  # runs here and starts the server
    deadline = time.monotonic() + 60
    while True:
        pid = live_cli_server(home)
        if pid is not None and home.cli_socket_path.exists():
            served = subprocess.run([str(SWARM_EXE), "status", "-t", "t1"], env=env, capture_output=True,
                                    timeout=60)  # answered only once the warm-up is over
            assert served.returncode == 0
            return pid
        assert time.monotonic() < deadline, "no CLI server came up"
        time.sleep(0.05)


def _maps_sdk(pid: int) -> bool:
    return any("jiter" in region.path for region in psutil.Process(pid).memory_maps(grouped=True))


@pytest.mark.parametrize("credentials", [True, False], ids=["with-key", "offline"])
def test_the_server_preloads_the_sdk_only_for_a_real_model(short_home: Home, credentials: bool) -> None:
    extra = {"ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"} if credentials else {}
    pid = _served_status(short_home, **extra)
    assert _maps_sdk(pid) == credentials
    assert psutil.Process(pid).num_threads() == 1, "a server that forks must not have started threads"
