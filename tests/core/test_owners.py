"""One owner per concept: names that have an owner are imported from it, not through a module that uses them."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import swarm

SOURCES = Path(swarm.__file__).parent

OWNERS = {
    "CLAUDE_CODE_KINDS": "swarm.core.protocol",
    "LeadInbox": "swarm.runtime.lead_inbox",
    "MODE_WIDTH": "swarm.agent.permissions.policy",
    "Machine": "swarm.runtime.member_kinds",
    "MemberKind": "swarm.runtime.member_kinds",
    "MemberKindName": "swarm.core.protocol",
    "PERMISSION_MODES": "swarm.agent.permissions.policy",
    "assemble": "swarm.agent.assembly",
    "check_name": "swarm.models.catalog",
    "child_mode": "swarm.agent.assembly",
    "effective_sandbox": "swarm.agent.sandbox",
    "open_sandbox": "swarm.agent.sandbox",
    "find_credentials": "swarm.models.credentials",
    "for_terminal": "swarm.core.text",
    "is_trusted": "swarm.agent.trust",
    "kill_tree": "swarm.backends.procs",
    "member_kind": "swarm.runtime.member_kinds",
    "model_info": "swarm.models.catalog",
    "narrowest": "swarm.agent.permissions.policy",
    "real_model_asked": "swarm.models.credentials",
    "reap_dead": "swarm.runtime.member_kinds",
    "teammate_block": "swarm.agent.peer_messages",
    "what_is_asked": "swarm.runtime.permission_desk",
    "wider_than": "swarm.agent.permissions.policy",
}


@functools.cache
def _sources() -> tuple[tuple[str, list[ast.AST]], ...]:
    """Every swarm source file (its path under ``swarm/``) with its syntax tree's nodes, parsed once per run."""
    return tuple((str(path.relative_to(SOURCES)), list(ast.walk(ast.parse(path.read_text(), str(path)))))
                 for path in sorted(SOURCES.rglob("*.py")))


def _imports_of(name: str) -> dict[str, str]:
    """``{file: module}`` for every ``from module import name`` in swarm's sources."""
    found = {}
    for where, nodes in _sources():
        for node in nodes:
            if isinstance(node, ast.ImportFrom) and any(alias.name == name for alias in node.names):
                found[where] = node.module or ""
    return found


def test_owned_names_are_imported_from_their_owner() -> None:
    wrong = {f"{name} in {file} from {module}"
             for name, owner in OWNERS.items() for file, module in _imports_of(name).items() if module != owner}
    assert not wrong, sorted(wrong)


ASSEMBLED_BY = "agent/assembly.py"
ASSEMBLY_STEPS = ("tool_pool", "spawnable_types", "preload_text", "with_memory", "memory_prompt", "system_prompt",
                  "agent_system_prompt", "agent_model", "read_only_gate")
"""What makes an agent what it is: only the assembler (and ``MainSetup``, choosing the main agent's model before
its provider exists) calls these, so there is one rule for each, whatever the role."""
ALSO_ALLOWED = {("agent_model", "agent/headless.py")}


def _callers() -> dict[str, set[str]]:
    """``{function name: swarm files that call it}`` (plain or attribute calls), leaving out the file defining it."""
    found: dict[str, set[str]] = {}
    for where, nodes in _sources():
        defined = {n.name for n in nodes if isinstance(n, ast.FunctionDef)}
        for node in nodes:
            if isinstance(node, ast.Call):
                name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                if name and name not in defined:
                    found.setdefault(name, set()).add(where)
    return found


def test_agents_are_assembled_in_one_place() -> None:
    callers = _callers()
    elsewhere = {f"{name} called in {file}" for name in ASSEMBLY_STEPS for file in callers.get(name, ())
                 if file != ASSEMBLED_BY and (name, file) not in ALSO_ALLOWED}
    assert not elsewhere, sorted(elsewhere)


TERMINAL_WRITERS = {"echo", "secho", "prompt", "confirm", "print", "write"}
"""Calls that put text on the person's terminal: ``click.echo``/``secho``/``prompt``/``confirm``, ``print``,
``sys.stdout.write``/``sys.stderr.write``."""
TERMINAL_OWNERS = {"cli/render.py", "interactive/view.py", "teammate/pane.py"}
"""Where text is made safe for the terminal (``core/text.py``'s ``for_terminal``) on its way out."""


def _writer(call: ast.Call) -> str | None:
    """The name of the terminal writer ``call`` is, if it is one."""
    func = call.func
    if isinstance(func, ast.Name) and func.id == "print":
        return "print"
    if not isinstance(func, ast.Attribute) or func.attr not in TERMINAL_WRITERS:
        return None
    owner = func.value
    if isinstance(owner, ast.Name) and owner.id == "click":
        return f"click.{func.attr}"
    if (func.attr == "write" and isinstance(owner, ast.Attribute) and owner.attr in ("stdout", "stderr")
            and isinstance(owner.value, ast.Name) and owner.value.id == "sys"):
        return f"sys.{owner.attr}.write"
    return None


def test_text_reaches_the_terminal_only_through_its_owner() -> None:
    """Outside ``cli/render.py`` and the interactive view, a direct write to the terminal prints only a
    literal: anything built from a value (a name, a message, a plan, an error) goes through the owner."""
    direct = set()
    for where, nodes in _sources():
        if where in TERMINAL_OWNERS:
            continue
        for node in nodes:
            if isinstance(node, ast.Call) and (writer := _writer(node)):
                first = node.args[0] if node.args else None
                literal = first is None or (isinstance(first, ast.Constant) and isinstance(first.value, str))
                if not literal:
                    direct.add(f"{where}:{node.lineno} {writer}")
    assert not direct, sorted(direct)
