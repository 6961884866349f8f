"""``serve()``: run a FakeServer in the foreground, the ``holysheep mock-server`` command."""

from __future__ import annotations

import signal
import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._replies import ReplySpec

__all__ = ["serve"]


def serve(
    host: str = "127.0.0.1",
    port: int = 8765,
    latency_ms: float = 0.0,
    fault_rate: float = 0.0,
    api_key: str | None = None,
    *,
    stream_chunk_delay_ms: float = 0.0,
    seed: int | None = None,
    strict_models: bool = False,
    script: str | None = None,
    structured: bool = False,
) -> None:
    """Run a FakeServer in the foreground (``holysheep mock-server``) until Ctrl-C or SIGTERM.

    Prints one line with the base URL and the API key to use; keeps the last 1,000 requests in memory.
    With ``strict_models`` an unknown model gets a 404 that lists the served ones. ``script``: a reply
    script file (`Script.load`); ``structured``: answer tools with calls and ``response_format`` with
    schema-valid JSON (`auto_reply`), also for what the script does not answer.
    """
    from ._script import Script, auto_reply
    from ._server import FakeServer  # lazy: the server loads when serve() runs

    reply: ReplySpec = auto_reply() if structured else "echo"
    if script is not None:
        reply = Script.load(script, fallback=reply)
    server = FakeServer(
        host=host, port=port, api_key=api_key, latency=latency_ms / 1000, fault_rate=fault_rate, seed=seed,
        reply=reply,
        stream_chunk_delay=stream_chunk_delay_ms / 1000, max_recorded=1000, strict_models=strict_models,
    )  # fmt: skip

    def on_sigterm(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, on_sigterm) if in_main else None
    try:
        server.start()
        print(f"holysheep mock server at {server.url} api key {server.api_key} (Ctrl-C to stop)", flush=True)
        if script is not None or structured:
            print(f"replies: {'script ' + script if script else ''}{' + ' if script and structured else ''}"
                  f"{'structured (tool calls, schema-valid JSON)' if structured else ''}", flush=True)
        if strict_models:
            print(f"serving only: {', '.join(server.models)}", flush=True)
        print(f"point the SDK (and the README quickstart) at it:\n  export HOLYSHEEP_BASE_URL={server.url}\n"
              f"  export HOLYSHEEP_API_KEY={server.api_key}", flush=True)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        if in_main:
            signal.signal(signal.SIGTERM, previous)
