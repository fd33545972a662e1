"""What every tool's input model is built from: the base model and the field types the schemas share.

Unknown fields are ignored (models add stray ones), and optional fields are
typed ``X | NoneOmitted`` so the JSON schema the model sees shows a plain
type, without pydantic's titles or ``null`` defaults.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema


def _tidy_schema(schema: dict[str, Any], model: type[BaseModel]) -> None:
    """Drop pydantic's per-field titles and ``null`` defaults: noise to the model."""
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
        if "default" in prop and prop["default"] is None:
            del prop["default"]


class ToolInput(BaseModel):
    """Base of the tool input models.

    Unknown fields are ignored (models add stray ones); optional fields are
    typed ``X | SkipJsonSchema[None]`` so the schema shows a plain type.
    """

    model_config = ConfigDict(extra="ignore", populate_by_name=True, json_schema_extra=_tidy_schema)


NonNegInt = Annotated[int, Field(ge=0)]
PosInt = Annotated[int, Field(ge=1)]
NoneOmitted = SkipJsonSchema[None]
