"""API-key rules: shape check, masking, and scrubbing keys out of any text we show."""

from __future__ import annotations

import re
from typing import Any

from holysheep._egress import MIN_SECRET_LEN, mask_key, remember
from holysheep._exceptions import InvalidAPIKeyError

__all__ = ["HOLYSHEEP_KEY_RE", "MIN_SECRET_LEN", "SecretKey", "check_key_characters", "key_character_problem",
           "mask_key", "redact", "redact_value", "validate_holysheep_key"]

ENV_API_KEY = "HOLYSHEEP_API_KEY"
HOLYSHEEP_KEY_RE = re.compile(r"hs_[A-Za-z0-9_-]{16,}")
_ANY_HS_TOKEN = re.compile(r"hs_[A-Za-z0-9_-]{4,}")
_TOKEN_CHARS = r"A-Za-z0-9_\-"
_patterns: dict[str, re.Pattern[str]] = {}


def _secret_pattern(secret: str) -> re.Pattern[str]:
    pattern = _patterns.get(secret)
    if pattern is None:
        if len(_patterns) > 64:
            _patterns.clear()
        pattern = _patterns[secret] = re.compile(
            rf"(?<![{_TOKEN_CHARS}]){re.escape(secret)}(?![{_TOKEN_CHARS}])")
    return pattern


def redact(text: str, *secrets: str | None) -> str:
    """Scrub every given secret, and anything shaped like a HolySheep key, out of ``text``.

    A secret is replaced only where it stands as a whole token (not inside a longer word) and only when
    it is at least `MIN_SECRET_LEN` characters long, so placeholder keys such as ``EMPTY`` or ``db`` do
    not mangle the server's text.
    """
    for secret in secrets:
        if secret and len(secret) >= MIN_SECRET_LEN and secret in text:
            text = _secret_pattern(secret).sub(mask_key(secret).replace("\\", "\\\\"), text)
    if "hs_" in text:
        text = _ANY_HS_TOKEN.sub(lambda m: mask_key(m.group(0)) if len(m.group(0)) > 8 else "hs_…", text)
    return text


def redact_value(value: object, *secrets: str | None) -> Any:
    """`redact` applied to every string inside a JSON-like value; the structure is never changed."""
    if isinstance(value, str):
        return redact(value, *secrets)
    if isinstance(value, dict):
        return {redact(k, *secrets) if isinstance(k, str) else k: redact_value(v, *secrets)
                for k, v in value.items()}
    if isinstance(value, list):
        return [redact_value(v, *secrets) for v in value]
    if isinstance(value, tuple):
        return tuple(redact_value(v, *secrets) for v in value)
    return value


_CONTROL_NAMES = {"\t": "a tab", "\n": "a newline", "\r": "a carriage return", "\x00": "a NUL byte"}


def key_character_problem(key: str) -> str | None:
    """What is wrong with the characters of ``key`` (whitespace, control characters, non-ASCII), in words
    that never quote it; None when every character is printable ASCII (``!`` to ``~``)."""
    if all("!" <= c <= "~" for c in key):
        return None
    if key.endswith(("\n", "\r")) and all("!" <= c <= "~" for c in key.rstrip("\r\n")):
        return ("ends with a newline (as a key read with open(path).read() does): strip it, e.g. "
                "api_key=key.strip(). The SDK does not strip it for you")
    if key[:1].isspace():
        return "starts with whitespace: strip it, e.g. api_key=key.strip()"
    if key[-1:].isspace():
        return "ends with whitespace: strip it, e.g. api_key=key.strip()"
    for i, c in enumerate(key, 1):
        if c.isspace() and c.isascii():
            name = _CONTROL_NAMES.get(c, "a space" if c == " " else "whitespace")
            return (f"contains whitespace ({name}) at character {i} of {len(key)}: a key has none, and strip() "
                    "removes only the ends; copy the key again")
        if not c.isascii():
            return (f"contains a non-ASCII character at character {i} of {len(key)} (a typographic quote, a "
                    "non-breaking space or a look-alike letter?): keys are printable ASCII; copy the key again")
        if not "!" <= c <= "~":
            name = _CONTROL_NAMES.get(c, f"\\x{ord(c):02x}")
            return (f"contains a control character ({name}) at character {i} of {len(key)}: keys are printable "
                    "ASCII; strip it out or copy the key again")
    return None  # pragma: no cover - every other character is printable ASCII


def check_key_characters(key: str, where: str = "api_key") -> None:
    """Raise `InvalidAPIKeyError` (never quoting the key) when ``key`` holds whitespace, control characters
    or non-ASCII: no HTTP header can carry them, and the transports would fail with the key in the message."""
    problem = key_character_problem(key)
    if problem is not None:
        raise InvalidAPIKeyError(f"The key in {where} {problem}. Nothing was sent.")


def validate_holysheep_key(key: str) -> None:
    """Raise `InvalidAPIKeyError` unless ``key`` is ``hs_`` plus 16+ of ``[A-Za-z0-9_-]``."""
    if not isinstance(key, str):
        raise InvalidAPIKeyError(
            f"api_key must be a string, got {type(key).__name__}. Pass api_key='hs_...' or set {ENV_API_KEY}."
        )
    if HOLYSHEEP_KEY_RE.fullmatch(key):
        return
    check_key_characters(key)
    shown = repr(key[:3]) + "…" if key else "an empty string"
    raise InvalidAPIKeyError(
        f"The API key starting with {shown} is not a HolySheep key: expected 'hs_' followed by at least "
        f"16 characters from A-Z, a-z, 0-9, '_' or '-'. Copy the key from your HolySheep dashboard into "
        f"api_key=... or the {ENV_API_KEY} environment variable (a self-hosted base_url accepts any key)."
    )


class SecretKey:
    """Holds an API key; its repr and str never show more than ``hs_…`` + the last 4 characters."""

    __slots__ = ("__weakref__", "_value")

    def __init__(self, value: str | None) -> None:
        self._value = value
        remember(value, self)  # every sink masks it while this key (or another holder of it) lives (_egress)

    def reveal(self) -> str | None:
        """The key itself, for the Authorization header only."""
        return self._value

    def __bool__(self) -> bool:
        return bool(self._value)

    def __repr__(self) -> str:
        return f"SecretKey({mask_key(self._value)!r})"

    __str__ = __repr__

    def __reduce__(self) -> str | tuple[object, ...]:  # pickling would write the key in clear text to disk
        raise TypeError("SecretKey cannot be pickled; pass the key again where it is needed")
