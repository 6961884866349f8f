"""FakeServer(rpm_limit=...): a token-bucket request limit with 429 + retry-after-ms and x-ratelimit-* headers."""

from __future__ import annotations

import httpx

from holysheep.testing import FakeServer


def test_server_answers_429_beyond_the_limit() -> None:
    with FakeServer(rpm_limit=180) as server:  # 3 per second, a one-second burst of 3
        headers = {"authorization": f"Bearer {server.api_key}"}
        body = {"model": "deepseek-v3.2", "messages": [{"role": "user", "content": "hi"}]}
        with httpx.Client() as http:
            statuses = [http.post(f"{server.url}/chat/completions", json=body, headers=headers) for _ in range(5)]
            models = http.get(f"{server.url}/models", headers=headers)
        recorded = [r.status for r in server.requests if r.path.endswith("/chat/completions")]
    assert [r.status_code for r in statuses] == [200, 200, 200, 429, 429]
    assert recorded == [200, 200, 200, 429, 429]
    assert statuses[0].headers["x-ratelimit-limit-requests"] == "180"
    limited = statuses[3]
    assert limited.json()["error"]["code"] == "rate_limit_exceeded"
    assert 0 < int(limited.headers["retry-after-ms"]) <= 1000
    assert limited.headers["x-ratelimit-remaining-requests"] == "0"
    assert models.status_code == 200 and "x-ratelimit-limit-requests" not in models.headers  # chat only
