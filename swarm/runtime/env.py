"""Which environment variables a teammate inherits from the coordinator, and its process token."""

from __future__ import annotations

from collections.abc import Mapping

from swarm.backends.procs import PROC_TOKEN_VAR

FORWARDED_PREFIXES = ("ANTHROPIC_", "SWARM_")
FORWARDED = (
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy", "all_proxy",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
    "PYTHONPATH", "VIRTUAL_ENV",
    "CLAUDE_CONFIG_DIR",  # user-level agent definitions, CLAUDE.md and agent memory
    "CLAUDE_CODE_AUTO_COMPACT_WINDOW", "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE", "DISABLE_AUTO_COMPACT",  # agent.compaction
)


CALLER_ONLY = (PROC_TOKEN_VAR, "SWARM_TEAM")
"""Variables that describe the caller (its process token, its current team), never a process started for it."""


def without_caller(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` less ``CALLER_ONLY``: for a swarm process that serves others (the CLI server)."""
    return {k: v for k, v in env.items() if k not in CALLER_ONLY}


def teammate_env(env: Mapping[str, str], home_root: str, token: str | None = None) -> dict[str, str]:
    """Forwarded variables plus ``SWARM_HOME`` set to the coordinator's home and the teammate's own token.

    A caller's own ``SWARM_PROC_TOKEN`` (a swarm command run from inside a
    teammate) is never passed on: each teammate carries only its own.
    """
    out = {k: v for k, v in without_caller(env).items() if k in FORWARDED or k.startswith(FORWARDED_PREFIXES)}
    out["SWARM_HOME"] = home_root
    if token:
        out[PROC_TOKEN_VAR] = token
    return out
