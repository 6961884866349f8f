"""holysheep: the Python SDK for the HolySheep multi-model inference API.

``from holysheep import Client, AsyncClient``. The estimator (``holysheep.estimator``), hardware
table (``holysheep.hardware``) and CLI load only when imported.
"""

from holysheep._clients.async_client import AsyncClient
from holysheep._clients.client import Client
from holysheep._clients.parsed_stream import AsyncParsedStream, ParsedStream
from holysheep._clients.streaming import AsyncStream, Stream
from holysheep._core.client_options import ClientOptions
from holysheep._core.config import DEFAULT_BASE_URL, DEFAULT_TIMEOUT
from holysheep._core.fallback import CircuitBreaker, Fallback
from holysheep._core.hooks import Hooks
from holysheep._core.stream_state import StreamMetrics
from holysheep._core.structured_errors import (
    ContentFilterFinishReasonError,
    LengthFinishReasonError,
    RefusalError,
    StructuredOutputError,
)
from holysheep._exceptions import *  # noqa: F403
from holysheep._exceptions import __all__ as _exc_all
from holysheep._version import __version__
from holysheep.types import ChatCompletion, ChatCompletionChunk, Message, Model, ParsedChatCompletion, Quota

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
    "Hooks",
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
