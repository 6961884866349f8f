"""The batch layer's progress display is the only one: ``holysheep bench`` names its runs through ``label``."""

from __future__ import annotations

import io

from holysheep._engine.progress import make_progress
from holysheep.batch import BatchStats, PlainProgress, RichProgress
from holysheep.testing import FakeServer

from .conftest import async_client, sync_client


def test_plain_line_starts_with_the_label() -> None:
    stats = BatchStats(total=4, done=4, failed=1, requests=4, prompt_tokens=10, completion_tokens=2, started_at=0.0)
    stats.finished_at = 2.0
    stream = io.StringIO()
    PlainProgress(stream, label="bench gpt-4.1").close(stats)
    assert stream.getvalue() == "bench gpt-4.1: 4/4 done, 1 failed, 2.0 req/s, ETA 00:00, 12 tokens\n"


def test_make_progress_passes_the_label_on() -> None:
    plain = make_progress("plain", label="bench m")
    assert isinstance(plain, PlainProgress) and plain.label == "bench m"
    assert isinstance(make_progress("plain"), PlainProgress) and make_progress("plain").label == "batch"  # type: ignore[union-attr]


def test_rich_label_is_shown_as_text_not_markup() -> None:
    rich = make_progress("rich", label="bench m[red]")
    assert isinstance(rich, RichProgress)
    first = rich._progress.columns[0]
    assert first.text_format == "[bold]bench m\\[red]"  # type: ignore[union-attr]


async def test_the_transport_parametrization_takes_effect(transport: str, server: FakeServer) -> None:
    """The conftest switches the AsyncClient default (and the sync batch's clone) to httpx for the httpx run."""
    from holysheep import AsyncClient
    from holysheep._transports.aiohttp_backend import AiohttpBackend
    from holysheep._transports.backends import AsyncHttpxBackend

    expected = AiohttpBackend if transport == "default" else AsyncHttpxBackend
    async with async_client(server) as client:
        assert isinstance(client._backend, expected)
    with sync_client(server) as sync:
        async with AsyncClient.from_config(sync.config) as clone:
            assert isinstance(clone._backend, expected)
