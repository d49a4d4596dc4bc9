"""Bounded parallel trials (``--jobs``) with deterministic admission stop.

The trials run on the run's executor (``--executor``, a plugin; ``local`` by default), which
decides only where each admitted trial runs: admission, stop rules and record order stay here.

The main thread admits work and waits; signal handlers run there and only set the cancel token.
Admission stops on cancellation, on a host execution failure and on a grading error; trials
already running drain and keep their evidence.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, wait

from attrs import frozen

from sevro_core.models import CancelToken
from sevro_core.run.executors import TrialJob, trial_pool
from sevro_core.run.planning import PlannedCase, RunPlan
from sevro_core.run.records import TrialRecord, not_admitted
from sevro_core.states import Execution, Grading
from sevro_core.store.evidence import EvidenceStore


@frozen
class WorkItem:
    planned: PlannedCase
    trial: int


def _stops_admission(record: TrialRecord) -> bool:
    return record.states.execution is Execution.FAILED or record.states.grading is Grading.ERROR


def run_trials(
    plan: RunPlan,
    store: EvidenceStore,
    cancel: CancelToken,
    on_finished: Callable[[TrialRecord], None] = lambda _: None,
    reused: Mapping[tuple[str, int], TrialRecord] | None = None,
) -> list[TrialRecord]:
    """Run every trial not in ``reused``; return all records in (case, trial) order."""
    items = work_order(plan)
    records: dict[tuple[str, int], TrialRecord] = dict(reused or {})
    to_run = [i for i in items if (i.planned.unit, i.trial) not in records]
    workers = max(1, min(plan.settings.jobs, len(to_run)))
    admitting = not any(_stops_admission(r) for r in records.values())
    failure: BaseException | None = None
    pending: dict[Future[TrialRecord], WorkItem] = {}
    queue = list(reversed(to_run))
    with trial_pool(plan, workers, cancel) as pool:
        while True:
            admitting = admitting and not cancel.cancelled
            while admitting and queue and len(pending) < workers:
                item = queue.pop()
                pending[pool.submit(TrialJob(plan, item.planned, item.trial, cancel, store))] = item
            if not pending:
                break
            done, _ = wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
            for future in done:
                item = pending.pop(future)
                try:
                    record = future.result()
                except BaseException as exc:  # persistence or internal failure
                    failure = failure or exc
                    admitting = False
                    cancel.cancel("sevro.runner.error")
                    continue
                records[(item.planned.unit, item.trial)] = record
                if _stops_admission(record):
                    admitting = False
                on_finished(record)
    if failure is not None:
        raise failure
    out = []
    for planned in plan.cases:  # results list units in plan order, trials in number order
        for trial in range(1, plan.settings.trials + 1):
            arm = planned.arm.id if planned.arm is not None else None
            out.append(
                records.get((planned.unit, trial))
                or not_admitted(planned.case.id, trial, cancelled=cancel.cancelled, arm=arm)
            )
    return out


def work_order(plan: RunPlan) -> list[WorkItem]:
    """The order trials are admitted in.

    A plain run goes case by case. An experiment goes repetition by repetition, and within one
    repetition case by case with the case's arms side by side (a pair runs back to back), the
    arm that goes first rotating from pair to pair: drift in the model service over the run
    hits every arm alike, and no arm always runs first.
    """
    trials = range(1, plan.settings.trials + 1)
    if not plan.arms:
        return [WorkItem(p, t) for p in plan.cases for t in trials]
    width = len(plan.arms)
    units = [plan.cases[i : i + width] for i in range(0, len(plan.cases), width)]
    order: list[WorkItem] = []
    for trial in trials:
        for index, case_units in enumerate(units):
            shift = (trial - 1 + index) % width
            rotated = (*case_units[shift:], *case_units[:shift])
            order.extend(WorkItem(unit, trial) for unit in rotated)
    return order
