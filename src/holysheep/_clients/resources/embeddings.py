"""``client.embeddings``: typed for both the sync and async clients."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Generic, Literal, TypeVar, Union

from typing_extensions import TypedDict, Unpack

from holysheep._clients.resources.chat import Resource
from holysheep._core.config import TimeoutTypes
from holysheep._core.embeddings import embedding_body, embedding_request
from holysheep._core.request import request_options
from holysheep._core.sentinels import given, or_default

__all__ = ["BaseEmbeddings", "EmbeddingInput", "RequestParams"]

_RE = TypeVar("_RE")
EmbeddingInput = Union[str, Sequence[str], Iterable[int], Iterable[Iterable[int]]]
"""A text, a list of texts, a list of token ids, or a list of token-id lists."""


class RequestParams(TypedDict, total=False):
    """Per-call transport options, as on ``chat.completions.create``."""

    extra_headers: Mapping[str, str | None]
    extra_query: Mapping[str, Any]
    extra_body: Mapping[str, object]
    timeout: TimeoutTypes
    max_retries: int


class BaseEmbeddings(Resource, Generic[_RE]):
    """``client.embeddings``."""

    def create(self, *, model: str, input: EmbeddingInput, dimensions: int | None = None,
               encoding_format: Literal["float", "base64"] | None = None, user: str | None = None,
               **options: Unpack[RequestParams]) -> _RE:
        """Embed ``input`` (``POST /embeddings``): a `CreateEmbeddingResponse` with one vector per input, in order.

        Without ``encoding_format`` the vectors are requested as base64 and decoded to floats, as openai-python
        does (smaller replies); ``encoding_format="base64"`` returns the strings. Retries, errors and key
        handling are those of ``chat.completions.create``; arguments are checked before any I/O.
        """
        opts = given(options)  # NOT_GIVEN/omit: not passed
        dimensions, encoding_format, user = (or_default(dimensions, None), or_default(encoding_format, None),
                                             or_default(user, None))
        unknown = set(opts) - set(RequestParams.__optional_keys__)
        if unknown:
            from holysheep._exceptions import InvalidRequestError

            name = sorted(unknown)[0]
            raise InvalidRequestError(f"embeddings.create() got an unknown parameter {name!r}. Send server-specific "
                                      f"fields through extra_body={{{name!r}: ...}}.", field=name,
                                      reason="unknown parameter")
        body, decode = embedding_body(model=model, input=input, dimensions=dimensions,
                                      encoding_format=encoding_format, user=user,
                                      extra_body=or_default(options.get("extra_body"), None))
        spec = embedding_request(body, decode, request_options(opts))
        result: _RE = self._client._execute(spec)
        return result
