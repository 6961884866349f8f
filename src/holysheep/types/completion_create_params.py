"""The part of openai-python's ``openai.types.chat.completion_create_params`` that code types its arguments with:
``ResponseFormat``. ``from holysheep.types.chat import completion_create_params`` gives this module, as openai's
import does (the whole parameter set is `holysheep.ChatParams`)."""

from __future__ import annotations

from typing import TypeAlias, Union

from holysheep.types.shared_params import ResponseFormatJSONObject, ResponseFormatJSONSchema, ResponseFormatText

__all__ = ["ResponseFormat"]

ResponseFormat: TypeAlias = Union[ResponseFormatText, ResponseFormatJSONSchema, ResponseFormatJSONObject]
"""``response_format=`` as a dict: text, a JSON schema or JSON mode."""
