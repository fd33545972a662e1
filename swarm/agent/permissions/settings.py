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

Settings files are project configuration: in a folder that is not trusted
(``swarm.agent.trust``), or one the current user does not own, none is read.
"""

from __future__ import annotations

import hashlib
import json
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
from swarm.core.protocol import RuleLists, TeamFile
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
    """Record the digests of ``cwd``'s settings files in the team file, keeping any recorded before."""
    recorded = dict(team.settings_digests or {})
    for path, digest in settings_digests(cwd).items():
        recorded.setdefault(path, digest)
    team.settings_digests = recorded


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
        doc = json.loads(data)
        return rules_of(RuleLists.model_validate(doc.get("permissions", {})))
    except (ValueError, ValidationError, AttributeError) as exc:
        raise UsageError(f"{path}: invalid permissions ({exc}); fix or remove the file") from exc
