"""A tiny raw-socket HTTP/1.1 client for checking the server's bytes on the wire."""

from __future__ import annotations

import json
import socket
from typing import Any, BinaryIO


def connect(port: int, timeout: float = 5.0) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=timeout)


def request_bytes(method: str, path: str, key: str | None, body: Any = None, **headers: str) -> bytes:
    data = b"" if body is None else json.dumps(body).encode()
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1"]
    if key is not None:
        lines.append(f"Authorization: Bearer {key}")
    if body is not None:
        lines += ["Content-Type: application/json", f"Content-Length: {len(data)}"]
    lines += [f"{k.replace('_', '-')}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + data


def read_response(f: BinaryIO) -> tuple[int, dict[str, str], bytes, bool]:
    """(status, headers, body, complete) of one response; the body is de-chunked."""
    status_line = f.readline()
    if not status_line:
        raise ConnectionError("connection closed before a response")
    status = int(status_line.split()[1])
    headers: dict[str, str] = {}
    while (line := f.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.lower()] = value.strip()
    if "content-length" in headers:
        body = f.read(int(headers["content-length"]))
        return status, headers, body, len(body) == int(headers["content-length"])
    body = b""
    while True:
        size_line = f.readline()
        if not size_line:
            return status, headers, body, False
        size = int(size_line.strip(), 16)
        if size == 0:
            f.readline()
            return status, headers, body, True
        body += f.read(size)
        f.readline()
