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
from .parsed import ParsedChatCompletion, ParsedChatCompletionMessage, ParsedChoice

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
    "ParsedChatCompletion",
    "ParsedChatCompletionMessage",
    "ParsedChoice",
    "Quota",
    "ToolCall",
]
