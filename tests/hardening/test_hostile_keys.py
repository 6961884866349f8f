"""Keys with whitespace, control characters or non-ASCII (issue 31, item 2): refused before any I/O with an
`InvalidAPIKeyError` that says what is wrong and never shows the key, on every transport."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest

from holysheep import AsyncClient, Client, InvalidAPIKeyError
from holysheep.batch import run_jsonl

from .conftest import KEY, MESSAGES, make_client
from .hostile import HostileServer, Req, fixed

SECRET = "sk-SUPERSECRET1234"
BAD_KEYS = {
    "trailing newline": (SECRET + "\n", "ends with a newline"),
    "trailing crlf": (SECRET + "\r\n", "ends with a newline"),
    "tab": (SECRET[:5] + "\t" + SECRET[5:], "whitespace"),
    "inner space": (SECRET[:5] + " " + SECRET[5:], "whitespace"),
    "nul": (SECRET + "\x00", "control character"),
    "non-ascii": (SECRET + "é", "non-ASCII"),
    "leading space": (" " + SECRET, "starts with whitespace"),
}


async def _ok(req: Req, w: asyncio.StreamWriter) -> None:
    w.write(fixed(200, b"{}"))


def _check(err: InvalidAPIKeyError, raw: str, what: str) -> None:
    text = f"{err} {err!r} {err.args}"
    assert what in str(err)
    assert SECRET not in text and SECRET[3:] not in text and raw not in text
    assert "strip" in str(err) or "non-ASCII" in what


@pytest.mark.parametrize("name", list(BAD_KEYS))
def test_bad_key_is_refused_before_any_io(kind: str, name: str, caplog: pytest.LogCaptureFixture) -> None:
    raw, what = BAD_KEYS[name]
    caplog.set_level(logging.DEBUG, logger="holysheep")
    with HostileServer(_ok) as srv:
        with pytest.raises(InvalidAPIKeyError) as info:
            make_client(kind, srv.url, api_key=raw)
        assert srv.requests == []
    _check(info.value, raw, what)
    assert SECRET not in caplog.text


@pytest.mark.parametrize("name", ["trailing newline", "tab", "non-ascii"])  # (no NUL: the OS refuses it)
def test_bad_key_from_the_environment_is_refused(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    raw, what = BAD_KEYS[name]
    monkeypatch.setenv("HOLYSHEEP_API_KEY", raw)
    with pytest.raises(InvalidAPIKeyError) as info:
        Client(base_url="http://127.0.0.1:9/v1")
    _check(info.value, raw, what)


def test_hs_key_with_a_trailing_newline_says_so_and_is_not_stripped() -> None:
    with pytest.raises(InvalidAPIKeyError) as info:
        Client(api_key=KEY + "\n")  # the HolySheep host: the shape check
    assert "ends with a newline" in str(info.value) and "is not a HolySheep key" not in str(info.value)
    assert KEY not in str(info.value)


@pytest.mark.parametrize("name", ["trailing newline", "non-ascii"])
def test_bad_key_with_a_custom_http_client(name: str) -> None:
    import httpx

    raw, what = BAD_KEYS[name]
    with pytest.raises(InvalidAPIKeyError) as info, httpx.Client() as http:
        Client(api_key=raw, base_url="http://127.0.0.1:9/v1", http_client=http)
    _check(info.value, raw, what)


@pytest.mark.parametrize("name", ["trailing newline", "tab"])
def test_bad_key_in_an_authorization_header_is_refused(name: str) -> None:
    raw, _what = BAD_KEYS[name]
    with pytest.raises(InvalidAPIKeyError) as info:
        Client(api_key=None, base_url="http://127.0.0.1:9/v1", default_headers={"Authorization": f"Bearer {raw}"})
    assert SECRET not in str(info.value)

    async def go() -> None:
        async with AsyncClient(api_key=SECRET, base_url="http://127.0.0.1:9/v1") as client:
            await client.chat.completions.create(model="m", messages=MESSAGES,
                                                 extra_headers={"x-api-key": raw})

    with pytest.raises(InvalidAPIKeyError) as info:
        asyncio.run(go())
    assert SECRET not in str(info.value)


def test_jsonl_with_a_bad_key_fails_at_once_without_writing_the_key(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"custom_id": "a", "messages": MESSAGES}) + "\n")
    with HostileServer(_ok) as srv:
        with pytest.raises(InvalidAPIKeyError), Client(api_key=SECRET + "\n", base_url=srv.url) as client:
            run_jsonl(client, src, tmp_path / "out.jsonl", model="m", check_quota=False)
        assert srv.requests == []
    assert not (tmp_path / "out.jsonl").exists() or SECRET not in (tmp_path / "out.jsonl").read_text()
