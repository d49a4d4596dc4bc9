"""``sevro run`` from validated settings to a written ``run.json``.

Everything that can be refused is refused before the results directory is touched.
"""

from __future__ import annotations

import datetime
import signal
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import structlog
from attrs import frozen

from sevro_core.engine import TrialRecord
from sevro_core.errors import PersistenceError
from sevro_core.evidence import RUN_FORMAT, EvidenceStore
from sevro_core.loading import load_cases
from sevro_core.models import CancelToken
from sevro_core.planning import RunPlan, RunSettings, plan_run
from sevro_core.plugins import Registry
from sevro_core.results import cli_result
from sevro_core.runinfo import RunInfo
from sevro_core.scheduler import run_trials
from sevro_core.states import ExitCode

log = structlog.get_logger("sevro.run")
_SIGNAL_EXITS = {"SIGINT": ExitCode.SIGINT, "SIGTERM": ExitCode.SIGTERM}


@frozen
class RunOutcome:
    result: dict[str, Any]
    run_dir: Path
    exit_code: int


def prepare(case_paths: Sequence[Path], registry: Registry, settings: RunSettings) -> RunPlan:
    """Load and plan; raises ``InvocationError`` (exit 64) before anything is written."""
    cases = load_cases(case_paths)
    return plan_run(cases, registry, settings)


@contextmanager
def _signals(cancel: CancelToken) -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, _frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if not cancel.cancelled:
            log.warning("cancelling run", signal=name)
        cancel.cancel(name)

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


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
) -> RunOutcome:
    """Run a planned evaluation and write its evidence."""
    cancel = cancel or CancelToken()
    run_id = str(uuid.uuid4())
    settings = plan.settings
    started_at = _now()
    store = EvidenceStore(settings.results_root, run_id)
    info = RunInfo(
        run_id=run_id,
        evaluation_digest=plan.identity["digest"],
        run_dir=store.run_dir,
        case_ids=tuple(p.case.id for p in plan.cases),
        trials=settings.trials,
        dry=settings.dry,
    )
    log.info(
        "run started",
        run_id=run_id,
        evaluation=plan.identity["digest"][:12],
        cases=len(plan.cases),
        trials=settings.trials,
        jobs=settings.jobs,
    )
    _hook(plan.registry, "sevro_run_started", run=info)

    def finished(record: TrialRecord) -> None:
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

    diagnostic = None
    status = "completed"
    with _signals(cancel):
        try:
            records = run_trials(plan, store, cancel, finished)
        except PersistenceError as exc:
            log.info("run failed", run_id=run_id, error=str(exc))
            raise
    signal_exit = _SIGNAL_EXITS.get(cancel.reason or "")
    if signal_exit is not None:
        status = "interrupted"
        diagnostic = {"code": "sevro.run.cancelled", "message": f"interrupted by {cancel.reason}"}
    run_path = store.run_dir / "run.json"
    result = cli_result(
        run_id=run_id,
        case_ids=info.case_ids,
        records=records,
        threshold=settings.threshold,
        dry=settings.dry,
        evidence_path=run_path,
        signal_exit=signal_exit,
        diagnostic=diagnostic,
    )
    document = run_document(plan, store, status, started_at, result, records)
    try:
        store.write_run(document)
    except OSError as exc:
        raise PersistenceError(f"run evidence could not be written to {run_path}: {exc}") from exc
    _hook(plan.registry, "sevro_run_finished", run=info, result=result)
    log.info("run finished", run_id=run_id, status=status, exit_code=result["exitCode"])
    return RunOutcome(result=result, run_dir=store.run_dir, exit_code=result["exitCode"])


def run_document(
    plan: RunPlan,
    store: EvidenceStore,
    status: str,
    started_at: str,
    result: dict[str, Any],
    records: Sequence[TrialRecord],
) -> dict[str, Any]:
    settings = plan.settings
    return {
        "format": RUN_FORMAT,
        "runId": store.run_id,
        "status": status,
        "startedAt": started_at,
        "finishedAt": _now(),
        "evaluationIdentity": dict(plan.identity),
        "configuration": dict(plan.configuration),
        "runner": dict(plan.runner),
        "project": {k: v for k, v in plan.project.items() if k != "digest"},
        "extension": None,
        "condition": {
            "requested": settings.condition,
            "actual": settings.condition if not settings.dry else "unknown",
            "requestedInstrumentation": [],
            "appliedInstrumentation": [],
        },
        "graders": {"active": [dict(g) for g in plan.graders_active], "replacedDefaults": []},
        "verdictPolicy": {
            "id": plan.verdict_policy.id,
            "version": str(plan.verdict_policy.version),
        },
        "routes": [plan.route.to_json()],
        "plugins": [
            {"name": p.name, "distribution": p.distribution, "version": p.version}
            for p in plan.registry.plugins
        ],
        "cases": [
            {
                "caseId": p.case.id,
                "source": p.case.source + (f"#{p.case.pointer}" if p.case.pointer else ""),
                "fixtureProvider": p.fixture_provider,
                "digests": dict(p.digests),
            }
            for p in plan.cases
        ],
        "trials": [
            {
                "caseId": r.case_id,
                "trial": r.trial,
                "path": store.relative(r.path) if r.path is not None else None,
            }
            for r in records
        ],
        "result": result,
    }
