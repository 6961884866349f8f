from __future__ import annotations

from collections.abc import Iterator

import pytest

from holysheep.hardware import reset_gpus


@pytest.fixture(autouse=True)
def _clean_gpu_table() -> Iterator[None]:
    reset_gpus()
    yield
    reset_gpus()
