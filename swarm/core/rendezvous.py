"""Where a home's CLI server is found, as plain strings: the one lookup ``swarm`` makes before anything else.

A served command (``swarm.cli.entry``) needs only the home's root and two
file names in it before it hands its work to the server; this module gives
them without importing ``pathlib`` or ``typing`` (~3 ms of a served
``swarm send``). ``Home`` (``swarm.core.home``) derives the same paths, as
``Path`` objects, from these names: they are defined here only.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # not ``typing.TYPE_CHECKING``: see the module docstring
if TYPE_CHECKING:
    from collections.abc import Mapping

HOME_VARIABLE = "SWARM_HOME"
"""Chooses the home's root; unset or empty: ``~/DEFAULT_DIR``."""
DEFAULT_DIR = ".swarm"
RUN_DIR = "run"
"""Under the root: rendezvous files of the home's live processes."""
CLI_SOCKET = "cli.sock"
"""In ``RUN_DIR``: the CLI server's unix socket."""
CLI_LOCK = "cli.lock"
"""In ``RUN_DIR``: flocked by the live CLI server for its whole life; holds its pid."""
CLI_LOG = "cli-server.log"
"""In ``RUN_DIR``: the CLI server's own errors."""


def home_root(env: Mapping[str, str]) -> str:
    """The absolute root ``env`` chooses (``$SWARM_HOME``, ``~`` expanded, else ``~/.swarm``), as ``Home.from_env``."""
    value = env.get(HOME_VARIABLE)
    root = os.path.expanduser(value) if value else os.path.join(os.path.expanduser("~"), DEFAULT_DIR)
    return root if os.path.isabs(root) else os.path.join(os.getcwd(), root)


def run_file(root: str, name: str) -> str:
    """The rendezvous file ``name`` (``CLI_SOCKET``, ``CLI_LOCK``, ``CLI_LOG``) of the home at ``root``."""
    return os.path.join(root, RUN_DIR, name)
