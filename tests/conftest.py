"""Fixtures shared by every test package."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> str:
    """Run a test once with the sync Client and once with the AsyncClient."""
    return str(request.param)
