"""``embeddings.create``: argument checks, the request, and decoding the reply (no I/O)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from holysheep._exceptions import InvalidRequestError
from holysheep.types.embeddings import CreateEmbeddingResponse

if TYPE_CHECKING:
    from holysheep._core.request import RequestOptions, RequestSpec

__all__ = ["EMBEDDING_PARAM_NAMES", "check_embedding_input", "embedding_body", "embedding_parser", "embedding_spec"]

EMBEDDING_PARAM_NAMES = frozenset({"model", "input", "dimensions", "encoding_format", "user"})
_HINT = "Pass input='text', a list of strings, a list of token ids, or a list of token-id lists."


def _fail(field: str, reason: str, hint: str = _HINT) -> InvalidRequestError:
    return InvalidRequestError(f"{field}: {reason}. {hint}", field=field, reason=reason)


def _token_ids(value: Sequence[object]) -> bool:
    return all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in value)


def check_embedding_input(value: object) -> None:
    """A string, a non-empty list of strings, of token ids, or of token-id lists (none of them empty)."""
    if isinstance(value, str):
        if not value:
            raise _fail("input", "is an empty string")
        return
    if isinstance(value, (bytes, Mapping)) or not isinstance(value, Sequence):
        raise _fail("input", f"must be a string or a list, got {type(value).__name__}")
    if not value:
        raise _fail("input", "is an empty list")
    first = value[0]
    if isinstance(first, str):
        for i, item in enumerate(value):
            if not isinstance(item, str) or not item:
                raise _fail(f"input[{i}]", f"must be a non-empty string, got {item!r}"[:120])
    elif isinstance(first, int) and not isinstance(first, bool):
        if not _token_ids(value):
            raise _fail("input", "mixes token ids with other values")
    elif isinstance(first, Sequence):
        for i, item in enumerate(value):
            if isinstance(item, (str, bytes)) or not isinstance(item, Sequence) or not item or not _token_ids(item):
                raise _fail(f"input[{i}]", "must be a non-empty list of token ids")
    else:
        raise _fail("input[0]", f"must be a string or a token id, got {type(first).__name__}")


def embedding_body(*, model: object, input: object, dimensions: object = None, encoding_format: object = None,
                   user: object = None,
                   extra_body: Mapping[str, object] | None = None) -> tuple[dict[str, object], bool]:
    """The JSON body and whether the reply's base64 vectors are decoded to floats (when the caller did not ask
    for a format, base64 is requested and decoded, as openai-python does). Raises `InvalidRequestError`."""
    if not isinstance(model, str) or not model.strip():
        raise _fail("model", f"must be a non-empty string, got {model!r}",
                    "For example model='text-embedding-3-small'.")
    check_embedding_input(input)
    body: dict[str, object] = {"model": model, "input": list(input) if isinstance(input, tuple) else input}
    if dimensions is not None:
        if isinstance(dimensions, bool) or not isinstance(dimensions, int) or dimensions < 1:
            raise _fail("dimensions", f"must be an integer >= 1, got {dimensions!r}", "For example dimensions=256.")
        body["dimensions"] = dimensions
    if encoding_format is not None and encoding_format not in ("float", "base64"):
        raise _fail("encoding_format", f"must be 'float' or 'base64', got {encoding_format!r}",
                    "Leave it out to get floats.")
    decode = encoding_format is None
    body["encoding_format"] = "base64" if decode else encoding_format
    if user is not None:
        if not isinstance(user, str):
            raise _fail("user", f"must be a string, got {type(user).__name__}", "Pass user='...'.")
        body["user"] = user
    if extra_body:
        if not isinstance(extra_body, Mapping):
            raise _fail("extra_body", f"must be a dict, got {type(extra_body).__name__}", "Pass extra_body={...}.")
        body.update(extra_body)
    return body, decode


def _decode(vector: str) -> list[float]:
    import array
    import base64
    import sys

    values = array.array("f")
    values.frombytes(base64.b64decode(vector))
    if sys.byteorder != "little":  # the wire format is little-endian float32
        values.byteswap()
    return values.tolist()


def embedding_parser(decode: bool) -> Callable[[bytes], CreateEmbeddingResponse]:
    """Parses an embeddings reply; with ``decode``, base64 vectors become lists of floats."""

    def parse(content: bytes) -> CreateEmbeddingResponse:
        response = CreateEmbeddingResponse.model_validate_json(content)
        if decode:
            for item in response.data:
                if isinstance(item.embedding, str):
                    item.embedding = _decode(item.embedding)
        return response

    return parse


def embedding_spec(params: Mapping[str, Any]) -> RequestSpec:
    """A batch item's embeddings request (``model``, ``input`` and the optional fields; per-call options as
    for ``embeddings.create``). Raises `InvalidRequestError` naming an unknown field."""
    from holysheep._core.request import request_options

    known = EMBEDDING_PARAM_NAMES | {"extra_body", "extra_headers", "extra_query", "timeout", "max_retries"}
    unknown = sorted(set(params) - known)
    if unknown:
        raise InvalidRequestError(f"{unknown[0]}: not a parameter of an embeddings request. Leave it out of "
                                  "embedding items (or send it through extra_body).", field=unknown[0],
                                  reason="unknown parameter")
    body, decode = embedding_body(model=params.get("model"), input=params.get("input"),
                                  dimensions=params.get("dimensions"), encoding_format=params.get("encoding_format"),
                                  user=params.get("user"), extra_body=params.get("extra_body"))
    return embedding_request(body, decode, request_options(params))


_DEFAULTED = frozenset({"encoding_format"})


def embedding_request(body: dict[str, object], decode: bool, options: RequestOptions) -> RequestSpec:
    """The request of an `embedding_body`: with ``decode``, the base64 ``encoding_format`` is the SDK's choice
    (``defaulted``, so hooks do not report it as the caller's)."""
    from holysheep._core.request import RequestSpec

    return RequestSpec("POST", "embeddings", body, embedding_parser(decode), options=options,
                       defaulted=_DEFAULTED if decode else frozenset())
