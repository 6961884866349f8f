"""openai-python's ``openai.types.shared_params`` under the same names: the request parameters that several
endpoints share (function definitions, response formats, metadata). Plain ``TypedDict``s, sent as given."""

from __future__ import annotations

from typing import Literal, TypeAlias

from typing_extensions import Required, TypedDict

__all__ = ["FunctionDefinition", "FunctionParameters", "JSONSchema", "Metadata", "ReasoningEffort",
           "ResponseFormatJSONObject", "ResponseFormatJSONSchema", "ResponseFormatText"]

FunctionParameters: TypeAlias = dict[str, object]
"""A function's parameters as a JSON Schema object."""

Metadata: TypeAlias = dict[str, str]
"""Up to 16 key-value pairs stored with the request."""

ReasoningEffort: TypeAlias = Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"] | None
"""How much a reasoning model thinks (``reasoning_effort=``)."""


class FunctionDefinition(TypedDict, total=False):
    """A function the model may call: its ``name``, ``description``, JSON Schema ``parameters`` and ``strict``."""

    name: Required[str]
    description: str
    parameters: FunctionParameters
    strict: bool | None


class ResponseFormatText(TypedDict, total=False):
    """``response_format={"type": "text"}``: plain text (the default)."""

    type: Required[Literal["text"]]


class ResponseFormatJSONObject(TypedDict, total=False):
    """``response_format={"type": "json_object"}``: any JSON object (JSON mode)."""

    type: Required[Literal["json_object"]]


class JSONSchema(TypedDict, total=False):
    """The schema of a ``json_schema`` response format."""

    name: Required[str]
    description: str
    schema: dict[str, object]
    strict: bool | None


class ResponseFormatJSONSchema(TypedDict, total=False):
    """``response_format={"type": "json_schema", "json_schema": {...}}``: JSON that follows the schema."""

    json_schema: Required[JSONSchema]
    type: Required[Literal["json_schema"]]
