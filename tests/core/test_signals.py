"""The run's signal bridge: handlers only write to a pipe; a watcher thread cancels and logs."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable

from sevro_core.models import CancelToken
from sevro_core.run.signals import cancel_on_signals


def wait_until(predicate: Callable[[], bool], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return False


def test_first_signal_cancels_with_its_name_and_is_reported_once() -> None:
    cancel = CancelToken()
    reported: list[str] = []
    with cancel_on_signals(cancel, reported.append):
        os.kill(os.getpid(), signal.SIGINT)
        assert cancel.wait(10)
        os.kill(os.getpid(), signal.SIGTERM)
        assert wait_until(lambda: reported == ["SIGINT"])
    assert cancel.reason == "SIGINT"
    assert reported == ["SIGINT"]


def test_previous_handlers_come_back() -> None:
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    with cancel_on_signals(CancelToken()):
        assert signal.getsignal(signal.SIGINT) is not before[signal.SIGINT]
    assert {s: signal.getsignal(s) for s in before} == before


def test_a_signal_while_the_main_thread_holds_the_log_lock_does_not_deadlock() -> None:
    """The regression: the handler used to log, taking a lock the interrupted thread held."""
    log_lock = threading.Lock()  # structlog's print logger holds one like it per write
    logged: list[str] = []

    def log(name: str) -> None:
        with log_lock:
            logged.append(name)

    cancel = CancelToken()
    with cancel_on_signals(cancel, log):
        with log_lock:  # the main thread is "writing a log line" when the signal lands
            os.kill(os.getpid(), signal.SIGTERM)
            assert cancel.wait(10), "the run was not cancelled"
            assert logged == []
        assert wait_until(lambda: logged == ["SIGTERM"])


def test_outside_the_main_thread_nothing_is_installed() -> None:
    seen: list[object] = []

    def worker() -> None:
        with cancel_on_signals(CancelToken()):
            seen.append(signal.getsignal(signal.SIGTERM))

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert seen == [signal.getsignal(signal.SIGTERM)]


def test_a_failing_report_does_not_stop_the_watcher() -> None:
    def broken(_name: str) -> None:
        raise OSError("stderr is gone")

    cancel = CancelToken()
    with cancel_on_signals(cancel, broken):
        os.kill(os.getpid(), signal.SIGINT)
        assert cancel.wait(10)
    assert cancel.reason == "SIGINT"
