"""Choosing a backend: ``--backend tmux | subprocess | auto``.

``auto`` takes tmux when a recent enough tmux runs, else plain subprocesses,
without a word: both work, tmux is just nicer to watch. Asking for ``tmux``
explicitly when it cannot work is an error that names the way out.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import shutil
import subprocess
from collections.abc import Mapping

from swarm.backends.base import Backend
from swarm.backends.subprocess_backend import SubprocessBackend
from swarm.errors import BackendError, UsageError

log = logging.getLogger(__name__)

KINDS = ("auto", "tmux", "subprocess")
MIN_TMUX = (3, 2)
"""``new-session -e`` and direct exec of ``-- prog args`` need tmux 3.2+."""
_VERSION_TIMEOUT = 5.0
_VERSION = re.compile(r"(\d+)\.(\d+)")


def _tmux_problem(env: Mapping[str, str]) -> str | None:
    """Why tmux cannot be used, as one line; None when it can."""
    binary = shutil.which("tmux", path=env.get("PATH", os.defpath))
    if binary is None:
        return "tmux is not installed or not on PATH; use --backend subprocess"
    try:
        info = os.stat(binary)
        code, said = _version_banner(binary, (info.st_ino, info.st_mtime_ns, info.st_size))
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"tmux -V failed ({exc}); use --backend subprocess"
    if code != 0:
        return f"tmux -V failed ({said or code}); use --backend subprocess"
    return _version_problem(said)


@functools.cache
def _version_banner(binary: str, identity: tuple[int, int, int]) -> tuple[int, str]:
    """Exit code and output of ``binary -V``, run once per binary and process (each spawn of a
    ``swarm up`` asks). ``identity`` (inode, mtime, size) makes an upgraded binary at the same path
    a new question; a failure to run it raises, and raised calls are not remembered."""
    result = subprocess.run([binary, "-V"], capture_output=True, text=True, timeout=_VERSION_TIMEOUT, check=False)
    return result.returncode, (result.stdout if result.returncode == 0 else result.stderr).strip()


def _version_problem(banner: str) -> str | None:
    """``tmux 3.3a`` is fine; ``tmux 2.9`` is too old; ``tmux master`` is trusted."""
    found = _VERSION.search(banner)
    if found is None:
        return None
    if (int(found.group(1)), int(found.group(2))) >= MIN_TMUX:
        return None
    need = ".".join(map(str, MIN_TMUX))
    return f"{banner} is too old (swarm needs tmux {need} or newer); use --backend subprocess"


def tmux_usable(env: Mapping[str, str]) -> bool:
    """True when ``tmux`` is on ``env``'s PATH, runs, and is recent enough."""
    return _tmux_problem(env) is None


def make_backend(kind: str, *, env: Mapping[str, str], tmux_socket: str | None) -> Backend:
    """The backend for ``--backend kind``; ``UsageError`` for an unknown kind."""
    if kind not in KINDS:
        raise UsageError(f"unknown backend {kind!r}; choose one of {', '.join(KINDS)}")
    if kind == "subprocess":
        return SubprocessBackend(env)
    problem = _tmux_problem(env)
    if problem is None:
        from swarm.backends.tmux_backend import (
            TmuxBackend,  # libtmux is loaded only when tmux is used
        )

        return TmuxBackend(tmux_socket, env)
    if kind == "tmux":
        raise BackendError(problem)
    log.debug("chose subprocess backend", extra={"reason": problem})
    return SubprocessBackend(env)
