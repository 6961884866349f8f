"""Public response and parameter types."""

from holysheep.types.account import Model, ModelList, Quota
from holysheep.types.chat import (
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionMessage,
    ChatCompletionMessageParam,
    Choice,
    ChoiceDelta,
    ChoiceDeltaToolCall,
    ChunkChoice,
    CompletionTokensDetails,
    CompletionUsage,
    FunctionCall,
    Message,
    ModelName,
    PromptTokensDetails,
    ToolCall,
)
from holysheep.types.parsed import (
    ParsedChatCompletion,
    ParsedChatCompletionMessage,
    ParsedChoice,
    ParsedFunction,
    ParsedFunctionToolCall,
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
    "CompletionTokensDetails",
    "CompletionUsage",
    "FunctionCall",
    "Message",
    "Model",
    "ModelList",
    "ModelName",
    "ParsedChatCompletion",
    "ParsedChatCompletionMessage",
    "ParsedChoice",
    "ParsedFunction",
    "ParsedFunctionToolCall",
    "PromptTokensDetails",
    "Quota",
    "ToolCall",
]
