"""Embeddings (``POST /embeddings``) as a `WireFormat`: ``input`` in, vectors out, input tokens only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar

from pydantic import BaseModel
from typing_extensions import Never

from holysheep._core.wire.base import TokenUsage, WireFormat
from holysheep._core.wire.chat import ChatWire
from holysheep.types.embeddings import CreateEmbeddingResponse

if TYPE_CHECKING:
    from holysheep._core.request import RequestSpec

__all__ = ["EMBEDDINGS", "EmbeddingsWire"]


class EmbeddingsWire(WireFormat[CreateEmbeddingResponse, Never]):
    """``embeddings``: no output tokens, never cached (as before the seam)."""

    name: ClassVar[str] = "embeddings"
    operation: ClassVar[str] = "embeddings"
    path: ClassVar[str] = "embeddings"
    urls: ClassVar[frozenset[str]] = frozenset({"/v1/embeddings", "/embeddings", "v1/embeddings", "embeddings"})
    response_type: ClassVar[type[BaseModel]] = CreateEmbeddingResponse
    prompt_field: ClassVar[str] = "input"
    not_prompt_fields: ClassVar[frozenset[str]] = ChatWire.not_prompt_fields  # the cost cap's, as before the seam
    cacheable: ClassVar[bool] = False
    has_output: ClassVar[bool] = False

    def spec(self, params: Mapping[str, object]) -> RequestSpec:
        from holysheep._core.embeddings import embedding_spec

        return embedding_spec(params)

    def prompt_params(self, prompt: str) -> dict[str, object]:
        return {"input": prompt}

    def has_prompt(self, params: Mapping[str, object]) -> bool:
        return "input" in params and "messages" not in params

    def prompt_chars(self, params: Mapping[str, object]) -> int:
        """Characters of each text (a token id counts 4, as a token is about 4 characters)."""
        value = params.get("input")
        texts = [value] if isinstance(value, str) else value if isinstance(value, (list, tuple)) else ()
        chars = 0
        for text in texts:
            chars += len(text) if isinstance(text, str) else len(text) * 4 if isinstance(text, list) else 4
        return chars

    def prompt_text(self, params: Mapping[str, object]) -> str:
        value = params.get("input")
        texts = [value] if isinstance(value, str) else value if isinstance(value, (list, tuple)) else ()
        return "\n".join(t for t in texts if isinstance(t, str))

    def usage_block(self, usage: object) -> TokenUsage | None:
        if usage is None:
            return None
        return TokenUsage(getattr(usage, "prompt_tokens", 0), 0, 0, getattr(usage, "total_tokens", 0))

    def output_texts(self, response: object) -> list[str | None]:
        return [None for _ in getattr(response, "data", None) or ()]


EMBEDDINGS = EmbeddingsWire()
"""The embeddings format."""
