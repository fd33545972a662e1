"""The ``sandbox`` settings, in Claude Code's format, and the two ways layers of them combine.

One shape serves every place a sandbox setting is written: the ``sandbox``
key of a settings file, a team file's ``sandbox`` and a member's (from
``[sandbox]`` in a ``swarm up`` file), and ``--sandbox``. A field left out
(None) is unset, so a layer changes only what it names; ``resolved`` fills
Claude Code's defaults:

- ``enabled`` false, ``autoAllowBashIfSandboxed`` true,
  ``allowUnsandboxedCommands`` true, ``failIfUnavailable`` false,
  ``excludedCommands`` none;
- ``filesystem``: ``allowWrite`` / ``denyWrite`` / ``denyRead`` path lists;
- ``network``: ``allowedDomains`` / ``deniedDomains``, ``allowLocalBinding``,
  ``allowAllUnixSockets``, ``httpProxyPort`` / ``socksProxyPort``.

``layered(base, over)`` is a trusted layer on top: its scalars win, its
lists add. ``narrowed(base, over)`` is an untrusted one (a settings file
changed since the team recorded it, which a teammate may have written): only
what narrows counts — it can turn the sandbox on, never off; add to
``denyWrite``, ``denyRead`` and ``deniedDomains``, never to ``allowWrite``,
``allowedDomains`` or ``excludedCommands``; turn ``autoAllowBashIfSandboxed``,
``allowUnsandboxedCommands``, ``allowLocalBinding`` and
``allowAllUnixSockets`` off, never on.
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class _Settings(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True, alias_generator=to_camel)


class SandboxFilesystem(_Settings):
    allow_write: list[str] | None = None
    deny_write: list[str] | None = None
    deny_read: list[str] | None = None


class SandboxNetwork(_Settings):
    allowed_domains: list[str] | None = None
    denied_domains: list[str] | None = None
    allow_local_binding: bool | None = None
    allow_all_unix_sockets: bool | None = None
    http_proxy_port: int | None = None
    socks_proxy_port: int | None = None


class SandboxSettings(_Settings):
    enabled: bool | None = None
    auto_allow_bash_if_sandboxed: bool | None = None
    allow_unsandboxed_commands: bool | None = None
    excluded_commands: list[str] | None = None
    fail_if_unavailable: bool | None = None
    filesystem: SandboxFilesystem | None = None
    network: SandboxNetwork | None = None

    def wire(self) -> dict[str, object]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class ResolvedSandbox(BaseModel):
    """Every field decided (defaults filled): what an agent's sandbox runs with."""

    model_config = ConfigDict(frozen=True)

    enabled: bool = False
    auto_allow_bash_if_sandboxed: bool = True
    allow_unsandboxed_commands: bool = True
    excluded_commands: tuple[str, ...] = ()
    fail_if_unavailable: bool = False
    allow_write: tuple[str, ...] = ()
    deny_write: tuple[str, ...] = ()
    deny_read: tuple[str, ...] = ()
    allowed_domains: tuple[str, ...] = ()
    denied_domains: tuple[str, ...] = ()
    allow_local_binding: bool = False
    allow_all_unix_sockets: bool = False


def resolved(settings: SandboxSettings) -> ResolvedSandbox:
    fs = settings.filesystem or SandboxFilesystem()
    net = settings.network or SandboxNetwork()
    values = {
        "enabled": settings.enabled, "auto_allow_bash_if_sandboxed": settings.auto_allow_bash_if_sandboxed,
        "allow_unsandboxed_commands": settings.allow_unsandboxed_commands,
        "excluded_commands": settings.excluded_commands, "fail_if_unavailable": settings.fail_if_unavailable,
        "allow_write": fs.allow_write, "deny_write": fs.deny_write, "deny_read": fs.deny_read,
        "allowed_domains": net.allowed_domains, "denied_domains": net.denied_domains,
        "allow_local_binding": net.allow_local_binding, "allow_all_unix_sockets": net.allow_all_unix_sockets,
    }
    return ResolvedSandbox(**{k: tuple(v) if isinstance(v, list) else v for k, v in values.items() if v is not None})


def layered(base: SandboxSettings, over: SandboxSettings | None) -> SandboxSettings:
    """``over`` on top of ``base``, trusted: set scalars replace, lists add."""
    if over is None:
        return base
    return SandboxSettings(
        **{name: _pick(getattr(base, name), getattr(over, name)) for name in _SCALARS},
        excluded_commands=_union(base.excluded_commands, over.excluded_commands),
        filesystem=_layer_part(base.filesystem, over.filesystem, SandboxFilesystem),
        network=_layer_part(base.network, over.network, SandboxNetwork),
    )


def narrowed(base: SandboxSettings, over: SandboxSettings | None) -> SandboxSettings:
    """``over`` on top of ``base``, untrusted: only what makes the sandbox stricter counts."""
    if over is None:
        return base
    fs, net = over.filesystem or SandboxFilesystem(), over.network or SandboxNetwork()
    base_fs, base_net = base.filesystem or SandboxFilesystem(), base.network or SandboxNetwork()
    return base.model_copy(update={
        "enabled": True if over.enabled else base.enabled,
        "auto_allow_bash_if_sandboxed": False if over.auto_allow_bash_if_sandboxed is False
        else base.auto_allow_bash_if_sandboxed,
        "allow_unsandboxed_commands": False if over.allow_unsandboxed_commands is False
        else base.allow_unsandboxed_commands,
        "fail_if_unavailable": True if over.fail_if_unavailable else base.fail_if_unavailable,
        "filesystem": base_fs.model_copy(update={"deny_write": _union(base_fs.deny_write, fs.deny_write),
                                                  "deny_read": _union(base_fs.deny_read, fs.deny_read)}),
        "network": base_net.model_copy(update={
            "denied_domains": _union(base_net.denied_domains, net.denied_domains),
            "allow_local_binding": False if net.allow_local_binding is False else base_net.allow_local_binding,
            "allow_all_unix_sockets": False if net.allow_all_unix_sockets is False
            else base_net.allow_all_unix_sockets}),
    })


_S = TypeVar("_S", "SandboxFilesystem", "SandboxNetwork")
_SCALARS = ("enabled", "auto_allow_bash_if_sandboxed", "allow_unsandboxed_commands", "fail_if_unavailable")


def _pick(base: object, over: object) -> object:
    return base if over is None else over


def _union(base: list[str] | None, over: list[str] | None) -> list[str] | None:
    if base is None and over is None:
        return None
    return list(dict.fromkeys([*(base or []), *(over or [])]))


def _layer_part(base: _S | None, over: _S | None, kind: type[_S]) -> _S | None:
    if over is None:
        return base
    if base is None:
        return over
    merged: dict[str, object] = {}
    for name, value in over:
        old = getattr(base, name)
        merged[name] = _union(old, value) if isinstance(value, list) or isinstance(old, list) else _pick(old, value)
    return kind(**merged)
