"""FakeServer's ``POST /v1/embeddings``: deterministic vectors (the same text always gives the same vector)."""

from __future__ import annotations

import base64
import hashlib
import math
import struct
from collections.abc import Mapping

from ._responses import Response, error_response

__all__ = ["DEFAULT_EMBEDDING_DIMENSIONS", "embedding_vector", "embeddings_endpoint"]

DEFAULT_EMBEDDING_DIMENSIONS = 16


def embedding_vector(text: str, dimensions: int = DEFAULT_EMBEDDING_DIMENSIONS) -> list[float]:
    """A unit-length vector drawn from SHA-256 of ``text`` (float32 values, like a real server's)."""
    raw: list[float] = []
    counter = 0
    while len(raw) < dimensions:
        digest = hashlib.sha256(f"{counter}:{text}".encode()).digest()
        raw.extend((b - 127.5) / 127.5 for b in digest)
        counter += 1
    vector = raw[:dimensions]
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [struct.unpack("<f", struct.pack("<f", v / norm))[0] for v in vector]


def _texts(value: object) -> list[str] | None:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and value:
        if all(isinstance(v, str) for v in value):
            return list(value)
        if all(isinstance(v, int) for v in value):
            return [" ".join(map(str, value))]
        if all(isinstance(v, list) and all(isinstance(t, int) for t in v) for v in value):
            return [" ".join(map(str, v)) for v in value]
    return None


def embeddings_endpoint(body: object, *, models: Mapping[str, str], strict_models: bool = False,
                        dimensions: int = DEFAULT_EMBEDDING_DIMENSIONS) -> tuple[Response, int]:
    """The reply to an embeddings request, and the tokens it bills."""
    if not isinstance(body, dict):
        return error_response(400, "The request body must be a JSON object.", "invalid_request_error"), 0
    model = body.get("model")
    if not isinstance(model, str) or not model:
        return error_response(400, "you must provide a model parameter", "invalid_request_error", param="model"), 0
    if strict_models and model not in models:
        return error_response(404, f"The model `{model}` does not exist.", "invalid_request_error",
                              "model_not_found"), 0
    texts = _texts(body.get("input"))
    if texts is None or any(not t for t in texts):
        return error_response(400, "'input' must be a non-empty string or array.", "invalid_request_error",
                              param="input"), 0
    size = body.get("dimensions", dimensions)
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        return error_response(400, "'dimensions' must be an integer >= 1.", "invalid_request_error",
                              param="dimensions"), 0
    fmt = body.get("encoding_format", "float")
    data = []
    for i, text in enumerate(texts):
        vector = embedding_vector(text, size)
        value: object = vector
        if fmt == "base64":
            value = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
        data.append({"object": "embedding", "index": i, "embedding": value})
    tokens = sum(len(t.split()) for t in texts)
    reply = {"object": "list", "data": data, "model": model,
             "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}
    return Response(200, reply), tokens
