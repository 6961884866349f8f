"""The request a batch item's ``create()`` arguments send: one builder for its plan and for the dry run."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from holysheep._core.embeddings import embedding_spec
from holysheep._core.request import RequestSpec, build_chat_spec

__all__ = ["item_spec"]


def item_spec(params: Mapping[str, Any], parse: Callable[[bytes], object]) -> RequestSpec:
    """The non-streamed request that ``create()`` arguments send: a chat completion, or embeddings when they
    hold ``input`` and no ``messages``. Behind both a batch item's plan and the dry run, so the spend bound
    is read from the same body that goes on the wire (raises InvalidRequestError before any I/O)."""
    if "input" in params and "messages" not in params:  # an embeddings item
        return embedding_spec(params)
    rest = dict(params)
    model = rest.pop("model", None)
    messages = rest.pop("messages", None)
    rest.pop("stream", None)
    return build_chat_spec(model=model, messages=messages, stream=False, params=rest, parse=parse)
