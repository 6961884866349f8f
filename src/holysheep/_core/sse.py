"""Incremental Server-Sent Events decoder (sans-I/O): feed bytes in any chunking, get events out.

Follows the WHATWG event-stream rules: CR, LF and CRLF line endings (a CRLF split across two
reads counts once), ``:`` comments, the ``event``/``data``/``id``/``retry`` fields, multi-line
``data`` joined by ``\\n``, and one optional space after the colon. Lines are decoded as UTF-8 only
once complete, so a multi-byte character split across reads is never broken. A blank line
dispatches the event; an event with no ``data`` line is not dispatched, and neither is an event still
open when the stream ends. Lines and events are capped (`DEFAULT_MAX_SSE_BYTES`).
"""

from __future__ import annotations

from holysheep._exceptions import ResponseTooLargeError

__all__ = ["DEFAULT_MAX_SSE_BYTES", "SSEDecoder", "ServerSentEvent"]

DEFAULT_MAX_SSE_BYTES = 16 * 1024 * 1024  # one line, and one event's data, at most (16 MiB)


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
    """Turns a byte stream into `ServerSentEvent` objects, in time linear in the bytes fed.

    Each `feed` scans only the new bytes for line ends. A line longer than `max_line_bytes`, or an
    event whose ``data`` lines add up to more than `max_event_bytes`, raises `ResponseTooLargeError`
    at once (so endless data without a newline costs bounded memory). `events` counts dispatched events.
    """

    __slots__ = ("_buf", "_data", "_data_bytes", "_event", "_last_id", "_retry", "_skip_lf", "events",
                 "max_event_bytes", "max_line_bytes")

    def __init__(self, *, max_line_bytes: int = DEFAULT_MAX_SSE_BYTES,
                 max_event_bytes: int = DEFAULT_MAX_SSE_BYTES) -> None:
        self._buf = bytearray()
        self._skip_lf = False  # the previous chunk ended in CR: a leading LF belongs to it
        self._data: list[str] = []
        self._data_bytes = 0
        self._event: str | None = None
        self._last_id: str | None = None
        self._retry: int | None = None
        self.events = 0
        self.max_line_bytes = max_line_bytes
        self.max_event_bytes = max_event_bytes

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
        events: list[ServerSentEvent] = []
        buf = self._buf
        newline = chunk.find(b"\n")
        if newline < 0:  # no line end in the new bytes: only the pending line grows
            buf += chunk
            self._check_line(len(buf))
            return events
        if buf:  # the pending line ends inside this chunk
            buf += chunk[:newline]
            self._check_line(len(buf))
            line = bytes(buf)
            buf.clear()
            self._take(line, events)
            chunk = chunk[newline + 1:]
        lines = chunk.split(b"\n")
        tail = lines.pop()  # after the last line end: the start of the next line (often empty)
        limit = self.max_line_bytes
        data = self._data
        for raw in lines:
            if len(raw) > limit:
                self._check_line(len(raw))
            if raw[:5] == b"data:":  # the common line, inlined: the value alone is decoded
                self._data_bytes += len(raw) + 1
                if self._data_bytes > self.max_event_bytes:
                    self._event_too_large()
                data.append((raw[6:] if raw[5:6] == b" " else raw[5:]).decode("utf-8", "replace"))
            elif raw:
                self._line(raw)
                data = self._data
            elif data:
                events.append(ServerSentEvent("\n".join(data), self._event, self._last_id, self._retry))
                data = self._data = []
                self._data_bytes = 0
                self._event = None
                self.events += 1
            else:
                self._event = None
        if tail:
            buf += tail
            self._check_line(len(buf))
        return events

    def _take(self, raw: bytes, events: list[ServerSentEvent]) -> None:
        event = self._line(raw)
        if event is not None:
            events.append(event)

    def _check_line(self, size: int) -> None:
        if size > self.max_line_bytes:
            self._buf = bytearray()
            raise ResponseTooLargeError(
                f"A server-sent event line is longer than {self.max_line_bytes} bytes (the max_sse_event_bytes "
                "limit); the stream was closed. Raise max_sse_event_bytes if this server really sends lines "
                "that long.", limit=self.max_line_bytes)

    def _event_too_large(self) -> None:
        self._data = []
        self._data_bytes = 0
        raise ResponseTooLargeError(
            f"A server-sent event is larger than {self.max_event_bytes} bytes (the max_sse_event_bytes "
            "limit); the stream was closed. Raise max_sse_event_bytes if this server really sends "
            "events that big.", limit=self.max_event_bytes)

    def flush(self) -> list[ServerSentEvent]:
        """End of stream. As the standard says, an event not closed by a blank line is discarded (a
        stream cut mid-event must not yield half a JSON document); the decoder is reset."""
        self._buf = bytearray()
        self._data = []
        self._data_bytes = 0
        self._event = None
        return []

    def _line(self, raw: bytes) -> ServerSentEvent | None:
        if not raw:
            if not self._data:
                self._event = None
                return None
            event = ServerSentEvent("\n".join(self._data), self._event, self._last_id, self._retry)
            self._data = []
            self._data_bytes = 0
            self._event = None
            self.events += 1
            return event
        if raw[:1] == b":":
            return None
        line = raw.decode("utf-8", "replace")
        name, sep, value = line.partition(":")
        if sep and value[:1] == " ":
            value = value[1:]
        if name == "data":
            self._data_bytes += len(raw) + 1
            if self._data_bytes > self.max_event_bytes:
                self._event_too_large()
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self._last_id = value
        elif name == "retry" and value.isdigit():
            self._retry = int(value)
        return None
