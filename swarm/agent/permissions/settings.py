"""Where rules come from: settings files in the agent's cwd, the team file, flags.

A settings file can grant rules, and a teammate can write files in its cwd,
so a settings file's *allow* rules count only as the lead side saw the file:
``record_settings`` (run by ``swarm spawn`` / ``swarm up``, i.e. the lead)
stores a digest of every settings file of a cwd in the team file the first
time the team spawns a teammate there (``absent`` for a missing file), and
never overwrites it. ``settings_rules`` then drops the allow rules of a file
whose digest differs from the recorded one — written or changed after the
team first looked, e.g. by a teammate — and says so (a log line and the
``changed`` callback). Its deny and ask rules always apply: they only
restrict. To adopt an edited settings file, create a new team (or grant the
rules through the team file or ``--allowed-tools``).

The same rule holds for a settings file's ``sandbox`` key
(``settings_sandbox``): ``record_settings`` also keeps each file's
``sandbox`` as first seen; a file changed since counts as recorded, and its
new text only where it narrows (it can turn the sandbox on or add denied
paths and domains, never turn it off or allow more:
``core.sandbox_config.narrowed``).

Settings files are project configuration: in a folder that is not trusted
(``swarm.agent.trust``), or one the current user does not own, none is read.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Mapping
from pathlib import Path

from pydantic import ValidationError

from swarm.agent.config_files import owned_by_user
from swarm.agent.mcp.config import mcp_json_paths
from swarm.agent.permissions.paths import SETTINGS_FILES
from swarm.agent.permissions.policy import RuleSet
from swarm.agent.permissions.rules import parse_rules
from swarm.agent.trust import is_trusted
from swarm.core.jsonfile import decode_json
from swarm.core.protocol import RuleLists, TeamFile
from swarm.core.sandbox_config import SandboxSettings, layered
from swarm.errors import UsageError

log = logging.getLogger(__name__)

ABSENT = "absent"
"""The recorded digest of a settings file that did not exist."""


def rules_of(lists: RuleLists | None) -> RuleSet:
    """``{"allow": [...], "deny": [...], "ask": [...]}`` parsed into rules."""
    if lists is None:
        return RuleSet()
    return RuleSet(tuple(parse_rules(lists.allow)), tuple(parse_rules(lists.deny)), tuple(parse_rules(lists.ask)))


def settings_digests(cwd: Path) -> dict[str, str]:
    """Each settings file under ``cwd`` and each ``.mcp.json`` that applies there (absolute path) mapped to the
    sha256 of its bytes, or ``absent`` (``swarm.agent.mcp.approval`` reads the ``.mcp.json`` ones)."""
    return {str(path): _digest(path) for path in [*_settings_paths(cwd), *mcp_json_paths(cwd)]}


def record_settings(team: TeamFile, cwd: Path) -> None:
    """Record the digests of ``cwd``'s settings files in the team file, keeping any recorded before; with each
    new digest, the file's ``sandbox`` settings as they are now (what a later change can only narrow)."""
    recorded = dict(team.settings_digests or {})
    sandboxes = dict(team.settings_sandbox or {})
    for path, digest in settings_digests(cwd).items():
        if path not in recorded:
            recorded[path] = digest
            found = _sandbox_of(Path(path)) if digest != ABSENT else None
            if found is not None:
                sandboxes[path] = found
    team.settings_digests = recorded
    team.settings_sandbox = sandboxes or None


def settings_rules(cwd: Path, recorded: Mapping[str, str], changed: Callable[[Path], None] | None = None, *,
                   env: Mapping[str, str]) -> RuleSet:
    """Rules from the settings files under ``cwd``; allow rules only from files that match ``recorded``.

    Missing files are fine; a file that does not parse is a UsageError. None in an untrusted folder.
    """
    merged = RuleSet()
    paths = [path for path in _settings_paths(cwd) if path.is_file()]
    if paths and not (owned_by_user(cwd) and is_trusted(cwd, env)):
        log.debug("untrusted folder: settings files ignored", extra={"cwd": str(cwd)})
        return merged
    for path in paths:
        if not path.is_file():
            continue
        data = _bytes(path)
        rules = _parse(path, data)
        if rules.allow and recorded.get(str(path)) != hashlib.sha256(data).hexdigest():
            log.warning("ignored the allow rules of a settings file changed since the team recorded it",
                        extra={"path": str(path)})
            if changed is not None:
                changed(path)
            rules = RuleSet(deny=rules.deny, ask=rules.ask)
        merged = merged.merged(rules)
    return merged


def settings_sandbox(cwd: Path, recorded: Mapping[str, str], *, env: Mapping[str, str],
                     recorded_sandbox: Mapping[str, SandboxSettings] | None = None
                     ) -> tuple[SandboxSettings, SandboxSettings]:
    """The ``sandbox`` settings under ``cwd``: (as the team recorded them, from files changed since).

    A file that matches its digest counts whole; one changed since (or deleted) counts as recorded
    (``recorded_sandbox``), and what it says now goes into the second part, which only narrows
    (``core.sandbox_config.narrowed``). A file whose ``sandbox`` does not parse is a UsageError.
    Nothing in an untrusted folder.
    """
    trusted, changed = SandboxSettings(), SandboxSettings()
    paths = [path for path in _settings_paths(cwd) if path.is_file()]
    if paths and not (owned_by_user(cwd) and is_trusted(cwd, env)):
        return trusted, changed
    for path in _settings_paths(cwd):
        if not path.is_file():
            trusted = layered(trusted, (recorded_sandbox or {}).get(str(path)))
            continue
        data = _bytes(path)
        found = _parse_sandbox(path, data)
        if recorded.get(str(path)) == hashlib.sha256(data).hexdigest():
            trusted = layered(trusted, found)
        else:
            trusted = layered(trusted, (recorded_sandbox or {}).get(str(path)))
            changed = layered(changed, found)
    return trusted, changed


def _sandbox_of(path: Path) -> SandboxSettings | None:
    """The ``sandbox`` key of the settings file at ``path`` now (None: none, or the file cannot be read)."""
    try:
        found = _parse_sandbox(path, path.read_bytes())
    except (OSError, UsageError):
        return None
    return found if found.wire() else None


def _parse_sandbox(path: Path, data: bytes) -> SandboxSettings:
    try:
        doc = decode_json(data)
        return SandboxSettings.model_validate(doc.get("sandbox") or {})
    except (ValueError, ValidationError, AttributeError) as exc:
        raise UsageError(f"{path}: invalid sandbox settings ({exc}); fix or remove the file") from exc


def _settings_paths(cwd: Path) -> list[Path]:
    return [cwd.resolve() / name for name in SETTINGS_FILES]


def _digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return ABSENT
    except OSError as exc:
        return f"unreadable: {exc.strerror}"


def _bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise UsageError(f"{path}: cannot read it ({exc.strerror}); fix or remove the file") from exc


def _parse(path: Path, data: bytes) -> RuleSet:
    """The rules in the bytes read once (so the digest checked is of the rules applied)."""
    try:
        doc = decode_json(data)
        return rules_of(RuleLists.model_validate(doc.get("permissions", {})))
    except (ValueError, ValidationError, AttributeError) as exc:
        raise UsageError(f"{path}: invalid permissions ({exc}); fix or remove the file") from exc
