"""Where a run's trials execute: the selected executor plugin, started for one run.

The scheduler stays the run owner: it admits trials in its fixed order, applies the stop rules
and records every result. This module only names a planned trial as a task an executor can run
and holds the executor's pool open around the admission loop.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from attrs import frozen

from sevro_core.models import CancelToken
from sevro_core.plugin.protocols import ExecutorOptions, TrialPool
from sevro_core.run.engine import execute_trial
from sevro_core.run.planning import PlannedCase, RunPlan
from sevro_core.run.records import TrialRecord
from sevro_core.store.evidence import EvidenceStore
from sevro_core.store.spendgate import SpendGate


@frozen
class TrialJob:
    """One admitted trial as the executor sees it (:class:`~sevro_core.api.TrialTask`)."""

    plan: RunPlan
    planned: PlannedCase
    trial: int
    cancel: CancelToken
    store: EvidenceStore
    spend: SpendGate | None = None
    """The run's spend gate (None without a ceiling): the candidate's call ceiling (reserved by
    the scheduler before submitting) and each judge call's reservation during the trial."""

    @property
    def unit(self) -> str:
        return self.planned.unit

    def run(self) -> TrialRecord:
        """The trial, end to end, in this process; its evidence persisted by the owner's store."""
        return execute_trial(
            self.plan, self.planned, self.trial, self.cancel, self.store, self.spend
        )


@contextmanager
def trial_pool(plan: RunPlan, workers: int, cancel: CancelToken) -> Iterator[TrialPool]:
    """The run's executor started with ``workers`` slots; shut down (every submitted trial
    ended) when the admission loop leaves, also on failure."""
    settings = plan.settings.executor.settings
    pool = plan.executor.start(ExecutorOptions(workers=workers, cancel=cancel, settings=settings))
    try:
        yield pool
    finally:
        pool.shutdown()
