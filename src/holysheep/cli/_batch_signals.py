"""How `holysheep batch` stops and speaks while it runs: SIGTERM and SIGHUP stop it like Ctrl-C (resumable), and
the batch's log warnings print as the CLI's warning lines."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

__all__ = ["StopSignal", "cli_warnings", "stop_signals"]


class StopSignal(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised in the main thread so the batch stops as on Ctrl-C (flush, unlock, resume)."""

    def __init__(self, signum: int) -> None:
        import signal

        super().__init__(signum)
        self.signal_name = signal.Signals(signum).name
        self.exit_status = 128 + signum


@contextlib.contextmanager
def cli_warnings() -> Iterator[None]:
    """While the run lasts, the batch's log warnings (a skipped quota check) print as the CLI's warning lines,
    in the CLI's words: ``Pass check_quota=False`` reads ``--no-quota-check``."""
    import logging

    from holysheep.cli._output import warning

    class _CliWarnings(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            warning(record.getMessage())

    logger, handler = logging.getLogger("holysheep.batch"), _CliWarnings(logging.WARNING)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)


@contextlib.contextmanager
def stop_signals() -> Iterator[None]:
    """SIGTERM (docker stop, `timeout`, Kubernetes) and SIGHUP (a closed terminal) stop the run like Ctrl-C;
    a second one while it winds down ends the process at once (the signal's default action: whatever the wind
    down waits for, SIGTERM always ends the run; the output stays resumable, as after a kill). Exit status
    128 + the signal: 143 and 129."""
    import signal
    import threading

    names = [n for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n)]
    if threading.current_thread() is not threading.main_thread() or not names:
        yield
        return
    sigs = [getattr(signal, n) for n in names]

    def handler(signum: int, frame: object) -> None:
        for sig in sigs:
            signal.signal(sig, signal.SIG_DFL)
        raise StopSignal(signum)

    previous = {sig: signal.signal(sig, handler) for sig in sigs}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
