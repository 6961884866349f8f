"""holysheep: the Python SDK for the HolySheep multi-model inference API.

``from holysheep import Client, AsyncClient`` (also named ``OpenAI``, ``AsyncOpenAI``), or the module-level client
(``holysheep.chat.completions.create(...)``, set up from the environment or ``holysheep.api_key = ...``, as
openai-python's). The estimator (``holysheep.estimator``), hardware table (``holysheep.hardware``) and CLI load
only when imported.
"""

from typing import TYPE_CHECKING, Any

from holysheep._clients.async_client import AsyncClient
from holysheep._clients.client import Client
from holysheep._clients.http_clients import (
    DefaultAioHttpClient,
    DefaultAsyncHttpx2Client,
    DefaultAsyncHttpxClient,
    DefaultHttpx2Client,
    DefaultHttpxClient,
)
from holysheep._clients.parsed_stream import AsyncParsedStream, ParsedStream
from holysheep._clients.streaming import AsyncStream, Stream
from holysheep._core.client_options import ClientOptions
from holysheep._core.config import DEFAULT_BASE_URL, DEFAULT_TIMEOUT
from holysheep._core.fallback import CircuitBreaker, Fallback
from holysheep._core.hooks import Hooks
from holysheep._core.request import ChatParams
from holysheep._core.sentinels import NOT_GIVEN, NotGiven, Omit, not_given, omit
from holysheep._core.stream_state import StreamMetrics
from holysheep._core.structured_errors import (
    ContentFilterFinishReasonError,
    LengthFinishReasonError,
    RefusalError,
    StructuredOutputError,
)
from holysheep._core.tool_errors import MaxTurnsError, ToolArgumentsError
from holysheep._exceptions import *  # noqa: F403
from holysheep._exceptions import HolySheepError as OpenAIError
from holysheep._exceptions import __all__ as _exc_all
from holysheep._version import __version__
from holysheep.types import ChatCompletion, ChatCompletionChunk, Message, Model, ParsedChatCompletion, Quota

if TYPE_CHECKING:  # loaded on first use: the schema builder costs import time
    import httpx

    from holysheep._core.tool_loop import ToolCallRecord, ToolRunResult
    from holysheep._core.tools import FunctionTool, function_tool, pydantic_function_tool

OpenAI = Client
"""openai-python's name for `Client`."""
AsyncOpenAI = AsyncClient
"""openai-python's name for `AsyncClient`."""

# The module-level client's settings (openai-python's module attributes); None: the environment, the defaults.
api_key: str | None = None
base_url: str | None = None
timeout: "float | httpx.Timeout | None" = None
max_retries: int | None = None
default_headers: dict[str, str] | None = None
default_query: dict[str, object] | None = None
http_client: object | None = None

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_TIMEOUT",
    "NOT_GIVEN",
    "AsyncClient",
    "AsyncOpenAI",
    "DefaultAioHttpClient",
    "DefaultAsyncHttpx2Client",
    "DefaultAsyncHttpxClient",
    "DefaultHttpx2Client",
    "DefaultHttpxClient",
    "NotGiven",
    "Omit",
    "OpenAI",
    "OpenAIError",
    "not_given",
    "omit",
    "AsyncParsedStream",
    "AsyncStream",
    "ChatCompletion",
    "ChatCompletionChunk",
    "ChatParams",
    "CircuitBreaker",
    "Client",
    "ClientOptions",
    "ContentFilterFinishReasonError",
    "Fallback",
    "FunctionTool",
    "Hooks",
    "LengthFinishReasonError",
    "MaxTurnsError",
    "Message",
    "Model",
    "ParsedChatCompletion",
    "ParsedStream",
    "Quota",
    "RefusalError",
    "Stream",
    "StreamMetrics",
    "StructuredOutputError",
    "ToolArgumentsError",
    "ToolCallRecord",
    "ToolRunResult",
    "__version__",
    "function_tool",
    "pydantic_function_tool",
    *_exc_all,
]

_LAZY = {"FunctionTool": "_core.tools", "function_tool": "_core.tools", "pydantic_function_tool": "_core.tools",
         "ToolCallRecord": "_core.tool_loop", "ToolRunResult": "_core.tool_loop"}


_MODULE_RESOURCES = frozenset({"chat", "embeddings", "models", "beta", "quota", "responses"})


def __getattr__(name: str) -> Any:
    if name in _MODULE_RESOURCES:  # holysheep.chat, .embeddings, .models...: the module-level client's
        from holysheep._clients.module_client import MODULE_SETTINGS, module_client

        return getattr(module_client({key: globals()[key] for key in MODULE_SETTINGS}), name)
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
