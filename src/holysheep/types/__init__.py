"""Public response and parameter types."""

from .account import Model, ModelList, Quota
from .chat import (
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionMessage,
    ChatCompletionMessageParam,
    Choice,
    ChoiceDelta,
    ChoiceDeltaToolCall,
    ChunkChoice,
    CompletionUsage,
    FunctionCall,
    Message,
    ModelName,
    ToolCall,
)

__all__ = [
    "ChatCompletion",
    "ChatCompletionChunk",
    "ChatCompletionMessage",
    "ChatCompletionMessageParam",
    "Choice",
    "ChoiceDelta",
    "ChoiceDeltaToolCall",
    "ChunkChoice",
    "CompletionUsage",
    "FunctionCall",
    "Message",
    "Model",
    "ModelList",
    "ModelName",
    "Quota",
    "ToolCall",
]
