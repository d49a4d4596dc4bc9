"""The built-in executor: a run's trials on a bounded thread pool in the run owner's process.

Registered through the ``sevro`` entry points like any third-party executor, so ``--executor``
picks it by the same lookup; it is the default (``--executor local``).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from sevro_core.api import (
    Executor,
    ExecutorOptions,
    HostSetting,
    TrialPool,
    TrialTask,
    hookimpl,
)


class _ThreadPool:
    """``options.workers`` threads; each runs a submitted task's trial where the owner is."""

    def __init__(self, workers: int) -> None:
        self._threads = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="sevro-trial")

    def submit(self, task: TrialTask) -> Future[Any]:
        return self._threads.submit(task.run)

    def shutdown(self) -> None:
        self._threads.shutdown(wait=True)


class LocalExecutor:
    """Trials run on this machine, at most ``--jobs`` at once (each in its own sandbox)."""

    id = "sevro.executor.local"
    version = "1.0.0"
    capabilities: frozenset[str] = frozenset()
    requires: frozenset[str] = frozenset()
    settings: tuple[HostSetting, ...] = ()

    def start(self, options: ExecutorOptions) -> TrialPool:
        return _ThreadPool(max(1, options.workers))


@hookimpl
def sevro_register_executors(register: Callable[[Executor], None]) -> None:
    register(LocalExecutor())
