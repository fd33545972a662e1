"""The collector is held off only through start-up (swarm.startup): a command runs with it on again.

Each check runs in a fresh interpreter, so this test process's own collector
settings are never touched.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PROBE = """
import gc, json, sys
from swarm.cli.main import main
sys.argv = ["swarm", *sys.argv[1:]]
try:
    main()
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "enabled": gc.isenabled(), "frozen": gc.get_freeze_count()}))
"""


def _probe(tmp_path: Path, *args: str) -> dict[str, object]:
    env = {**os.environ, "SWARM_HOME": str(tmp_path / "home")}
    done = subprocess.run([sys.executable, "-c", PROBE, *args], env=env, capture_output=True, text=True,
                          timeout=60, check=True)
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_a_command_runs_with_the_collector_on_and_start_up_frozen(tmp_path: Path) -> None:
    seen = _probe(tmp_path, "team", "create", "alpha")
    assert seen["code"] in (0, None)
    assert seen["enabled"] is True  # a long-lived command (`swarm up`, `--follow`) must collect
    assert isinstance(seen["frozen"], int) and seen["frozen"] > 10_000  # the imports were frozen, not collected


def test_library_use_keeps_the_collector_as_the_host_set_it(tmp_path: Path) -> None:
    code = ("import gc; from click.testing import CliRunner; from swarm.cli.main import cli; "
            "r = CliRunner().invoke(cli, ['team', 'list']); "
            "print(r.exit_code, gc.isenabled(), gc.get_freeze_count())")
    env = {**os.environ, "SWARM_HOME": str(tmp_path / "home")}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60,
                          check=True)
    assert done.stdout.split() == ["0", "True", "0"]
