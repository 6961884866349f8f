"""Embedding responses (OpenAI wire format): ``client.embeddings.create(...)``."""

from __future__ import annotations

from typing import Literal, Union

from ._base import HolySheepModel
from .chat import _ResponseMeta

__all__ = ["CreateEmbeddingResponse", "Embedding", "EmbeddingUsage"]


class Embedding(HolySheepModel):
    """One input's vector: a list of floats (or the base64 string when ``encoding_format="base64"`` was asked)."""

    embedding: Union[list[float], str] = []
    index: int = 0
    object: Literal["embedding"] | str = "embedding"


class EmbeddingUsage(HolySheepModel):
    """Tokens billed for the inputs (openai-python's ``create_embedding_response.Usage``)."""

    _openai_name = "Usage"

    prompt_tokens: int = 0
    total_tokens: int = 0


class CreateEmbeddingResponse(_ResponseMeta):
    """The vectors, in input order (``data[i].index == i``)."""

    data: list[Embedding] = []
    model: str = ""
    object: str = "list"
    usage: EmbeddingUsage | None = None
