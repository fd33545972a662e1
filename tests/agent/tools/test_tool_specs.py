"""What the model sees: names, described input fields, validation."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from swarm.agent.tools import (
    BashInput,
    EditInput,
    GrepInput,
    ReadInput,
    WriteInput,
    core_tools,
)

def test_core_tools_are_the_six_fresh_instances() -> None:
    first, second = core_tools(), core_tools()
    assert [t.name for t in first] == ["Read", "Write", "Edit", "Bash", "Glob", "Grep"]
    assert all(a is not b for a, b in zip(first, second, strict=True))
    assert {t.name for t in first if t.read_only} == {"Read", "Glob", "Grep"}


@pytest.mark.parametrize("tool", core_tools(), ids=lambda t: t.name)
def test_schema_fields_are_described_plainly(tool: object) -> None:
    """Field names, types and required fields are Claude Code's (``tests/teammate/test_tool_schema_parity.py``)."""
    spec = tool.spec()  # type: ignore[attr-defined]
    schema = spec.input_schema
    assert spec.description
    for name, prop in schema["properties"].items():
        assert prop.get("description"), f"{spec.name}.{name} needs a description for the model"
        assert "anyOf" not in prop and "title" not in prop, "optional fields show a plain type"


@pytest.mark.parametrize(("model", "raw"), [
    (ReadInput, {}),
    (ReadInput, {"file_path": "x", "offset": -1}),
    (WriteInput, {"file_path": "x"}),
    (EditInput, {"file_path": "x", "old_string": "a"}),
    (BashInput, {"command": "ls", "timeout": 0}),
    (GrepInput, {"pattern": "x", "output_mode": "lines"}),
    (GrepInput, {"pattern": "x", "-A": -2}),
])
def test_invalid_input_fails_validation(model: type, raw: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        model.model_validate(raw)  # type: ignore[attr-defined]


def test_stray_fields_are_ignored_and_aliases_accepted() -> None:
    read = ReadInput.model_validate({"file_path": "a", "pages": "1-3"})
    assert read.file_path == "a"
    grep = GrepInput.model_validate({"pattern": "x", "-i": True, "-n": False, "-A": 1, "-B": 2, "-C": 3, "stray": "py"})
    assert (grep.case_insensitive, grep.line_numbers, grep.after, grep.before, grep.around) == (True, False, 1, 2, 3)
