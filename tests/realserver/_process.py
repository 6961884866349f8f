"""One way to run a real server for a test: start its process on 127.0.0.1, wait until a URL answers 200, and
always stop it (terminate, then kill)."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def server_process(name: str, command: Sequence[str], *, ready_url: str, log: Path, env: Mapping[str, str],
                   timeout_s: float, cwd: Path | None = None) -> Iterator[None]:
    """Run ``command`` (its output in ``log``) until the block ends; the block starts once ``ready_url`` answers
    200. A process that exits or does not answer within ``timeout_s`` fails the test with the log's tail."""
    with log.open("wb") as out:
        proc = subprocess.Popen(list(command), stdout=out, stderr=subprocess.STDOUT, env=dict(env), cwd=cwd)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if proc.poll() is not None:
                pytest.fail(f"{name} exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
            try:
                if httpx.get(ready_url, timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"{name} did not answer within {timeout_s:g} s:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
