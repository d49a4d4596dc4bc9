"""A remote executor for the tests, without Ray: each trial is described, run by
``run_described_trial`` in a separate process started with multiprocessing's "spawn" context
(nothing of the owner's memory is inherited), and its shipment persisted by the owner.

Loaded with ``--plugin``; it imports only ``sevro_core.api``, like the Ray executor. Every
description and shipment is also pickled into ``--acme-spawn-dump`` for the tests to examine;
``--acme-spawn-lose UNIT#N`` makes that trial's worker "die" before it runs (``lost_trial``).
"""

from __future__ import annotations

import multiprocessing
import pickle
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any

from sevro_core.api import (
    Executor,
    ExecutorOptions,
    HostSetting,
    TrialJob,
    TrialPool,
    TrialShipment,
    describe_trial,
    hookimpl,
    lost_trial,
    persist_shipment,
    run_described_trial,
)


class Pool:
    def __init__(self, options: ExecutorOptions) -> None:
        self.dump = Path(options.settings["acme.spawnDump"])
        self.lose = options.settings.get("acme.spawnLose")
        context = multiprocessing.get_context("spawn")
        self.processes = ProcessPoolExecutor(max_workers=options.workers, mp_context=context)

    def submit(self, task: TrialJob) -> Future[Any]:
        out: Future[Any] = Future()
        name = f"{task.unit}#{task.trial}"
        if name == self.lose:
            out.set_result(lost_trial(task, "node test-node-7 died (SIGKILL)"))
            return out
        description = describe_trial(task)
        stem = f"{task.unit}-{task.trial}-attempt-{description.attempt}"
        (self.dump / f"{stem}.description.pickle").write_bytes(pickle.dumps(description))
        remote = self.processes.submit(run_described_trial, description)

        def arrived(done: Future[TrialShipment]) -> None:
            try:
                shipment = done.result()
                (self.dump / f"{stem}.shipment.pickle").write_bytes(pickle.dumps(shipment))
                out.set_result(persist_shipment(task.store, shipment, (task.unit, task.trial)))
            except BaseException as exc:
                out.set_exception(exc)

        remote.add_done_callback(arrived)
        return out

    def shutdown(self) -> None:
        self.processes.shutdown(wait=True)


class Spawn:
    id = "acme.executor.spawn"
    version = "0.1.0"
    capabilities: frozenset[str] = frozenset()
    requires: frozenset[str] = frozenset()
    remote = True  # its trials run from descriptions: the owner refuses what cannot be described
    settings = (
        HostSetting("acme.spawnDump", "--acme-spawn-dump", "Where to pickle.", "path"),
        HostSetting("acme.spawnLose", "--acme-spawn-lose", "UNIT#N whose worker dies.", "string"),
    )

    def start(self, options: ExecutorOptions) -> TrialPool:
        return Pool(options)


@hookimpl
def sevro_register_executors(register: Callable[[Executor], None]) -> None:
    register(Spawn())
