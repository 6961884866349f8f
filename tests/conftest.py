"""Fixtures shared by every test package."""

from __future__ import annotations

import gc
import itertools
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

DEFAULT_WORKERS = min((os.cpu_count() or 1) + 1, 8)
"""Workers for the README's `pytest` (the whole default suite): one more than the cores (at most 8). Much of the
suite waits on servers, deadlines and child processes, so a third worker on a 2-core machine fills the idle
time: 197 and 226 s against 247 and 261 s with two, 225 s with four (3,406 tests, one quiet machine,
2026-12-07). Only with
pytest-xdist installed (in [dev]), only when no path, -n or -p no:xdist is given: `pytest tests/x.py` and
`pytest -n 0` run in one process."""


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    if (config.args_source is pytest.Config.ArgsSource.TESTPATHS and config.pluginmanager.hasplugin("xdist")
            and getattr(config.option, "numprocesses", 0) is None and not hasattr(config, "workerinput")):
        config.option.numprocesses = DEFAULT_WORKERS  # read by xdist's own pytest_cmdline_main, which runs next


_PY310_SSL_WRAPPER = "ignore:unclosed transport <asyncio.sslproto._SSLProtocolTransport:ResourceWarning"
"""Python 3.10's asyncio marks a TLS wrapper transport closed when its connection is lost during the
handshake, but not after it (3.11's rewritten sslproto does both); aiohttp drops the transport of a connection
the server ended without closing the wrapper, so 3.10 reports the wrapper of an already-closed socket when it is
collected. tests/network/test_tls.py checks that the socket itself is closed; only this one message, only on
3.10, is ignored."""


def pytest_configure(config: pytest.Config) -> None:
    if sys.version_info < (3, 11):
        config.addinivalue_line("filterwarnings", _PY310_SSL_WRAPPER)
    """Ctrl-C tests press it with ``_thread.interrupt_main()``, which does nothing while SIGINT is ignored, as
    it is for a job started in the background (``pytest &``, nohup): they would wait forever. Restore Python's
    handler so they run the same in the foreground and the background."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(params=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> str:
    """Run a test once with the sync Client and once with the AsyncClient."""
    return str(request.param)


@pytest.fixture(autouse=True)
def _respx_tests_use_httpx(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """respx mocks httpx only: in modules that use it, AsyncClient defaults to ``http_backend="httpx"``
    (the default transport is aiohttp; tests against FakeServer cover it)."""
    module = getattr(request, "module", None)
    if module is None or "respx" not in vars(module):
        return
    from holysheep import AsyncClient

    monkeypatch.setattr(AsyncClient, "_http_backends", ("httpx", "aiohttp"))  # the first is the default


_TEST_NUMBER = itertools.count()


@pytest.fixture(scope="session")
def _limits_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("limits")


@pytest.fixture(autouse=True)
def _own_rate_limit_state(_limits_root: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test gets its own rate-limit folder and forgets the buckets of this process afterwards.

    Buckets are shared per (base URL, key) through files for two minutes. A test server that gets a port an
    earlier test used (in any worker, or an earlier run) would otherwise start from that test's bucket. Tests
    that need another folder set ``HOLYSHEEP_LIMITS_DIR`` themselves; the folder is made only when used."""
    monkeypatch.setenv("HOLYSHEEP_LIMITS_DIR", str(_limits_root / f"t{next(_TEST_NUMBER)}"))
    yield
    key_limits = sys.modules.get("holysheep._engine.key_limits")
    if key_limits is not None:
        key_limits.forget_limits()


def _pytest_asyncio_orphans_loops() -> bool:
    """pytest-asyncio before 1.2 calls ``asyncio.get_event_loop()`` around each async test: with no loop set
    (``asyncio.run`` in a sync test leaves none) that creates one, and nobody closes it; the loop's socket pair
    is then reported as unclosed in whichever later test the garbage collector runs. The floors leg of
    ``.ci/run`` gets pytest-asyncio 1.1 (1.2 needs typing-extensions 4.12, above the 4.7.1 floor)."""
    from importlib.metadata import version

    major, minor = (int(part) for part in version("pytest-asyncio").split(".")[:2])
    return (major, minor) < (1, 2)


if _pytest_asyncio_orphans_loops():
    import asyncio

    _KEEPER = asyncio.new_event_loop()

    @pytest.fixture(autouse=True)
    def _one_kept_event_loop() -> Iterator[None]:
        """Keep one loop set in the main thread, so old pytest-asyncio finds it instead of making one."""
        asyncio.set_event_loop(_KEEPER)
        yield

    def pytest_unconfigure(config: pytest.Config) -> None:
        _KEEPER.close()


if os.environ.get("HOLYSHEEP_GC_EACH_TEST"):

    @pytest.fixture(autouse=True)
    def _collect_after_each_test() -> Iterator[None]:
        """``HOLYSHEEP_GC_EACH_TEST=1``: collect garbage after every test, so an object left to the garbage
        collector (a socket, a connection) is reported in the test that left it, not in a later one."""
        yield
        gc.collect()
