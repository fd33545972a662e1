"""Which environment variables a teammate inherits from the coordinator."""

from __future__ import annotations

from collections.abc import Mapping

FORWARDED_PREFIXES = ("ANTHROPIC_", "SWARM_")
FORWARDED = (
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy", "all_proxy",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
    "PYTHONPATH", "VIRTUAL_ENV",
)


def teammate_env(env: Mapping[str, str], home_root: str) -> dict[str, str]:
    """Forwarded variables plus ``SWARM_HOME`` set to the coordinator's home."""
    out = {k: v for k, v in env.items() if k in FORWARDED or k.startswith(FORWARDED_PREFIXES)}
    out.pop("SWARM_TEAM", None)
    out["SWARM_HOME"] = home_root
    return out
