from __future__ import annotations

from collections.abc import Iterator

import pytest

from holysheep.pricing import PRICE_FILE_ENV, reset_prices


@pytest.fixture(autouse=True)
def _clean_catalog(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(PRICE_FILE_ENV, raising=False)
    reset_prices()
    yield
    monkeypatch.delenv(PRICE_FILE_ENV, raising=False)
    reset_prices()
