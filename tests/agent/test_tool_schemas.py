"""Tool input schemas are built once per input model and kept (``tool_api.base.input_schema``): after the CLI
server's ``preload_schemas``, a teammate's tools build none (counted in a fresh interpreter: a teammate forked
from the server would hold each one it builds in pages of its own)."""

from __future__ import annotations

import json
import subprocess
import sys

TOOLS_AFTER_PRELOAD = r"""
import json, sys
from pydantic import BaseModel
from swarm.agent.skills.catalog import SkillCatalog
from swarm.agent.tool_catalog import agent_tools, preload_schemas
if sys.argv[1] == "preload":
    preload_schemas()
built = []
real = BaseModel.model_json_schema.__func__
def counting(cls, *args, **kwargs):
    built.append(cls.__name__)
    return real(cls, *args, **kwargs)
BaseModel.model_json_schema = classmethod(counting)
first = [tool.spec() for tool in agent_tools(SkillCatalog({}, []), {})]
again = [tool.spec() for tool in agent_tools(SkillCatalog({}, []), {})]  # a second agent (a subagent) too
print(json.dumps({"built": built, "tools": len(first), "same": [a.model_dump() for a in first] ==
                  [b.model_dump() for b in again], "titled": [s.name for s in first if "title" in s.input_schema]}))
"""


def _specs(mode: str) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", TOOLS_AFTER_PRELOAD, mode], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_after_the_preload_no_tool_builds_its_schema_and_each_is_built_once_without() -> None:
    cold, warm = _specs("cold"), _specs("preload")
    assert warm["built"] == []  # the server built them all: a forked teammate builds none
    assert cold["tools"] == warm["tools"] and len(cold["built"]) == len(set(cold["built"])) >= 15  # once per model
    assert cold["same"] and warm["same"] and cold["titled"] == warm["titled"] == []
