"""A small git repository to run the example teams against (``swarm demo``, tests)."""

from __future__ import annotations

from pathlib import Path

from swarm.backends.git import git

FILES = {
    "README.md": "# text-tools\n\nTiny helpers for text, used to show swarm's example teams at work.\n",
    "text_utils.py": (
        '"""Small text helpers."""\n\n\n'
        "def shout(text):\n"
        '    """Upper-case the text and add emphasis."""\n'
        '    return text.upper() + "!"\n\n\n'
        "def calc(expression):\n"
        '    """Evaluate an arithmetic expression (unsafe: uses eval)."""\n'
        "    return eval(expression)\n\n\n"
        "# more helpers below\n"
    ),
    "app.py": (
        "import os\n\nfrom text_utils import shout\n\n\n"
        "def main():\n"
        "    print(shout(os.environ.get('USER', 'world')))\n\n\n"
        'if __name__ == "__main__":\n'
        "    main()\n"
    ),
    ".claude/skills/run-tests/SKILL.md": (
        "---\n"
        "name: run-tests\n"
        "description: Run the repository's Python tests in a separate context and report pass or fail. "
        "Use before saying that code works.\n"
        "argument-hint: [test files]\n"
        "context: fork\n"
        "---\n"
        "Run every one of these test files with python3: $ARGUMENTS\n"
        "Reply with one line: `tests: pass`, or `tests: FAIL <file>` for the first that fails.\n"
    ),
}


def make_sample_repo(path: Path) -> Path:
    """Create a git repository with a few Python files, a skill and two commits at ``path``; return it."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.name", "swarm demo")
    git(path, "config", "user.email", "demo@swarm.invalid")
    git(path, "config", "commit.gpgsign", "false")
    (path / "README.md").write_text(FILES["README.md"])
    git(path, "add", "README.md")
    git(path, "commit", "-q", "-m", "Start text-tools")
    for name in ("text_utils.py", "app.py", ".claude/skills/run-tests/SKILL.md"):
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(FILES[name])
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "Add shout, calc and a small app")
    return path


def examples_dir() -> Path:
    """Where the packaged example teams live (``teams.example`` in a checkout)."""
    return Path(__file__).resolve().parent.parent / "examples"
