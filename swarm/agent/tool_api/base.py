"""What a tool is: a name, a description, a pydantic input model, and ``run``.

The input model's JSON schema is what the model sees. ``run`` returns the text
of the tool result (or its blocks: text, images, documents), or raises ``ToolError`` (``swarm.agent.tool_api.context``)
whose message goes back to the model as an error result (never a crash of the
loop). Every result is capped by the executor (``swarm.agent.output_cap``): cut at
the tool's ``max_result_chars`` (a default for a tool that sets none), or, for a
tool with ``max_result_tokens``, refused with an error when over it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel

from swarm.agent.output_cap import ToolOutput
from swarm.agent.tool_api.context import ToolContext
from swarm.models.base import ToolSpec

I = TypeVar("I", bound=BaseModel)


class Tool(ABC, Generic[I]):
    """Base class for tools; subclasses set the class variables and ``run``."""

    name: ClassVar[str]
    description: ClassVar[str]
    input_model: ClassVar[type[BaseModel]]
    read_only: ClassVar[bool] = False
    max_result_chars: ClassVar[int | None] = None
    """A result text longer than this is cut, with a marker, before the model reads it (``agent.output_cap``);
    None: ``output_cap.DEFAULT_RESULT_CHARS``."""
    max_result_tokens: ClassVar[int | None] = None
    """A result estimated over this many tokens is refused with an error instead of cut (Read: a cut file
    would read as the whole); None: results are cut at ``max_result_chars``."""
    truncation_hint: ClassVar[str] = ""
    """What the marker of a cut (or the error of a refused) result tells the model to do instead (e.g. ``use
    head_limit``)."""
    _spec: ToolSpec | None = None

    def spec(self) -> ToolSpec:
        """The tool as the model sees it (its schema is built once per tool object)."""
        if self._spec is None:
            self._spec = ToolSpec(name=self.name, description=self.full_description(),
                                  input_schema=input_schema(self.input_model))
        return self._spec

    def full_description(self) -> str:
        """What the model reads about the tool: ``description``, then ``listing``. A tool whose text depends on
        how it was made (the Agent tool's mode) overrides this; it is read once per tool object."""
        listing = self.listing()
        return f"{self.description}\n\n{listing}" if listing else self.description

    def listing(self) -> str:
        """Text appended to the description, fixed for the tool object (e.g. the choices it offers)."""
        return ""

    @abstractmethod
    def run(self, args: I, ctx: ToolContext) -> ToolOutput:
        """Do the work; return the result (text, or blocks) or raise ToolError."""


SCHEMA_ATTRIBUTE = "__swarm_input_schema__"
"""Where ``input_schema`` keeps a model's schema: on the model class itself, as pydantic keeps its own."""


def input_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s JSON schema as a tool's input (no ``title``), built once per model class and kept on it.

    Kept, not rebuilt per tool object: the CLI server builds the built-in tools' before it forks
    (``swarm.agent.tool_catalog.preload_schemas``), and each teammate forked from it shares them instead of
    spending ~14 ms building its own, into ~4.5 MiB of pages only it would hold. Never changed once built.
    """
    schema = model.__dict__.get(SCHEMA_ATTRIBUTE)
    if not isinstance(schema, dict):
        schema = model.model_json_schema()
        schema.pop("title", None)
        setattr(model, SCHEMA_ATTRIBUTE, schema)
    return schema
