"""``sevro run`` from validated settings to a written ``run.json``.

Everything that can be refused is refused before the results directory is touched. The run
state (``--run-state-root``, default ``<results-root>/.sevro-state``) records who owns each
evaluation and every persisted trial, so a crashed run can be resumed.
"""

from __future__ import annotations

import datetime
import hashlib
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog
from attrs import frozen

from sevro_core.errors import InvocationError, PersistenceError, SevroError
from sevro_core.models import CancelToken
from sevro_core.plugin.manager import Registry
from sevro_core.plugin.runinfo import RunInfo
from sevro_core.run.loading import load_cases
from sevro_core.run.planning import RunPlan, RunSettings, plan_run
from sevro_core.run.records import TrialRecord
from sevro_core.run.remote import check_remote_plan
from sevro_core.run.results import (
    cli_result,
    regression_exit,
    run_document,
    run_statistics,
)
from sevro_core.run.resume import recover
from sevro_core.run.scheduler import run_trials
from sevro_core.run.signals import cancel_on_signals
from sevro_core.run.spending import (
    STOPPED,
    RunSpend,
    all_trials,
    exposure,
    open_spend,
)
from sevro_core.states import ExitCode
from sevro_core.store.evidence import EvidenceStore, ensure_private_dir
from sevro_core.store.runstate import DEFAULT_STATE_DIR, Claim, RunState, TrialCheckpoint
from sevro_core.store.spendgate import SPEND_STOP_CODE

if TYPE_CHECKING:
    from sevro_core.experiments.comparison import ComparatorJudging
    from sevro_core.store.spendgate import SpendGate

log = structlog.get_logger("sevro.run")
_SIGNAL_EXITS = {"SIGINT": ExitCode.SIGINT, "SIGTERM": ExitCode.SIGTERM}


@frozen
class RunOutcome:
    result: dict[str, Any]
    run_dir: Path
    exit_code: int
    statistics: dict[str, Any] | None = None
    """An experiment's comparisons (``sevro.experiment-statistics.v1``), None for a plain run."""
    spend: dict[str, Any] | None = None
    """run.json's ``spend`` block (the ceilings and the journal's totals), None without one."""


def prepare(case_paths: Sequence[Path], registry: Registry, settings: RunSettings) -> RunPlan:
    """Load and plan (the benchmarks' entry); raises ``InvocationError`` (exit 64) before
    anything is written. ``sevro run`` also reads experiment files: see ``runflags.run_inputs``."""
    return plan_run(load_cases(case_paths), registry, settings)


def _signals(cancel: CancelToken) -> AbstractContextManager[None]:
    """Cancel on SIGINT/SIGTERM; the handler never logs (see :mod:`sevro_core.run.signals`)."""
    return cancel_on_signals(cancel, lambda name: log.warning("cancelling run", signal=name))


def _hook(registry: Registry, name: str, **kwargs: Any) -> None:
    try:
        getattr(registry.manager.hook, name)(**kwargs)
    except Exception as exc:  # an observer must never cost us the evidence
        log.error("lifecycle hook failed", hook=name, error=f"{type(exc).__name__}: {exc}")


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds")


def execute(
    plan: RunPlan,
    on_trial: Callable[[TrialRecord], None] = lambda _: None,
    cancel: CancelToken | None = None,
    *,
    resume: bool = False,
    on_reused: Callable[[Sequence[TrialRecord]], None] = lambda _: None,
    on_notice: Callable[[str], None] = lambda _: None,
) -> RunOutcome:
    """Claim the evaluation, run (or resume) it, and write its evidence. ``on_reused`` learns,
    once, the trials a resumed run keeps from its earlier attempt (they never reach
    ``on_trial``); ``on_notice`` what the operator must see before dispatch (the worst-case
    spend)."""
    cancel = cancel or CancelToken()
    settings = plan.settings
    if getattr(plan.executor, "remote", False):  # its trials are described for other machines
        check_remote_plan(plan)
    if settings.spend is not None and not resume:  # refused before anything is written
        exposure(plan, settings.spend, all_trials(plan))
    try:
        ensure_private_dir(settings.results_root)
    except OSError as exc:
        raise InvocationError(
            f"cannot use as results root: {exc}", source=settings.results_root
        ) from None
    state = RunState(settings.run_state_root or settings.results_root / DEFAULT_STATE_DIR)
    try:
        hooks = _Callbacks(on_trial, on_reused, on_notice)
        return _execute_claimed(plan, state, hooks, cancel, resume=resume)
    finally:
        state.close()


@frozen
class _Callbacks:
    """What the caller learns as the run goes (see :func:`execute`)."""

    on_trial: Callable[[TrialRecord], None]
    on_reused: Callable[[Sequence[TrialRecord]], None]
    on_notice: Callable[[str], None]


def _execute_claimed(
    plan: RunPlan, state: RunState, hooks: _Callbacks, cancel: CancelToken, *, resume: bool
) -> RunOutcome:
    """Claim the evaluation, run its trials and write ``run.json``, all under signal handling."""
    settings = plan.settings
    started_at = _now()
    with _signals(cancel):
        claim = state.claim(
            plan.identity["digest"],
            results_root=settings.results_root,
            trials_total=len(plan.cases) * settings.trials,
            resume=resume,
            identity=plan.identity,
            project_root=settings.project_root,
        )
        run_id = claim.run_id
        store, reused = _open_store(plan, state, claim)
        spend = _open_spend(plan, state, claim, reused, hooks.on_notice)
        hooks.on_reused(list(reused.values()))
        info = _started(plan, claim, store)
        finished = _trial_finished(plan, state, store, info, hooks.on_trial)
        try:
            records = run_trials(plan, store, cancel, finished, reused=reused, spend=spend.gate)
        except BaseException as exc:
            log.info("run failed", run_id=run_id, error=str(exc))
            _finish_failed(state, run_id)
            raise
        judging = _judging(plan, store, records, cancel, spend.gate)
        result, status = _result(plan, info, store, records, (cancel, spend))
        statistics = _statistics(plan, records, judging)
        result = regression_exit(plan, result, statistics)
        state.finish(run_id, "interrupted" if status == STOPPED else status)
        document = run_document(
            plan, store, status, started_at, result, records, state.attempts(run_id), statistics
        )
        spent = spend.evidence()
        _write_run(state, store, {**document, **spent})
        spend.close()
    _hook(plan.registry, "sevro_run_finished", run=info, result=result)
    log.info("run finished", run_id=run_id, status=status, exit_code=result["exitCode"])
    return RunOutcome(
        result=result,
        run_dir=store.run_dir,
        exit_code=result["exitCode"],
        statistics=statistics,
        spend=spent.get("spend"),
    )


def _open_store(
    plan: RunPlan, state: RunState, claim: Claim
) -> tuple[EvidenceStore, dict[tuple[str, int], TrialRecord]]:
    """The run's evidence directory, and on resume the trials an earlier attempt persisted.

    A failure here marks the claimed run failed before it propagates.
    """
    try:
        store = EvidenceStore(
            plan.settings.results_root, claim.run_id, attempt=claim.attempt, reopen=claim.resumed
        )
        reused = recover(plan, store, state) if claim.resumed else {}
    except Exception:
        _finish_failed(state, claim.run_id)
        raise
    return store, reused


def _open_spend(
    plan: RunPlan,
    state: RunState,
    claim: Claim,
    reused: Mapping[tuple[str, int], TrialRecord],
    on_notice: Callable[[str], None],
) -> RunSpend:
    """The run's spend journal and gate (none without a ceiling), the worst case told before
    dispatch; a refusal (a resumed run over its ceiling) leaves the run resumable."""
    try:
        spend = open_spend(plan, state.root, claim, reused)
    except Exception:
        _finish_failed(state, claim.run_id)
        raise
    if spend.line is not None:
        on_notice(spend.line)
    return spend


def _started(plan: RunPlan, claim: Claim, store: EvidenceStore) -> RunInfo:
    """Announce the run (log and ``sevro_run_started``); what hooks learn about it."""
    settings = plan.settings
    info = RunInfo(
        run_id=claim.run_id,
        evaluation_digest=plan.identity["digest"],
        run_dir=store.run_dir,
        case_ids=tuple(dict.fromkeys(p.case.id for p in plan.cases)),
        trials=settings.trials,
        dry=settings.dry,
    )
    log.info(
        "run started",
        run_id=claim.run_id,
        attempt=claim.attempt,
        evaluation=plan.identity["digest"][:12],
        cases=len(plan.cases),
        trials=settings.trials,
        jobs=settings.jobs,
    )
    _hook(plan.registry, "sevro_run_started", run=info)
    return info


def _trial_finished(
    plan: RunPlan,
    state: RunState,
    store: EvidenceStore,
    info: RunInfo,
    on_trial: Callable[[TrialRecord], None],
) -> Callable[[TrialRecord], None]:
    """What happens as each trial ends: checkpoint it (so resume can reuse it), log, tell hooks
    and the caller."""

    def finished(record: TrialRecord) -> None:
        if record.path is not None and record.sha256 is not None:
            state.checkpoint(
                info.run_id,
                TrialCheckpoint(
                    record.unit,
                    record.trial,
                    record.attempt,
                    store.relative(record.path),
                    record.sha256,
                    record.states.execution.value,
                ),
            )
        log.debug(
            "trial finished",
            case=record.case_id,
            trial=record.trial,
            execution=record.states.execution.value,
            grading=record.states.grading.value,
            task=record.states.verdict.value,
        )
        if record.document is not None:
            _hook(plan.registry, "sevro_trial_finished", run=info, trial=record.document)
        on_trial(record)

    return finished


def _result(
    plan: RunPlan,
    info: RunInfo,
    store: EvidenceStore,
    records: Sequence[TrialRecord],
    stops: tuple[CancelToken, RunSpend],
) -> tuple[dict[str, Any], str]:
    """The run's ``sevro.cli-result.v1`` and its status: ``interrupted`` after a signal,
    ``stopped`` when the spend ceiling stopped it (exit 5)."""
    cancel, spend = stops
    signal_exit = _SIGNAL_EXITS.get(cancel.reason or "")
    status = "interrupted" if signal_exit is not None else "completed"
    diagnostic = None
    if signal_exit is not None:
        diagnostic = {
            "code": "sevro.run.cancelled",
            "message": f"interrupted by {cancel.reason}",
        }
    elif spend.stopped is not None:
        status, signal_exit = STOPPED, ExitCode.SPEND_CEILING
        diagnostic = {"code": SPEND_STOP_CODE, "message": spend.stopped}
    result = cli_result(
        run_id=info.run_id,
        units=[(p.case.id, p.arm.id if p.arm is not None else None) for p in plan.cases],
        records=records,
        threshold=plan.settings.threshold,
        dry=plan.settings.dry,
        evidence_path=store.run_dir / "run.json",
        signal_exit=signal_exit,
        diagnostic=diagnostic,
    )
    return result, status


def _judging(
    plan: RunPlan,
    store: EvidenceStore,
    records: Sequence[TrialRecord],
    cancel: CancelToken,
    spend: SpendGate | None,
) -> dict[tuple[str, str], ComparatorJudging] | None:
    """The comparator's judgements of the eligible pairs (None without a comparator); a
    failure of the judging step never costs the run its evidence or objective statistics."""
    if plan.settings.experiment is None:
        return None
    from sevro_core.run.pairjudging import judge_pairs

    try:
        return judge_pairs(plan, store, records, cancel, spend)
    except Exception as exc:
        log.error("comparator judging failed", error=f"{type(exc).__name__}: {exc}")
        return None


def _statistics(
    plan: RunPlan,
    records: Sequence[TrialRecord],
    judging: Mapping[tuple[str, str], ComparatorJudging] | None = None,
) -> dict[str, Any] | None:
    """The experiment's statistics; a failure to compute them never costs the run its evidence
    (``run.json`` is written without them and ``sevro report`` recomputes)."""
    try:
        return run_statistics(plan, records, judging)
    except Exception as exc:
        log.error("experiment statistics failed", error=f"{type(exc).__name__}: {exc}")
        return None


def _write_run(state: RunState, store: EvidenceStore, document: dict[str, Any]) -> None:
    """Write ``run.json`` and record its digest; only a failed write fails the run."""
    run_path = store.run_dir / "run.json"
    try:
        store.write_run(document)
        digest = hashlib.sha256(run_path.read_bytes()).hexdigest()
    except OSError as exc:
        raise PersistenceError(f"run evidence could not be written to {run_path}: {exc}") from exc
    try:
        state.record_run_evidence(store.run_id, digest)
    except SevroError as exc:  # the run is complete; `sevro runs` then checks the schema
        log.warning("run.json digest not recorded", run_id=store.run_id, error=str(exc))


def _finish_failed(state: RunState, run_id: str) -> None:
    """Mark the run failed if the state can still be written; the original error matters.

    When it cannot (a full disk), the run stays ``active`` with a dead owner, which the next
    claim or ``sevro runs`` reads as interrupted: resumable either way.
    """
    try:
        state.finish(run_id, "failed")
    except SevroError as exc:
        log.warning("run state not updated", run_id=run_id, error=str(exc))
