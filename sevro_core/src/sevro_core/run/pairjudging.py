"""The comparator's post-run step: every eligible pair of an experiment's comparisons judged
blinded in both orders, each judgement persisted with the run's evidence, resume-safe.

After the trials finished, each comparison's pairs (control = baseline, treatment = candidate,
repetition by repetition) whose objective outcomes make them eligible (both passed by default,
or both completed) are shown to the comparator judge: the case's prompts, its fixture
materialised afresh without any arm, and each trial's final message and diff from its evidence.
The judgement is written to ``comparisons/<control>..<treatment>/<case>/pair-<r>.json`` with
the digests of the two trial files it judged, the judge's calls (prompt and reply kept as blobs)
and its route; a resumed run reuses a judgement only when those trial digests, the rubric and
the route are unchanged, so an interrupted judging step resumes where it stopped.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import structlog
from attrs import frozen

from sevro_core.experiments.comparison import ComparatorJudging, arm_trial
from sevro_core.experiments.pairjudgements import (
    PAIR_FORMAT,
    PAIR_SCHEMA,
    call_usage,
    pair_dir,
    schema_problem,
)
from sevro_core.fixtures.workspace import WorkspaceEscapeError, read_confined
from sevro_core.formats.jsonio import dumps_pretty, write_private_atomic
from sevro_core.formats.schemas import validate_output
from sevro_core.judges.comparator import PairJudgement, eligible, judge_pair, unjudged
from sevro_core.judges.session import JudgeCall, JudgeSession
from sevro_core.judges.subjects import BaseFiles, SubjectError, base_files, judged_result
from sevro_core.limits import MAX_RESULT_FILE_BYTES
from sevro_core.models import CancelToken, JudgeReply, Usage
from sevro_core.plugin.protocols import Rubric
from sevro_core.run.engine import WORKSPACE_TOKEN
from sevro_core.run.planning import PlannedCase, RunPlan
from sevro_core.run.records import TrialRecord
from sevro_core.store.evidence import EvidenceStore, ensure_private_dir
from sevro_core.store.spendgate import SpendGate, SpendRefused
from sevro_core.vocabulary import COMPARATOR_ROLE

NEUTRAL_WORKSPACE: Final = Path("/workspace")
"""What the task's workspace placeholder reads as for the judge (no trial's real path)."""

log = structlog.get_logger("sevro.judges")


@frozen
class _Comparing:
    """One comparison being judged: what every pair of it shares."""

    plan: RunPlan
    store: EvidenceStore
    cancel: CancelToken
    rubric: Rubric
    control: str
    treatment: str
    records: Mapping[tuple[str, str, int], TrialRecord]
    """Trials by (arm, case id, repetition)."""
    spend: SpendGate | None = None

    @property
    def route(self) -> dict[str, str]:
        route = self.plan.judges.get(COMPARATOR_ROLE)
        assert route is not None  # judge_pairs runs only with a comparator
        return route.route.to_json()

    def pair_dir(self, case_id: str) -> Path:
        return pair_dir(self.store.run_dir, self.control, self.treatment, case_id)


def judge_pairs(
    plan: RunPlan,
    store: EvidenceStore,
    records: Sequence[TrialRecord],
    cancel: CancelToken,
    spend: SpendGate | None = None,
) -> dict[tuple[str, str], ComparatorJudging] | None:
    """Judge every eligible pair of every comparison (None when the run has no comparator);
    once the spend ceiling stops new calls, no further pair is judged (nor kept half-judged)."""
    route = plan.judges.get(COMPARATOR_ROLE)
    experiment = plan.settings.experiment
    if route is None or experiment is None:
        return None
    rubric = plan.registry.rubric(plan.settings.judges.rubric)
    if rubric is None:  # planning refused this already
        raise ValueError(f"comparator rubric {plan.settings.judges.rubric!r} is not installed")
    indexed = {(r.arm or "", r.case_id, r.trial): r for r in records if r.document is not None}
    out: dict[tuple[str, str], ComparatorJudging] = {}
    for comparison in experiment.comparisons:
        comparing = _Comparing(
            plan, store, cancel, rubric, comparison.control, comparison.treatment, indexed, spend
        )
        judged = _judge_comparison(comparing)
        out[(comparison.control, comparison.treatment)] = ComparatorJudging(
            rubric_id=rubric.id,
            rubric_version=str(rubric.version),
            route=comparing.route,
            judgements={key: judgement for key, (judgement, _) in judged.items()},
            when=plan.settings.judges.compare_when,
            call_usage={key: usage for key, (_, usage) in judged.items()},
        )
    return out


_Judged = tuple[PairJudgement, tuple[Usage, ...]]
"""A pair's judgement and the usage of each judge call it took."""


def _judge_comparison(comparing: _Comparing) -> dict[tuple[str, int], _Judged]:
    judgements: dict[tuple[str, int], _Judged] = {}
    when = comparing.plan.settings.judges.compare_when
    for planned in _case_units(comparing.plan, comparing.control):
        case_id = planned.case.id
        base: BaseFiles | str | None = None
        for r in range(1, comparing.plan.settings.trials + 1):
            control = comparing.records.get((comparing.control, case_id, r))
            treatment = comparing.records.get((comparing.treatment, case_id, r))
            if control is None or treatment is None or _stopped(comparing):
                continue
            outcomes = (_outcome(control), _outcome(treatment))
            if not eligible(*outcomes, when):
                continue
            reused = _reusable(comparing, case_id, r, (control, treatment))
            if reused is not None:
                judgements[(case_id, r)] = reused
                continue
            if base is None:
                base = _base(comparing, planned)
            judged, calls = _judge_one(comparing, planned, base, (control, treatment), r)
            if _stopped(comparing):
                continue  # a judgement cut short by cancellation is not kept: resume asks again
            _persist(comparing, (case_id, r), (control, treatment), judged, calls)
            judgements[(case_id, r)] = (judged, tuple(c.reply.usage for c in calls))
    return judgements


def _base(comparing: _Comparing, planned: PlannedCase) -> BaseFiles | str:
    """The case's base files, or why its fixture could not be materialised for the judge."""
    try:
        return base_files(planned.fixture, comparing.plan.settings.workspace_root)
    except Exception as exc:  # a fixture that fails here costs its pairs, never the run
        return f"the base fixture could not be materialised: {type(exc).__name__}: {exc}"


def _stopped(comparing: _Comparing) -> bool:
    """Whether the run was cancelled or stopped at its spend ceiling (checked again after
    every judged pair)."""
    spend = comparing.spend
    return comparing.cancel.cancelled or (spend is not None and spend.stopped is not None)


def _case_units(plan: RunPlan, arm: str) -> list[PlannedCase]:
    """The planned units of ``arm`` (one per case): whose fixture the pairs of a case share."""
    return [p for p in plan.cases if p.arm is not None and p.arm.id == arm]


def _outcome(record: TrialRecord) -> str:
    assert record.document is not None
    return arm_trial(record.document, record.arm).outcome


def _judge_one(
    comparing: _Comparing,
    planned: PlannedCase,
    base: BaseFiles | str,
    trials: tuple[TrialRecord, TrialRecord],
    repetition: int,
) -> tuple[PairJudgement, list[JudgeCall]]:
    """The pair's judgement and the judge calls it made, each pair in its own judge session;
    evidence that cannot be shown makes it a judge error without asking."""
    if isinstance(base, str):
        return unjudged(base), []
    run_dir = comparing.store.run_dir
    try:
        baseline, candidate = (judged_result(run_dir, _evidence(t)) for t in trials)
    except SubjectError as exc:
        return unjudged(f"the pair's evidence cannot be shown to the judge: {exc}"), []
    task = tuple(p.replace(WORKSPACE_TOKEN, str(NEUTRAL_WORKSPACE)) for p in planned.case.prompts)
    plan = comparing.plan
    session = JudgeSession(
        plan.judges,
        plan.sandbox,
        comparing.cancel,
        label=(planned.case.id, repetition),
        workspace_root=plan.settings.workspace_root,
        spend=comparing.spend,
    )

    def ask(prompt: str, purpose: str) -> JudgeReply:
        return session.ask(COMPARATOR_ROLE, prompt, purpose=purpose)

    try:
        judged = judge_pair(
            ask, comparing.rubric, task, base.files, base.truncated, baseline, candidate
        )
    except SpendRefused as exc:  # the caller sees the stop and keeps nothing of the pair
        return unjudged(f"not asked: {exc}"), list(session.calls)
    return judged, list(session.calls)


def _evidence(record: TrialRecord) -> Mapping[str, Any]:
    assert record.document is not None
    evidence = record.document.get("evidence")
    return evidence if isinstance(evidence, Mapping) else {}


def _digests(trials: tuple[TrialRecord, TrialRecord]) -> dict[str, str | None]:
    return {"control": trials[0].sha256, "treatment": trials[1].sha256}


def _header(
    comparing: _Comparing, case_id: str, r: int, trials: tuple[TrialRecord, TrialRecord]
) -> dict[str, Any]:
    """What a persisted judgement must match to be reused."""
    return {
        "format": PAIR_FORMAT,
        "runId": comparing.store.run_id,
        "control": comparing.control,
        "treatment": comparing.treatment,
        "caseId": case_id,
        "repetition": r,
        "trials": _digests(trials),
        "rubric": {"id": comparing.rubric.id, "version": str(comparing.rubric.version)},
        "when": comparing.plan.settings.judges.compare_when,
        "judge": comparing.route,
    }


def _reusable(
    comparing: _Comparing, case_id: str, r: int, trials: tuple[TrialRecord, TrialRecord]
) -> _Judged | None:
    """An earlier attempt's judgement of exactly these trials, rubric and judge (with what its
    calls cost), else None; a file that does not validate is judged again."""
    path = comparing.pair_dir(case_id) / f"pair-{r}.json"
    if not path.is_file():
        return None
    try:
        data, size = read_confined(
            comparing.store.run_dir, comparing.store.relative(path), MAX_RESULT_FILE_BYTES
        )
        document = json.loads(data) if size <= MAX_RESULT_FILE_BYTES else None
        if not isinstance(document, dict):
            return None
        header = _header(comparing, case_id, r, trials)
        if any(document.get(key) != value for key, value in header.items()):
            return None
        problem = schema_problem(document)
        if problem is not None:
            raise ValueError(f"not a {PAIR_SCHEMA} document: {problem}")
        return PairJudgement.from_json(document["judgement"]), call_usage(document)
    except (OSError, WorkspaceEscapeError, ValueError, KeyError, TypeError) as exc:
        log.warning("judging the pair again", case=case_id, repetition=r, reason=str(exc))
        return None


def _persist(
    comparing: _Comparing,
    pair: tuple[str, int],
    trials: tuple[TrialRecord, TrialRecord],
    judged: PairJudgement,
    calls: Sequence[JudgeCall],
) -> None:
    """Write the judgement with the judge calls it made (prompts and replies as blobs)."""
    case_id, r = pair
    directory = ensure_private_dir(comparing.pair_dir(case_id))
    refs = []
    for call in calls:
        for artifact in call.artifacts():
            path = directory / f"pair-{r}-{artifact.id}.txt"
            write_private_atomic(path, artifact.content)
            refs.append(
                {
                    "id": artifact.id,
                    "path": comparing.store.relative(path),
                    "sha256": hashlib.sha256(artifact.content).hexdigest(),
                    "byteLength": len(artifact.content),
                }
            )
    document = {
        **_header(comparing, case_id, r, trials),
        "judgement": judged.to_json(),
        "calls": [call.to_json() for call in calls],
        "artifactRefs": refs,
    }
    validate_output(PAIR_SCHEMA, document)
    write_private_atomic(directory / f"pair-{r}.json", dumps_pretty(document).encode("utf-8"))
