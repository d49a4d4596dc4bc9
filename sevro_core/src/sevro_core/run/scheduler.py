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
from sevro_core.store.spendgate import CANDIDATE_ROLE, Reservation, SpendGate, candidate_usage


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
    spend: SpendGate | None = None,
) -> list[TrialRecord]:
    """Run every trial not in ``reused``; return all records in (case, trial) order.

    With a spend ceiling each trial's candidate call is reserved here, on the admitting thread,
    before it is submitted, and settled when its record comes back; a refused reservation
    stops admission (trials already running finish)."""
    items = work_order(plan)
    records: dict[tuple[str, int], TrialRecord] = dict(reused or {})
    to_run = [i for i in items if (i.planned.unit, i.trial) not in records]
    workers = max(1, min(plan.settings.jobs, len(to_run)))
    admitting = not any(_stops_admission(r) for r in records.values())
    failure: BaseException | None = None
    pending: dict[Future[TrialRecord], tuple[WorkItem, Reservation | None]] = {}
    queue = list(reversed(to_run))
    with trial_pool(plan, workers, cancel) as pool:
        while True:
            admitting = admitting and not cancel.cancelled
            while admitting and queue and len(pending) < workers:
                item = queue.pop()
                reservation = _reserve(spend, item)
                if spend is not None and reservation is None:
                    admitting = False
                    break
                future = pool.submit(TrialJob(plan, item.planned, item.trial, cancel, store, spend))
                pending[future] = (item, reservation)
            if not pending:
                break
            done, _ = wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
            for future in done:
                item, reservation = pending.pop(future)
                try:
                    record = future.result()
                except BaseException as exc:  # persistence or internal failure
                    _settle(spend, reservation, None)
                    failure = failure or exc
                    admitting = False
                    cancel.cancel("sevro.runner.error")
                    continue
                _settle(spend, reservation, record)
                records[(item.planned.unit, item.trial)] = record
                if _stops_admission(record):
                    admitting = False
                on_finished(record)
    if failure is not None:
        raise failure
    return _in_plan_order(plan, records, cancel, spend)


def _reserve(spend: SpendGate | None, item: WorkItem) -> Reservation | None:
    """The trial's candidate call reserved in the journal (None without a ceiling, or when
    the ceiling refused it)."""
    if spend is None:
        return None
    return spend.reserve(CANDIDATE_ROLE, f"{item.planned.unit}#{item.trial}")


def _settle(
    spend: SpendGate | None, reservation: Reservation | None, record: TrialRecord | None
) -> None:
    """Reconcile the trial's candidate call to its computed cost, or forfeit the reservation
    when the cost is unknown (or the trial failed before it was persisted); a dry trial never
    called its host and costs nothing."""
    if spend is None or reservation is None:
        return
    if record is None or record.document is None:
        spend.forfeit(reservation, "the trial ended before its cost was known")
    elif record.states.execution is Execution.NOT_RUN:
        spend.reconcile(reservation, 0.0)
    else:
        spend.settle(reservation, candidate_usage(record.document))


def _in_plan_order(
    plan: RunPlan,
    records: Mapping[tuple[str, int], TrialRecord],
    cancel: CancelToken,
    spend: SpendGate | None,
) -> list[TrialRecord]:
    """Every trial's record, units in plan order and trials in number order; a trial never
    started is ``not_admitted`` (cancelled, or stopped by the spend ceiling)."""
    stopped = spend is not None and spend.stopped is not None
    out = []
    for planned in plan.cases:
        for trial in range(1, plan.settings.trials + 1):
            arm = planned.arm.id if planned.arm is not None else None
            record = records.get((planned.unit, trial))
            if record is None:
                record = not_admitted(
                    planned.case.id, trial, cancelled=cancel.cancelled, arm=arm, spend=stopped
                )
                if stopped and spend is not None and not cancel.cancelled:
                    spend.not_admitted()
            out.append(record)
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
