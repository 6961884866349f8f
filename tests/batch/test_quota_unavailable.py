"""Servers without ``/quota`` (issue 17 item 8): a typed QuotaUnavailableError, require_quota stops before
sending anything, and without it the batch warns once and runs."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from holysheep import NotFoundError, QuotaUnavailableError
from holysheep._engine import quota_check as _quota_check
from holysheep.testing import FakeServer

from .conftest import MODEL, async_client, chat_requests, sync_client


@pytest.fixture
def no_quota() -> FakeServer:
    _quota_check._warned_no_quota.clear()
    with FakeServer(quota_limit=None) as server:
        yield server


def test_retrieve_raises_quota_unavailable(no_quota: FakeServer) -> None:
    with sync_client(no_quota) as client, pytest.raises(QuotaUnavailableError) as info:
        client.quota.retrieve()
    assert isinstance(info.value, NotFoundError) and info.value.status_code == 404
    assert "This server has no quota endpoint (GET /quota answered 404)" in str(info.value)
    assert "model name" not in str(info.value)


async def test_async_retrieve_raises_quota_unavailable(no_quota: FakeServer) -> None:
    async with async_client(no_quota) as client:
        with pytest.raises(QuotaUnavailableError, match="no quota endpoint"):
            await client.quota.retrieve()


async def test_require_quota_stops_before_sending(no_quota: FakeServer) -> None:
    async with async_client(no_quota) as client:
        with pytest.raises(QuotaUnavailableError, match=r"require_quota=True: nothing was sent"):
            await client.chat.completions.batch(["x"] * 5, model=MODEL, require_quota=True)
    assert chat_requests(no_quota) == []
    assert [r.path for r in no_quota.requests] == ["/v1/quota"]


def test_sync_require_quota_stops_before_sending(no_quota: FakeServer) -> None:
    with sync_client(no_quota) as client, pytest.raises(QuotaUnavailableError, match="nothing was sent"):
        client.chat.completions.batch(["x"] * 5, model=MODEL, require_quota=True)
    assert chat_requests(no_quota) == []


async def test_without_require_quota_warns_once_and_runs(no_quota: FakeServer,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="holysheep.batch")
    async with async_client(no_quota) as client:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # one message, on one channel: no RuntimeWarning beside the log line
            first = await client.chat.completions.batch(["a", "b", "c"], model=MODEL)
            second = await client.chat.completions.batch(["d"], model=MODEL)
    assert [r.choices[0].message.content for r in first.responses] == ["a", "b", "c"]
    assert len(second.responses) == 1 and len(chat_requests(no_quota)) == 4
    warned = [r for r in caplog.records if "no quota endpoint" in r.getMessage()]
    assert len(warned) == 1 and warned[0].levelno == logging.WARNING
    assert warned[0].getMessage().endswith("runs without one. Pass check_quota=False to skip the quota check.")


def _jsonl(path: Path, n: int) -> Path:
    path.write_text("".join(json.dumps({"custom_id": f"r{i}", "messages": [{"role": "user", "content": "hi"}]})
                            + "\n" for i in range(n)))
    return path


@pytest.mark.integration
def test_cli_prints_the_quota_message_once_naming_its_flag(no_quota: FakeServer, tmp_path: Path) -> None:
    src, out = _jsonl(tmp_path / "in.jsonl", 3), tmp_path / "out.jsonl"
    base = [sys.executable, "-m", "holysheep", "batch", str(src), "--model", MODEL, "--base-url", no_quota.url,
            "--api-key", no_quota.api_key, "--no-progress"]
    done = subprocess.run([*base, "-o", str(out)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "quota check" in line]
    assert len(lines) == 1 and lines[0].endswith("Pass --no-quota-check to skip the quota check."), done.stderr
    assert "RuntimeWarning" not in done.stderr and "check_quota=False" not in done.stderr
    assert [r.path for r in no_quota.requests].count("/v1/quota") == 1

    quiet = subprocess.run([*base, "-o", str(tmp_path / "quiet.jsonl"), "--no-quota-check"], capture_output=True,
                           text=True, timeout=60)
    assert quiet.returncode == 0 and "quota check" not in quiet.stderr, quiet.stderr
    assert [r.path for r in no_quota.requests].count("/v1/quota") == 1  # the second run did not ask

    both = subprocess.run([*base, "-o", str(tmp_path / "both.jsonl"), "--no-quota-check", "--require-quota"],
                          capture_output=True, text=True, timeout=60)
    assert both.returncode == 2 and "--no-quota-check and --require-quota" in both.stderr
    assert not (tmp_path / "both.jsonl").exists()


@pytest.mark.integration
def test_cli_require_quota_exits_2_and_writes_nothing(no_quota: FakeServer, tmp_path: Path) -> None:
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps({"custom_id": f"r{i}", "messages": [{"role": "user", "content": "hi"}]})
                           + "\n" for i in range(3)))
    done = subprocess.run([sys.executable, "-m", "holysheep", "batch", str(src), "-o", str(out), "--model", MODEL,
                           "--require-quota", "--base-url", no_quota.url, "--api-key", no_quota.api_key,
                           "--no-progress"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "no quota endpoint" in done.stderr and "nothing was sent" in done.stderr
    assert chat_requests(no_quota) == []
    assert not out.exists() or out.read_text() == ""
