"""Pure helpers for a body read piece by piece (``with_streaming_response``): fixed-size chunks, text decoding
with the response's charset, and line splitting, the way httpx's ``iter_bytes``/``iter_text``/``iter_lines``
do it (the sync and async shells feed them alike)."""

from __future__ import annotations

import codecs
from collections.abc import Mapping

from holysheep._exceptions import InvalidRequestError

__all__ = ["LineSplitter", "Rechunker", "charset", "text_decoder"]

_NEWLINES = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"  # what str.splitlines splits on


class Rechunker:
    """Regroups pieces into chunks of exactly ``size`` bytes (the last one shorter); ``None``: as they come."""

    __slots__ = ("_buffer", "size")

    def __init__(self, size: int | None) -> None:
        if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 1):
            raise InvalidRequestError(f"chunk_size must be an integer >= 1 or None, got {size!r}.",
                                      field="chunk_size")
        self.size = size
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        """The whole chunks ``data`` completes."""
        if self.size is None:
            return [data] if data else []
        self._buffer += data
        size = self.size
        if len(self._buffer) < size:
            return []
        cut = len(self._buffer) - len(self._buffer) % size
        whole = bytes(self._buffer[:cut])
        del self._buffer[:cut]
        return [whole[i:i + size] for i in range(0, cut, size)]

    def flush(self) -> list[bytes]:
        """The last, shorter chunk (if any)."""
        rest, self._buffer = bytes(self._buffer), bytearray()
        return [rest] if rest else []


def charset(headers: Mapping[str, str]) -> str:
    """The body's text encoding: the ``charset`` of its ``Content-Type`` when Python knows it, else UTF-8."""
    for param in headers.get("content-type", "").split(";")[1:]:
        name, _, value = param.strip().partition("=")
        if name.strip().lower() == "charset":
            value = value.strip().strip('"').strip("'")
            try:
                return codecs.lookup(value).name
            except LookupError:
                break
    return "utf-8"


def text_decoder(headers: Mapping[str, str]) -> codecs.IncrementalDecoder:
    """An incremental decoder for the body's charset (undecodable bytes become U+FFFD, as in httpx)."""
    return codecs.getincrementaldecoder(charset(headers))(errors="replace")


class LineSplitter:
    """Splits text pieces into lines (without their line endings), a ``\\r\\n`` split across pieces included."""

    __slots__ = ("_buffer", "_cr")

    def __init__(self) -> None:
        self._buffer: list[str] = []
        self._cr = False

    def feed(self, text: str) -> list[str]:
        """The lines ``text`` completes."""
        if self._cr:
            text, self._cr = "\r" + text, False
        if text.endswith("\r"):  # perhaps the first half of "\r\n": wait for the next piece
            self._cr, text = True, text[:-1]
        if not text:
            return []
        ends_line = text[-1] in _NEWLINES
        lines = text.splitlines()
        if len(lines) == 1 and not ends_line:
            self._buffer.append(lines[0])
            return []
        if self._buffer:
            lines[0] = "".join(self._buffer) + lines[0]
            self._buffer = []
        if not ends_line:
            self._buffer = [lines.pop()]
        return lines

    def flush(self) -> list[str]:
        """The last line, when the text did not end with a line ending."""
        if not self._buffer and not self._cr:
            return []
        line, self._buffer, self._cr = "".join(self._buffer), [], False
        return [line]
