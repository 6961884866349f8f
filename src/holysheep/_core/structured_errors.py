"""Errors of structured outputs (``chat.completions.parse``): the reply could not become the requested type.

    APIError
    ├── APIResponseValidationError
    │   └── StructuredOutputError           content is not JSON, or does not validate (after any repairs)
    ├── RefusalError                        the model refused (``message.refusal``)
    ├── LengthFinishReasonError             ``finish_reason == "length"``: the JSON was cut off
    └── ContentFilterFinishReasonError      ``finish_reason == "content_filter"``
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from holysheep._exceptions import APIError, APIResponseValidationError

if TYPE_CHECKING:  # pragma: no cover
    from pydantic import ValidationError

    from holysheep.types.chat import ChatCompletion

__all__ = ["ContentFilterFinishReasonError", "LengthFinishReasonError", "RefusalError", "StructuredOutputError"]


class StructuredOutputError(APIResponseValidationError):
    """The reply is not valid JSON for the requested type (after ``max_repairs`` re-asks, if any).

    ``raw_text``: the content of the last reply. ``validation_error``: pydantic's `ValidationError`
    (``None`` for a plain JSON-schema dict, whose replies are only checked to be JSON).
    ``completion`` (also ``response``): the last `ChatCompletion`, with ``usage`` summed over every attempt.
    ``attempts``: how many requests were sent (1 + re-asks).
    """

    def __init__(self, message: str, *, raw_text: str, validation_error: ValidationError | None,
                 completion: ChatCompletion, attempts: int = 1, **kwargs: object) -> None:
        super().__init__(message, status_code=200, request_id=completion.request_id, partial_text=raw_text,
                         **kwargs)
        self.raw_text = raw_text
        self.validation_error = validation_error
        self.completion = self.response = completion
        self.attempts = attempts


class _UnparsableCompletionError(APIError):
    """Base of the finish-reason and refusal errors: ``completion`` is the response that could not be parsed."""

    def __init__(self, message: str, *, completion: ChatCompletion, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.completion = completion
        self.request_id = completion.request_id


class RefusalError(_UnparsableCompletionError):
    """The model refused to answer (``message.refusal``); ``refusal`` holds its explanation."""

    def __init__(self, message: str, *, refusal: str, completion: ChatCompletion, **kwargs: object) -> None:
        super().__init__(message, completion=completion, **kwargs)
        self.refusal = refusal


class LengthFinishReasonError(_UnparsableCompletionError):
    """The reply stopped at the token limit (``finish_reason == "length"``), so its JSON is cut off."""


class ContentFilterFinishReasonError(_UnparsableCompletionError):
    """The provider's content filter stopped the reply (``finish_reason == "content_filter"``)."""
