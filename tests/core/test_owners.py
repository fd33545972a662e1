"""One owner per concept: names that have an owner are imported from it, not through a module that uses them."""

from __future__ import annotations

import ast
from pathlib import Path

import swarm

SOURCES = Path(swarm.__file__).parent

OWNERS = {
    "CLAUDE_CODE_KINDS": "swarm.core.protocol",
    "Machine": "swarm.runtime.member_kinds",
    "MemberKind": "swarm.runtime.member_kinds",
    "MemberKindName": "swarm.core.protocol",
    "PERMISSION_MODES": "swarm.agent.permissions.policy",
    "kill_tree": "swarm.backends.procs",
    "member_kind": "swarm.runtime.member_kinds",
    "reap_dead": "swarm.runtime.member_kinds",
    "teammate_block": "swarm.agent.inbound",
    "what_is_asked": "swarm.runtime.desk",
}


def _imports_of(name: str) -> dict[str, str]:
    """``{file: module}`` for every ``from module import name`` in swarm's sources."""
    found = {}
    for path in SOURCES.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and any(alias.name == name for alias in node.names):
                found[str(path.relative_to(SOURCES))] = node.module or ""
    return found


def test_owned_names_are_imported_from_their_owner() -> None:
    wrong = {f"{name} in {file} from {module}"
             for name, owner in OWNERS.items() for file, module in _imports_of(name).items() if module != owner}
    assert not wrong, sorted(wrong)
