"""Fail over to your own GPUs: a self-hosted OpenAI-compatible fallback behind a circuit breaker.

Offline, two in-process FakeServers play the parts: the "primary" (the HolySheep API) fails with 503s for a
while, the "gpu-box" (your vLLM server) serves meanwhile, then the primary recovers and traffic returns to it.
With ``HOLYSHEEP_BASE_URL`` set (``holysheep mock-server``, say), that server plays the GPU box and an
in-process FakeServer the primary that fails on cue. The section shown in the docs reads the GPU box's URL and
key from ``VLLM_BASE_URL`` and ``VLLM_API_KEY``.

    python examples/self_hosted_fallback.py
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from holysheep.testing import FakeServer, Fault


@contextlib.contextmanager
def servers() -> Iterator[FakeServer]:
    """A primary whose first requests fail and a "GPU box" (the server ``HOLYSHEEP_BASE_URL`` names, else a
    keyless FakeServer), announced in the environment; yields the primary."""
    given = {name: os.environ.get(name) for name in ("HOLYSHEEP_BASE_URL", "HOLYSHEEP_API_KEY", "VLLM_BASE_URL",
                                                     "VLLM_API_KEY")}
    with FakeServer(reply=lambda body: "answer from the primary", faults=[Fault.status(503)] * 4) as primary, \
            FakeServer(reply=lambda body: f"answer from the GPU box ({body['model']})", require_auth=False) as box:
        box_url, box_key = (given["HOLYSHEEP_BASE_URL"], given["HOLYSHEEP_API_KEY"] or "") \
            if given["HOLYSHEEP_BASE_URL"] else (box.url, "")
        os.environ.update({"HOLYSHEEP_BASE_URL": primary.url, "HOLYSHEEP_API_KEY": primary.api_key or "",
                           "VLLM_BASE_URL": box_url, "VLLM_API_KEY": box_key})
        try:
            yield primary
        finally:
            for name, value in given.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


def main() -> None:
    with servers() as primary:
        # --8<-- [start:main]
        import os
        import time

        from holysheep import CircuitBreaker, Client, Fallback
        from holysheep.types import ChatCompletionMessageParam

        client = Client(                            # the primary: $HOLYSHEEP_BASE_URL, $HOLYSHEEP_API_KEY
            max_retries=1,                          # the primary's own retries come first
            fallbacks=[Fallback(base_url=os.environ.get("VLLM_BASE_URL", "http://gpu-box:8000/v1"),  # your vLLM
                                api_key=os.environ.get("VLLM_API_KEY") or None,  # its own key, if it has one
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
        assert primary.requests and resp.served_by == "primary"


if __name__ == "__main__":
    main()
