"""The runtime's tests: the real Claude Code CLI, and real teammates started with the teammate tests' fixtures.

Teammates: ``team``, ``start`` and the rest come from ``tests.teammate.conftest``
(one definition, shared).

Claude Code: installed from the npm registry once per test session.

``claude_code`` installs ``@anthropic-ai/claude-code@CLAUDE_CODE_VERSION`` into
``~/.cache/swarm-tests/claude-code-<version>/`` (``$SWARM_TEST_CACHE`` overrides the base)
under a file lock, so the two xdist workers install it once between them, and returns the
native binary its platform package ships (the wrapper package's postinstall only copies
that binary; scripts are not run). A test is skipped, with the reason, only when Node.js /
npm are missing or the registry cannot be reached; any other install failure fails it.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
from pathlib import Path

import pytest
from filelock import FileLock

from tests.teammate.conftest import (  # noqa: F401 (fixtures, shared with the teammate tests)
    playbook,
    start,
    stubborn_playbook,
    team,
    tmux_socket,
    workdir,
)

CLAUDE_CODE_VERSION = "2.1.332"
PACKAGE = "@anthropic-ai/claude-code"
INSTALL_TIMEOUT = 600.0
_OFFLINE = ("ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "ENETUNREACH",
            "network request", "request to https", "getaddrinfo")


def _cache_root() -> Path:
    base = os.environ.get("SWARM_TEST_CACHE")
    return Path(base) if base else Path.home() / ".cache" / "swarm-tests"


def _platform_package() -> str:
    machine = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine().lower())
    system = {"Linux": "linux", "Darwin": "darwin"}.get(platform.system())
    if machine is None or system is None:
        pytest.skip(f"Claude Code ships no native binary for {platform.system()} {platform.machine()}")
    musl = system == "linux" and not Path("/lib64/ld-linux-x86-64.so.2").exists() and any(
        Path("/lib").glob("ld-musl-*"))
    return f"{PACKAGE}-{system}-{machine}{'-musl' if musl else ''}"


def _binary(prefix: Path) -> Path:
    return prefix / "node_modules" / _platform_package() / "claude"


def _install(prefix: Path) -> None:
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        pytest.skip("Node.js / npm are not installed: the real Claude Code CLI cannot be installed")
    prefix.mkdir(parents=True, exist_ok=True)
    (prefix / "package.json").write_text(json.dumps({"name": "swarm-claude-code-cache", "private": True}))
    result = subprocess.run(
        [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--ignore-scripts",
         "--loglevel=error", f"{PACKAGE}@{CLAUDE_CODE_VERSION}"],
        capture_output=True, text=True, timeout=INSTALL_TIMEOUT, check=False, stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        output = result.stdout + result.stderr
        if any(marker in output for marker in _OFFLINE):
            pytest.skip(f"the npm registry is unreachable: {output.strip().splitlines()[-1]}")
        pytest.fail(f"npm install {PACKAGE}@{CLAUDE_CODE_VERSION} failed: {output.strip()[-2000:]}")


@pytest.fixture(scope="session")
def claude_code() -> Path:
    """The native ``claude`` binary of the pinned Claude Code version (installed once, then cached)."""
    prefix = _cache_root() / f"claude-code-{CLAUDE_CODE_VERSION}"
    prefix.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(prefix.parent / f"claude-code-{CLAUDE_CODE_VERSION}.lock"), timeout=INSTALL_TIMEOUT):
        binary = _binary(prefix)
        if not binary.is_file():
            _install(prefix)
        if not binary.is_file():
            pytest.fail(f"npm installed {PACKAGE}@{CLAUDE_CODE_VERSION} but {binary} is missing")
    version = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60, check=False)
    if not version.stdout.startswith(CLAUDE_CODE_VERSION):
        pytest.fail(f"{binary} --version printed {version.stdout!r}{version.stderr!r}, not {CLAUDE_CODE_VERSION}")
    return binary
