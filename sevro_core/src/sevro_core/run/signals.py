"""SIGINT and SIGTERM during a run: the handler only writes a byte; a thread does the rest.

A Python signal handler runs on the main thread between two bytecodes, possibly while that
thread holds a lock: structlog's print logger, an ``Event``'s condition, a file object's buffer.
A handler that logs or sets an ``Event`` can therefore deadlock the runner for good. So the
handler does one async-signal-safe thing, writing the signal number to a non-blocking self-pipe,
and a watcher thread reads it, cancels the run and logs, like any other thread.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from types import FrameType

from sevro_core.models import CancelToken

HANDLED = (signal.SIGINT, signal.SIGTERM)
_STOP = b"\0"


@contextmanager
def cancel_on_signals(
    cancel: CancelToken, on_first: Callable[[str], None] = lambda _: None
) -> Iterator[None]:
    """While inside, SIGINT/SIGTERM cancel ``cancel`` (reason: the signal's name).

    ``on_first`` runs on the watcher thread for the first signal only (to log it). Outside the
    main thread (where handlers cannot be installed) this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    watcher = threading.Thread(
        target=_watch, args=(read_end, cancel, on_first), name="sevro-signals", daemon=True
    )
    watcher.start()

    def handler(signum: int, _frame: FrameType | None) -> None:
        with suppress(OSError):  # a full pipe: the signals already in it cancel the run
            os.write(write_end, bytes((signum,)))

    previous = {s: signal.signal(s, handler) for s in HANDLED}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
        os.set_blocking(write_end, True)
        os.write(write_end, _STOP)
        watcher.join()
        os.close(write_end)
        os.close(read_end)


def _watch(read_end: int, cancel: CancelToken, on_first: Callable[[str], None]) -> None:
    while True:
        data = os.read(read_end, 64)
        for signum in data:
            if signum == _STOP[0]:
                return
            name = signal.Signals(signum).name
            first = not cancel.cancelled
            cancel.cancel(name)
            if first:
                with suppress(Exception):  # a failed log line must not stop the watcher
                    on_first(name)
        if not data:
            return
