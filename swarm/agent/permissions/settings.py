"""Where rules come from: settings files in the agent's cwd, the team file, flags."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from pathlib import Path

from pydantic import ValidationError

from swarm.agent.permissions.policy import RuleSet
from swarm.agent.permissions.rules import parse_rules
from swarm.core.protocol import RuleLists
from swarm.errors import UsageError

log = logging.getLogger(__name__)

SETTINGS_FILES = (".claude/settings.json", ".claude/settings.local.json", ".swarm/settings.json")


def rules_of(lists: RuleLists | None) -> RuleSet:
    """``{"allow": [...], "deny": [...], "ask": [...]}`` parsed into rules."""
    if lists is None:
        return RuleSet()
    return RuleSet(tuple(parse_rules(lists.allow)), tuple(parse_rules(lists.deny)), tuple(parse_rules(lists.ask)))


def settings_rules(cwd: Path, files: Iterable[str] = SETTINGS_FILES) -> RuleSet:
    """Rules from the settings files under ``cwd`` (missing files are fine; bad ones are errors)."""
    merged = RuleSet()
    for name in files:
        path = cwd / name
        if not path.is_file():
            continue
        try:
            doc = json.loads(path.read_text())
            merged = merged.merged(rules_of(RuleLists.model_validate(doc.get("permissions", {}))))
        except (ValueError, ValidationError, AttributeError) as exc:
            raise UsageError(f"{path}: invalid permissions ({exc}); fix or remove the file") from exc
    return merged
