"""Which credentials reach Claude, read from the environment (the one owner of that question).

The first that applies wins (Claude Code's variables)::

    CLAUDE_CODE_USE_BEDROCK=1   Amazon Bedrock through the SDK's AnthropicBedrock
                                (AWS credentials and region from the AWS chain; needs ``anthropic[bedrock]``)
    CLAUDE_CODE_USE_VERTEX=1    Google Vertex AI through the SDK's AnthropicVertex
                                (CLOUD_ML_REGION, ANTHROPIC_VERTEX_PROJECT_ID; needs ``anthropic[vertex]``)
    ANTHROPIC_API_KEY           the Anthropic API, the key
    ANTHROPIC_AUTH_TOKEN        the Anthropic API, a bearer token (the key wins when both are set, as in the SDK)

``ANTHROPIC_BASE_URL`` points the Anthropic API elsewhere (a gateway, a proxy).
A blank value counts as unset; ``CLAUDE_CODE_USE_*`` is on for ``1``,
``true``, ``yes`` or ``on``.

``real_model_asked`` says whether the person plainly asked for a real model
(a model named, ``ANTHROPIC_MODEL``, Bedrock or Vertex switched on): then
missing credentials or a missing extra are a one-line ``UsageError``, never
the offline echo model.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from swarm.errors import UsageError
from swarm.models.tls import tls_context

Kind = Literal["api", "bedrock", "vertex"]
BEDROCK = "CLAUDE_CODE_USE_BEDROCK"
VERTEX = "CLAUDE_CODE_USE_VERTEX"
TRUTHY = frozenset({"1", "true", "yes", "on"})
HOW_TO_SET = ("export ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN, or CLAUDE_CODE_USE_BEDROCK=1 / "
              "CLAUDE_CODE_USE_VERTEX=1 with the cloud's credentials)")
"""What a person without credentials is told to set."""
EXTRAS: Mapping[str, tuple[str, ...]] = {"bedrock": ("boto3", "botocore"), "vertex": ("google.auth",)}
"""The modules each cloud's SDK client needs (installed by ``pip install 'anthropic[<kind>]'``)."""


@dataclass(frozen=True)
class Credentials:
    """What the environment gives to reach Claude, and where it came from."""

    kind: Kind
    api_key: str | None = None
    auth_token: str | None = None
    source: str = ""
    """The variable that gave them, for the person (``ANTHROPIC_API_KEY``)."""

    def check_extras(self) -> None:
        """A one-line UsageError when the SDK client for Bedrock or Vertex cannot be built here."""
        missing = [m for m in EXTRAS.get(self.kind, ()) if not _importable(m)]
        if missing:
            raise UsageError(f"{self.source} is set but {', '.join(missing)} is not installed; "
                             f"pip install 'anthropic[{self.kind}]', or unset {self.source}")

    def client(self, sdk: Any, *, base_url: str, env: Mapping[str, str], **options: Any) -> Any:
        """The SDK client these credentials call (``options``: ``max_retries``, ``timeout``)."""
        if self.kind == "bedrock":
            self.check_extras()
            region = _first(env, ("AWS_REGION", "AWS_DEFAULT_REGION"))
            return sdk.AnthropicBedrock(aws_region=region, **options)
        if self.kind == "vertex":
            self.check_extras()
            return sdk.AnthropicVertex(region=_first(env, ("CLOUD_ML_REGION",)),
                                       project_id=_first(env, ("ANTHROPIC_VERTEX_PROJECT_ID",)), **options)
        # the SDK's own HTTP client, but with the process's shared TLS context (swarm.models.tls): no CA load each
        http = sdk.DefaultHttpxClient(base_url=base_url, timeout=options.get("timeout", sdk.DEFAULT_TIMEOUT),
                                      verify=tls_context())
        if self.api_key is not None:
            return sdk.Anthropic(api_key=self.api_key, base_url=base_url, http_client=http, **options)
        return sdk.Anthropic(auth_token=self.auth_token, base_url=base_url, http_client=http, **options)


def find_credentials(env: Mapping[str, str]) -> Credentials | None:
    """The credentials ``env`` gives (see the module docstring for the order), or None."""
    if _on(env, BEDROCK):
        return Credentials("bedrock", source=BEDROCK)
    if _on(env, VERTEX):
        return Credentials("vertex", source=VERTEX)
    key, token = _first(env, ("ANTHROPIC_API_KEY",)), _first(env, ("ANTHROPIC_AUTH_TOKEN",))
    if key is None and token is None:
        return None
    if key is not None:
        return Credentials("api", api_key=key, source="ANTHROPIC_API_KEY")
    return Credentials("api", auth_token=token, source="ANTHROPIC_AUTH_TOKEN")


def real_model_asked(model: str | None, env: Mapping[str, str]) -> str | None:
    """How the person plainly asked for a real model (for the error), or None when nothing asked for one."""
    if model:
        return f"model {model!r} was asked for"
    if _first(env, ("ANTHROPIC_MODEL",)):
        return "ANTHROPIC_MODEL is set"
    return None


def _on(env: Mapping[str, str], name: str) -> bool:
    return env.get(name, "").strip().lower() in TRUTHY


def _first(env: Mapping[str, str], names: tuple[str, ...]) -> str | None:
    return next((env[n].strip() for n in names if env.get(n, "").strip()), None)


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing
        return False
