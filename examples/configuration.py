"""Configuration: timeouts, retries, headers, with_options, a custom httpx client, and self-hosted servers.

With ``HOLYSHEEP_BASE_URL`` set (and ``HOLYSHEEP_API_KEY`` where that server needs one) this talks to that
server; otherwise it starts an in-process FakeServer and runs offline. ``VLLM_BASE_URL`` names your own
OpenAI-compatible server (vLLM, llama.cpp, ...); unset, a keyless in-process FakeServer plays it.

    python examples/configuration.py
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator


@contextlib.contextmanager
def servers() -> Iterator[None]:
    """FakeServers for what the environment does not name: the API (offline) and the self-hosted server (a
    keyless one, unless ``VLLM_BASE_URL`` is set), announced in the environment."""
    from holysheep.testing import FakeServer

    with FakeServer() as api, FakeServer(require_auth=False) as vllm:
        env = {} if os.environ.get("HOLYSHEEP_BASE_URL") else {"HOLYSHEEP_BASE_URL": api.url,
                                                                 "HOLYSHEEP_API_KEY": api.api_key or ""}
        if not os.environ.get("VLLM_BASE_URL"):
            env["VLLM_BASE_URL"] = vllm.url
        os.environ.update(env)
        try:
            yield
        finally:
            for name in env:
                del os.environ[name]


def main() -> None:
    with servers():
        # --8<-- [start:client]
        import httpx

        from holysheep import Client

        client = Client(
            # api_key=...                        default: $HOLYSHEEP_API_KEY
            # base_url=...                       default: $HOLYSHEEP_BASE_URL, else https://api.holysheep.ai/v1
            timeout=httpx.Timeout(60.0, connect=5.0),   # per attempt; a number means seconds
            max_retries=3,                       # retries after the first attempt (0 disables)
            initial_retry_delay=0.5, max_retry_delay=8.0, max_retry_after=60.0,
            stream_idle_timeout=30.0,            # end a stream that sends nothing for 30 s
            default_headers={"x-team": "search"},
        )
        print(client)  # the key is masked: hs_…abcd
        # --8<-- [end:client]

        # --8<-- [start:options]
        from holysheep.types import ChatCompletionMessageParam

        hi: list[ChatCompletionMessageParam] = [{"role": "user", "content": "Hi"}]
        fast = client.with_options(timeout=5, max_retries=0)  # a copy that shares the connection pool
        resp = fast.chat.completions.create(model="deepseek-v3.2", messages=hi)
        resp = client.chat.completions.create(
            model="deepseek-v3.2", messages=hi,
            timeout=10, max_retries=1,                      # per call
            extra_headers={"x-trace-id": "abc123"},         # merged into this request's headers
            extra_body={"top_k": 40},                       # merged into the JSON body
        )
        print(resp.choices[0].message.content, resp.elapsed_s > 0)
        # --8<-- [end:options]

        # --8<-- [start:http_client]
        transport = httpx.HTTPTransport(retries=0, local_address="0.0.0.0")
        with httpx.Client(transport=transport, timeout=30) as http:   # proxies, certificates, event hooks, ...
            own = Client(http_client=http)
            print([m.id for m in own.models.list()][:3])
            own.close()  # does not close a client you passed in; the `with` above does
        # --8<-- [end:http_client]
        client.close()

        # --8<-- [start:self_hosted]
        import os

        from holysheep import Client, InsecureTransportError

        # your vLLM / llama.cpp server, e.g. http://127.0.0.1:8000/v1; api_key=None sends no Authorization header
        local = Client(base_url=os.environ.get("VLLM_BASE_URL", "http://127.0.0.1:8000/v1"), api_key=None)
        print(local.chat.completions.create(model="Qwen/Qwen2.5-7B-Instruct",
                                            messages=[{"role": "user", "content": "Hi"}]).model)
        local.close()
        try:  # a key over plain http to a host that is not loopback is refused before any I/O
            Client(base_url="http://10.0.0.5:8000/v1", api_key="token-abc123")
        except InsecureTransportError as e:
            print("refused:", e)
        Client(base_url="http://10.0.0.5:8000/v1", api_key="token-abc123", allow_insecure_http=True).close()
        # --8<-- [end:self_hosted]


if __name__ == "__main__":
    main()
