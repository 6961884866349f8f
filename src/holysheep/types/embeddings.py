"""Embedding responses (OpenAI wire format): ``client.embeddings.create(...)``."""

from __future__ import annotations

from typing import Literal, Union

from ._base import HolySheepModel
from .chat import _ResponseMeta

__all__ = ["CreateEmbeddingResponse", "Embedding", "EmbeddingUsage"]


class Embedding(HolySheepModel):
    """One input's vector: a list of floats (or the base64 string when ``encoding_format="base64"`` was asked)."""

    object: Literal["embedding"] | str = "embedding"
    index: int = 0
    embedding: Union[list[float], str] = []


class EmbeddingUsage(HolySheepModel):
    """Tokens billed for the inputs."""

    prompt_tokens: int = 0
    total_tokens: int = 0


class CreateEmbeddingResponse(_ResponseMeta):
    """The vectors, in input order (``data[i].index == i``)."""

    object: str = "list"
    data: list[Embedding] = []
    model: str = ""
    usage: EmbeddingUsage | None = None
