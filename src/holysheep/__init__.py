"""holysheep: the Python SDK for the HolySheep multi-model inference API.

``from holysheep import Client, AsyncClient``. The estimator (``holysheep.estimator``), hardware
table (``holysheep.hardware``) and CLI load only when imported.
"""

from ._async_client import AsyncClient
from ._client import Client
from ._client_options import ClientOptions
from ._config import DEFAULT_BASE_URL, DEFAULT_TIMEOUT
from ._exceptions import *  # noqa: F403
from ._exceptions import __all__ as _exc_all
from ._fallback import CircuitBreaker, Fallback
from ._parsed_stream import AsyncParsedStream, ParsedStream
from ._stream_state import StreamMetrics
from ._streaming import AsyncStream, Stream
from ._structured_errors import (
    ContentFilterFinishReasonError,
    LengthFinishReasonError,
    RefusalError,
    StructuredOutputError,
)
from ._version import __version__
from .types import ChatCompletion, ChatCompletionChunk, Message, Model, ParsedChatCompletion, Quota

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_TIMEOUT",
    "AsyncClient",
    "AsyncParsedStream",
    "AsyncStream",
    "ChatCompletion",
    "ChatCompletionChunk",
    "CircuitBreaker",
    "Client",
    "ClientOptions",
    "ContentFilterFinishReasonError",
    "Fallback",
    "LengthFinishReasonError",
    "Message",
    "Model",
    "ParsedChatCompletion",
    "ParsedStream",
    "Quota",
    "RefusalError",
    "Stream",
    "StreamMetrics",
    "StructuredOutputError",
    "__version__",
    *_exc_all,
]
