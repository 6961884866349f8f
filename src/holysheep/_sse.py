"""Incremental Server-Sent Events decoder (sans-I/O): feed bytes in any chunking, get events out.

Follows the WHATWG event-stream rules: CR, LF and CRLF line endings (a CRLF split across two
reads counts once), ``:`` comments, the ``event``/``data``/``id``/``retry`` fields, multi-line
``data`` joined by ``\\n``, and one optional space after the colon. Lines are decoded as UTF-8 only
once complete, so a multi-byte character split across reads is never broken. A blank line
dispatches the event; an event with no ``data`` line is not dispatched, and neither is an event still
open when the stream ends.
"""

from __future__ import annotations

__all__ = ["SSEDecoder", "ServerSentEvent"]


class ServerSentEvent:
    """One dispatched event."""

    __slots__ = ("data", "event", "id", "retry")

    def __init__(self, data: str, event: str | None = None, id: str | None = None, retry: int | None = None):
        self.data = data
        self.event = event
        self.id = id
        self.retry = retry

    def __repr__(self) -> str:
        return f"ServerSentEvent(event={self.event!r}, data={self.data!r}, id={self.id!r}, retry={self.retry!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ServerSentEvent):
            return NotImplemented
        return (self.data, self.event, self.id, self.retry) == (other.data, other.event, other.id, other.retry)

    __hash__ = None  # type: ignore[assignment]


class SSEDecoder:
    """Turns a byte stream into `ServerSentEvent` objects."""

    __slots__ = ("_buf", "_data", "_event", "_last_id", "_retry", "_skip_lf")

    def __init__(self) -> None:
        self._buf = b""
        self._skip_lf = False  # the previous chunk ended in CR: a leading LF belongs to it
        self._data: list[str] = []
        self._event: str | None = None
        self._last_id: str | None = None
        self._retry: int | None = None

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        """Decode ``chunk`` and return the events it completes (possibly none)."""
        if not chunk:
            return []
        if self._skip_lf:
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        if b"\r" in chunk:
            self._skip_lf = chunk.endswith(b"\r")
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        buf = self._buf + chunk if self._buf else chunk
        lines = buf.split(b"\n")
        self._buf = lines.pop()
        events: list[ServerSentEvent] = []
        for line in lines:
            event = self._line(line)
            if event is not None:
                events.append(event)
        return events

    def flush(self) -> list[ServerSentEvent]:
        """End of stream. As the standard says, an event not closed by a blank line is discarded (a
        stream cut mid-event must not yield half a JSON document); the decoder is reset."""
        self._buf = b""
        self._data = []
        self._event = None
        return []

    def _line(self, raw: bytes) -> ServerSentEvent | None:
        if not raw:
            if not self._data:
                self._event = None
                return None
            event = ServerSentEvent("\n".join(self._data), self._event, self._last_id, self._retry)
            self._data = []
            self._event = None
            return event
        if raw[:1] == b":":
            return None
        line = raw.decode("utf-8", "replace")
        name, sep, value = line.partition(":")
        if sep and value[:1] == " ":
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self._last_id = value
        elif name == "retry" and value.isdigit():
            self._retry = int(value)
        return None
