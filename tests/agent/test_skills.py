"""Skills: discovery and precedence over real folders in a real git repository, frontmatter, catalog, slash, preload."""

from __future__ import annotations

from pathlib import Path

import pytest

from swarm.agent.definitions import load_agents
from swarm.agent.skills import (
    Skill,
    SkillCatalog,
    SlashExpansion,
    catalog_text,
    load_skills,
    parse_slash,
    preload_text,
)
from tests.runtime.worktrees.conftest import git


def write_skill(root: Path, name: str, text: str, *, sub: str = ".claude/skills") -> Path:
    """``root/sub/name/SKILL.md`` holding ``text``; returns its path."""
    folder = root / sub / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(text)
    return folder / "SKILL.md"


def write_command(directory: Path, name: str, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.md"
    path.write_text(text)
    return path


def skill_md(description: str, body: str = "Do it.", extra: str = "") -> str:
    return f"---\ndescription: {description}\n{extra}---\n{body}\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    return path


# -- discovery and precedence ---------------------------------------------------------------


def test_a_skill_folder_loads_with_its_body_directory_and_path(repo: Path, env: dict[str, str]) -> None:
    path = write_skill(repo, "deploy", skill_md("Deploys the app", body="Run ./scripts/deploy.sh\n\nThen check."))
    catalog = load_skills(repo, env=env)
    assert catalog.warnings == []
    assert catalog.get("deploy") == Skill(name="deploy", description="Deploys the app",
                                          body="Run ./scripts/deploy.sh\n\nThen check.", directory=path.parent,
                                          path=path, source="project")


def test_project_wins_over_user_and_both_sources_are_listed(repo: Path, env: dict[str, str], config: Path) -> None:
    write_skill(config, "shared", skill_md("user version"), sub="skills")
    write_skill(config, "mine", skill_md("only the user's"), sub="skills")
    write_skill(repo, "shared", skill_md("project version"))
    catalog = load_skills(repo, env=env)
    shared, mine = catalog.get("shared"), catalog.get("mine")
    assert shared is not None and (shared.description, shared.source) == ("project version", "project")
    assert mine is not None and (mine.description, mine.source) == ("only the user's", "user")
    assert mine.directory == config / "skills" / "mine"


def test_the_nearer_project_directory_wins_and_swarm_beats_claude_in_one(repo: Path, env: dict[str, str]) -> None:
    sub = repo / "pkg" / "app"
    sub.mkdir(parents=True)
    write_skill(repo, "lint", skill_md("root lint"))
    write_skill(repo, "fmt", skill_md("root fmt"))
    write_skill(repo, "only-root", skill_md("root only"))
    write_skill(sub, "lint", skill_md("nearer lint"))
    write_skill(sub, "fmt", skill_md("claude fmt"))
    write_skill(sub, "fmt", skill_md("swarm fmt"), sub=".swarm/skills")
    catalog = load_skills(sub, env=env)
    assert {name: catalog.skills[name].description for name in catalog.names()} == {
        "fmt": "swarm fmt", "lint": "nearer lint", "only-root": "root only"}


def test_outside_the_repository_nothing_above_its_root_counts(tmp_path: Path, repo: Path, env: dict[str, str]) -> None:
    write_skill(tmp_path, "outside", skill_md("above the repository"))
    assert load_skills(repo, env=env).names() == []


def test_legacy_commands_load_and_a_skill_md_beats_a_command_of_the_same_name(
        repo: Path, env: dict[str, str], config: Path) -> None:
    command = write_command(repo / ".claude" / "commands", "review", "Review the diff: $ARGUMENTS\n")
    write_command(config / "commands", "mine", "---\ndescription: my command\nargument-hint: [pr]\n---\nGo.\n")
    write_command(repo / ".claude" / "commands", "deploy", "old command body")
    write_skill(config, "deploy", skill_md("the user's skill"), sub="skills")
    catalog = load_skills(repo, env=env)
    assert catalog.warnings == []
    assert catalog.get("review") == Skill(name="review", description="Review the diff: $ARGUMENTS",
                                          body="Review the diff: $ARGUMENTS", directory=command.parent,
                                          path=command, source="command")
    mine = catalog.get("mine")
    assert mine is not None and (mine.source, mine.argument_hint, mine.user_invocable) == ("command", "[pr]", True)
    deploy = catalog.get("deploy")
    assert deploy is not None and (deploy.source, deploy.description) == ("user", "the user's skill")


def test_folders_without_skill_md_and_hidden_ones_are_not_skills(repo: Path, env: dict[str, str]) -> None:
    (repo / ".claude" / "skills" / "notes").mkdir(parents=True)
    (repo / ".claude" / "skills" / "notes" / "README.md").write_text("not a skill")
    write_skill(repo, ".hidden", skill_md("hidden"))
    write_skill(repo, "real", skill_md("real"))
    catalog = load_skills(repo, env=env)
    assert (catalog.names(), catalog.warnings) == (["real"], [])


# -- broken files ------------------------------------------------------------------------------


@pytest.mark.parametrize("text, says", [
    ("---\ndescription: [oops\n---\nbody\n", "frontmatter: invalid YAML"),
    ("---\ndescription: never closed\nbody\n", "frontmatter: not closed"),
    ("---\ndescription: x\ncontext: sideways\n---\nbody\n", "context: "),
    ("---\ndescription: x\ndisable-model-invocation: sometimes\n---\nbody\n", "disable-model-invocation: "),
    ("---\ndescription: x\nuser-invocable: 1\n---\nbody\n", "user-invocable: "),
    ("---\ndescription: x\nallowed-tools: {Bash: yes}\n---\nbody\n", "allowed-tools: "),
    ("---\nname: has space\ndescription: x\n---\nbody\n", "name: 'has space' cannot be a skill name"),
    ("---\n- a list\n---\nbody\n", "frontmatter: expected key: value fields"),
])
def test_a_broken_skill_md_is_one_warning_naming_the_file_and_field(
        repo: Path, env: dict[str, str], text: str, says: str) -> None:
    write_skill(repo, "good", skill_md("works"))
    bad = write_skill(repo, "bad", text)
    write_skill(repo, "zed", skill_md("also works"))
    catalog = load_skills(repo, env=env)
    assert catalog.names() == ["good", "zed"]
    assert len(catalog.warnings) == 1
    warning = catalog.warnings[0]
    assert warning.startswith(f"{bad}: {says}") and "; " in warning and "\n" not in warning


def test_a_folder_name_that_cannot_be_a_name_says_to_rename_it(repo: Path, env: dict[str, str]) -> None:
    bad = write_skill(repo, "a.b", skill_md("dotted"))
    catalog = load_skills(repo, env=env)
    assert catalog.names() == []
    assert catalog.warnings[0].startswith(f"{bad}: name: skill name 'a.b' contains '.'")
    assert catalog.warnings[0].endswith("rename the folder or set name in the frontmatter")


def test_a_non_utf8_file_is_a_warning(repo: Path, env: dict[str, str]) -> None:
    bad = write_skill(repo, "latin", "")
    bad.write_bytes(b"---\ndescription: caf\xe9\n---\nbody\n")
    assert load_skills(repo, env=env).warnings == [f"{bad}: file: not UTF-8 text; save it as UTF-8"]


# -- frontmatter ---------------------------------------------------------------------------------


def test_every_frontmatter_field_and_unknown_keys_kept(repo: Path, env: dict[str, str]) -> None:
    write_skill(repo, "folder-name", "---\n"
                "name: audit\n"
                "description: Audits the code\n"
                "argument-hint: [path]\n"
                "allowed-tools: Read Grep Bash(git diff *), Bash(git log *)\n"
                "model: haiku\n"
                "context: fork\n"
                "agent: Explore\n"
                "disable-model-invocation: true\n"
                "user-invocable: false\n"
                "effort: high\n"
                "---\n"
                "Audit $ARGUMENTS.\n")
    skill = load_skills(repo, env=env).get("audit")
    assert skill is not None
    assert skill.model_dump(exclude={"body", "directory", "path"}) == {
        "name": "audit", "description": "Audits the code", "argument_hint": "[path]",
        "allowed_tools": ["Read", "Grep", "Bash(git diff *)", "Bash(git log *)"], "model": "haiku",
        "context": "fork", "agent": "Explore", "disable_model_invocation": True, "user_invocable": False,
        "source": "project", "extra": {"effort": "high"}}


@pytest.mark.parametrize("frontmatter, field, value", [
    ("allowed-tools:\n  - Read\n  - Bash(npm run *)\n", "allowed_tools", ["Read", "Bash(npm run *)"]),
    ("allowed-tools: Read, Write\n", "allowed_tools", ["Read", "Write"]),
    ("argument-hint: add [tag] | remove [tag]\n", "argument_hint", "add [tag] | remove [tag]"),
    ("argument-hint: '[a] [b]'\n", "argument_hint", "[a] [b]"),
    ("context: inherit\n", "context", None),
    ("", "description", "First line of the body continued here"),
])
def test_frontmatter_forms(repo: Path, env: dict[str, str], frontmatter: str, field: str, value: object) -> None:
    body = "# First line of the body\ncontinued here\n\nSecond paragraph."
    write_skill(repo, "s", f"---\n{frontmatter}---\n{body}\n")
    catalog = load_skills(repo, env=env)
    assert catalog.warnings == []
    assert getattr(catalog.skills["s"], field) == value


def test_a_skill_md_without_frontmatter_is_all_body(repo: Path, env: dict[str, str]) -> None:
    write_skill(repo, "plain", "Just do it.\n")
    skill = load_skills(repo, env=env).get("plain")
    assert skill is not None and (skill.body, skill.description) == ("Just do it.", "Just do it.")


def test_invocation_flags_pick_the_catalog_and_the_slash_list(repo: Path, env: dict[str, str]) -> None:
    write_skill(repo, "both", skill_md("both"))
    write_skill(repo, "manual", skill_md("only by slash", extra="disable-model-invocation: true\n"))
    write_skill(repo, "Background", skill_md("only for the model", extra="user-invocable: false\n"))
    catalog = load_skills(repo, env=env)
    assert [s.name for s in catalog.model_invocable()] == ["Background", "both"]
    assert [s.name for s in catalog.user_invocable()] == ["both", "manual"]
    assert catalog.names() == ["Background", "both", "manual"]


# -- the catalog text --------------------------------------------------------------------------


def skill(name: str, description: str = "", **fields: object) -> Skill:
    return Skill.model_validate({"name": name, "description": description, "body": f"BODY OF {name}",
                                 "directory": Path("/s") / name, "path": Path("/s") / name / "SKILL.md", **fields})


def catalog_of(*skills: Skill) -> SkillCatalog:
    return SkillCatalog({s.name: s for s in skills}, [])


def test_catalog_text_lists_model_invocable_skills_sorted_without_bodies() -> None:
    catalog = catalog_of(skill("zeta", "Last one"), skill("alpha", "Reads\n  the logs"),
                         skill("hidden", "Never shown", disable_model_invocation=True),
                         skill("hinted", "Takes a file", argument_hint="[file]"), skill("bare"))
    assert catalog_text(catalog) == ("- alpha: Reads the logs\n- bare\n- hinted: Takes a file (arguments: [file])\n"
                                     "- zeta: Last one")
    assert "BODY OF" not in catalog_text(catalog)


def test_catalog_text_is_empty_without_model_invocable_skills() -> None:
    assert catalog_text(catalog_of()) == ""
    assert catalog_text(catalog_of(skill("x", "x", disable_model_invocation=True))) == ""


# -- slash commands ------------------------------------------------------------------------------

A, B, FORK = skill("a", "A"), skill("b", "B"), skill("fork", "F", context="fork")
HIDDEN = skill("hidden", "H", user_invocable=False)
SLASH = catalog_of(A, B, FORK, HIDDEN)


@pytest.mark.parametrize("prompt, expected", [
    ("/a", SlashExpansion((A,), "", ())),
    ("/a 4127", SlashExpansion((A,), "4127", ())),
    ("/b w0 w1", SlashExpansion((B,), "w0 w1", ())),
    ("  \n/a  spaced  out  ", SlashExpansion((A,), "spaced  out", ())),
    ("/a\nsecond line", SlashExpansion((A,), "second line", ())),
    ("/a /b 4127", SlashExpansion((A, B), "4127", ())),
    ("/b /a /b x", SlashExpansion((B, A, B), "x", ())),
    ("/fork /a x", SlashExpansion((FORK,), "/a x", ())),
    ("/a /fork x", SlashExpansion((A,), "/fork x", ())),
    ("/a /b /fork", SlashExpansion((A, B), "/fork", ())),
    ("/a /zzz rest", SlashExpansion((A,), "/zzz rest", ("/zzz",))),
    ("/a /etc/hosts", SlashExpansion((A,), "/etc/hosts", ())),
    ("/zzz rest", SlashExpansion((), "/zzz rest", ("/zzz",))),
    (" /hidden x", SlashExpansion((), " /hidden x", ("/hidden",))),
    ("/zzz /a", SlashExpansion((), "/zzz /a", ("/zzz",))),
    ("/", None),
    ("/ a", None),
    ("/usr/bin/env ls", None),
    ("/usr/bin", None),
    ("//a", None),
    ("/a.b", None),
    ("/ab", SlashExpansion((), "/ab", ("/ab",))),
    ("please /a", None),
    ("", None),
])
def test_parse_slash(prompt: str, expected: SlashExpansion | None) -> None:
    assert parse_slash(prompt, SLASH, by_person=True) == expected


# -- preloading a definition's skills ----------------------------------------------------------


def test_preload_text_renders_the_named_bodies_and_warns_about_unknown_names() -> None:
    catalog = catalog_of(skill("lint", "L", body="Lint $ARGUMENTS now."), skill("fmt", "F", body="Format."),
                         skill("other", "O"))
    text, warnings = preload_text(["lint", "nope", "fmt", "lint"], catalog)
    assert text == ("# Preloaded skills\n\nThese skills are already loaded; follow them when they apply.\n\n"
                    "## Skill: lint\n\nBase directory for this skill: /s/lint\n\nLint  now.\n\n"
                    "## Skill: fmt\n\nBase directory for this skill: /s/fmt\n\nFormat.")
    assert "BODY OF other" not in text
    assert warnings == [("skills: nope: no such skill (known: fmt, lint, other); fix the name or add "
                        ".claude/skills/nope/SKILL.md")]


def test_preload_text_is_empty_for_no_names_or_only_unknown_ones() -> None:
    assert preload_text([], catalog_of(skill("x"))) == ("", [])
    text, warnings = preload_text(["y"], catalog_of())
    assert text == "" and warnings == [("skills: y: no such skill (known: none); fix the name or add "
                                       ".claude/skills/y/SKILL.md")]


def test_a_definitions_skills_list_loads_without_a_warning_now_that_skills_exist(
        repo: Path, env: dict[str, str]) -> None:
    agents = repo / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "skilled.md").write_text("---\ndescription: x\nskills: [lint, format]\n---\nbody\n")
    catalog = load_agents(repo, env=env)
    skilled = catalog.get("skilled")
    assert skilled is not None and skilled.skills == ["lint", "format"]
    assert catalog.warnings == []
