"""Fail over to your own GPUs: a self-hosted OpenAI-compatible fallback behind a circuit breaker.

Offline, two in-process FakeServers play the parts: the "primary" (the HolySheep API) fails with 503s for a
while, the "gpu-box" (your vLLM server) serves meanwhile, then the primary recovers and traffic returns to it.
With ``HOLYSHEEP_BASE_URL`` set, that server is the primary and a FakeServer plays the GPU box.

    python examples/self_hosted_fallback.py
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator

from holysheep.testing import FakeServer, Fault


@contextlib.contextmanager
def primary() -> Iterator[tuple[str | None, str | None, FakeServer | None]]:
    """(base_url, api_key, server): the environment's server, or a FakeServer whose first requests fail."""
    if os.environ.get("HOLYSHEEP_BASE_URL"):
        yield None, None, None
        return
    with FakeServer(reply=lambda body: "answer from the primary", faults=[Fault.status(503)] * 4) as server:
        yield server.url, server.api_key, server


def main() -> None:
    with primary() as (base_url, api_key, server), \
            FakeServer(reply=lambda body: f"answer from the GPU box ({body['model']})", require_auth=False) as box:
        # --8<-- [start:main]
        from holysheep import CircuitBreaker, Client, Fallback
        from holysheep.types import ChatCompletionMessageParam

        client = Client(
            base_url=base_url,
            api_key=api_key,
            max_retries=1,                          # the primary's own retries come first
            fallbacks=[Fallback(base_url=box.url,   # e.g. "http://gpu-box:8000/v1" (vLLM, llama.cpp, Ollama)
                                api_key=None,       # that server's own key, if it has one
                                models={"deepseek-v3.2": "Qwen/Qwen2.5-72B-Instruct"},
                                name="gpu-box")],
            circuit_breaker=CircuitBreaker(failure_threshold=2, cooldown_s=0.5),
            initial_retry_delay=0.01,
        )
        messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": "Hello"}]
        for i in range(4):
            resp = client.chat.completions.create(model="deepseek-v3.2", messages=messages)
            print(i, resp.served_by, "|", resp.choices[0].message.content, "| circuit:", client.stats()["circuit"])
        time.sleep(0.6)  # after the cool-down one probe goes to the primary; a success closes the circuit
        resp = client.chat.completions.create(model="deepseek-v3.2", messages=messages)
        print("after cool-down:", resp.served_by, "| circuit:", client.stats()["circuit"])
        print(client.stats())
        client.close()
        # --8<-- [end:main]
        if server is not None:
            assert resp.served_by == "primary"


if __name__ == "__main__":
    main()
