"""Calibrating a judge: run it over a labelled corpus through the production path, keep a record.

Nothing here re-implements judging. A single response is graded by the registered semantic
grader exactly as in a run (its compiled check, a :class:`TrialView` whose final message is the
corpus response, whose ``checks`` are the item's propositions and whose ``judges`` is the judge
session); a pair goes through the core's two-order comparison with the registered rubric (the
``PairJudge`` the caller passes). The figures come from :mod:`sevro_core.judges.figures`; the
record (``sevro.judge-calibration.v1``) names the judge identity and the corpus digest, so an
experiment can require a calibrated judge (:mod:`sevro_core.judges.calibrated`).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path

from attrs import frozen

from sevro_core.errors import ConfigurationError, GradingError, InvocationError
from sevro_core.formats.canonical import hash_json
from sevro_core.formats.jsonio import JsonValue
from sevro_core.formats.schemas import validate_output
from sevro_core.judges.corpus import Corpus, PairItem, SingleItem
from sevro_core.judges.figures import (
    CheckJudgement,
    Figures,
    PairResult,
    SingleResult,
    figures,
)
from sevro_core.limits import MAX_CALIBRATION_ERROR_CHARS
from sevro_core.models import CheckDeclaration, TrialJudges, TrialView
from sevro_core.plugin.protocols import (
    ComparisonSubject,
    CompiledCheck,
    ConfiguredHost,
    Grader,
    JudgedResult,
)
from sevro_core.states import CheckStatus
from sevro_core.vocabulary import COMPARATOR_ROLE, SEMANTIC_ROLE

RECORD_FORMAT = "sevro.judge-calibration.v1"
RECORD_SCHEMA = "judge-calibration.v1"
SEMANTIC_GRADER = "sevro.semantic"


@frozen
class JudgeIdentity:
    """What makes two judges the same judge: host, model, effort and configuration digest."""

    host: str
    model: str
    effort: str
    configuration_sha256: str

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "host": self.host,
            "model": self.model,
            "effort": self.effort,
            "configurationSha256": self.configuration_sha256,
        }


def judge_identity(configured: ConfiguredHost) -> JudgeIdentity:
    """A configured judge host's identity: its route and its redacted configuration's digest."""
    route = configured.route
    return JudgeIdentity(
        route.host, route.model, route.effort, hash_json(configured.redacted_configuration())
    )


@frozen
class PairDecisions:
    """What the two-order comparison decided: AB and BA already in the subject's labels
    (``A``/``B``/``tie``), or why it could not."""

    ab: str | None
    ba: str | None
    error: str | None = None


PairJudge = Callable[[ComparisonSubject, TrialJudges], PairDecisions]
"""Judges one subject in both orders with the given judges (the core's ``judge_pair`` with the
registered rubric)."""
Sessions = Callable[[str], TrialJudges]
"""A fresh judge session for one corpus item (by id), as a trial has its own."""


@frozen
class Calibration:
    corpus: Corpus
    singles: tuple[SingleResult, ...]
    pairs: tuple[PairResult, ...]

    @property
    def figures(self) -> Figures:
        return figures(self.singles, self.pairs)


def calibrate(
    corpus: Corpus,
    sessions: Sessions,
    roles: Collection[str],
    *,
    semantic: Grader | None,
    judge_pair: PairJudge | None,
) -> Calibration:
    """Judge every item of ``corpus`` (each in its own session); ``roles`` are the judge roles
    configured. Exit 64 before any call when a judge the corpus needs is missing."""
    compiled = _compile_singles(corpus.singles, roles, semantic)
    if corpus.pairs and (judge_pair is None or COMPARATOR_ROLE not in roles):
        raise InvocationError(
            f"the corpus has pairs but no comparator judge ({COMPARATOR_ROLE}) is configured",
            source=corpus.source,
        )
    with tempfile.TemporaryDirectory(prefix="sevro-calibration-") as empty:
        singles = tuple(
            _grade_single(item, compiled[item.id], sessions(item.id), Path(empty))
            for item in corpus.singles
        )
    pairs = tuple(
        _judge_pair(item, judge_pair, sessions(item.id)) for item in corpus.pairs if judge_pair
    )
    return Calibration(corpus, singles, pairs)


def _compile_singles(
    items: Sequence[SingleItem], roles: Collection[str], semantic: Grader | None
) -> dict[str, list[CompiledCheck]]:
    if not items:
        return {}
    if semantic is None or SEMANTIC_ROLE not in roles:
        raise InvocationError(
            f"the corpus has single items but no {SEMANTIC_GRADER} grader or {SEMANTIC_ROLE} "
            "judge is configured"
        )
    compiled: dict[str, list[CompiledCheck]] = {}
    for item in items:
        try:
            compiled[item.id] = [
                semantic.compile(_configuration(c.proposition)) for c in item.checks
            ]
        except ConfigurationError as exc:
            raise InvocationError(
                f"item {item.id!r}: {SEMANTIC_GRADER} refused a proposition: {exc.message}"
            ) from None
    return compiled


def _configuration(proposition: str) -> dict[str, JsonValue]:
    return {"proposition": proposition}


def _grade_single(
    item: SingleItem, compiled: list[CompiledCheck], judges: TrialJudges, workspace: Path
) -> SingleResult:
    declarations = tuple(
        CheckDeclaration(c.id, SEMANTIC_GRADER, _configuration(c.proposition)) for c in item.checks
    )
    view = TrialView(
        case_id=item.id,
        trial=1,
        final_message=item.response,
        final_message_complete=True,
        observations={},
        workspace=workspace,
        judges=judges,
        checks=declarations,
    )
    judged = []
    for gold, check in zip(item.checks, compiled, strict=True):
        verdict: str | None = None
        error: str | None = None
        try:
            outcome = check.grade(gold.id, view)
        except GradingError as exc:
            error = _bounded(f"grading error: {exc}")
        else:
            if outcome.status is CheckStatus.PASSED:
                verdict = "pass"
            elif outcome.status is CheckStatus.FAILED:
                verdict = "fail"
            else:
                error = _bounded(f"unavailable: {outcome.detail or 'no detail'}")
        judged.append(CheckJudgement(gold.id, gold.gold, verdict, error))
    return SingleResult(item.id, tuple(judged), item.probe)


def subject(item: PairItem) -> ComparisonSubject:
    """What the comparator sees of a corpus pair, in corpus order (A first)."""
    return ComparisonSubject(
        task=(item.task,),
        base_files=dict(item.base_files),
        base_files_truncated=False,
        a=JudgedResult(item.a.final_message, item.a.diff),
        b=JudgedResult(item.b.final_message, item.b.diff),
    )


def _judge_pair(item: PairItem, judge_pair: PairJudge, judges: TrialJudges) -> PairResult:
    try:
        decided = judge_pair(subject(item), judges)
    except GradingError as exc:
        decided = PairDecisions(None, None, f"grading error: {exc}")
    error = _bounded(decided.error) if decided.error is not None else None
    return PairResult(item.id, item.gold, decided.ab, decided.ba, error, item.probe, item.longer)


def _bounded(text: str) -> str:
    flat = " ".join(text.split())
    if len(flat) <= MAX_CALIBRATION_ERROR_CHARS:
        return flat
    return flat[: MAX_CALIBRATION_ERROR_CHARS - 1] + "…"


def record(
    calibration: Calibration, judges: Mapping[str, JudgeIdentity], version: str
) -> dict[str, JsonValue]:
    """The ``sevro.judge-calibration.v1`` document (checked against its schema)."""
    corpus = calibration.corpus
    document: dict[str, JsonValue] = {
        "format": RECORD_FORMAT,
        "sevroVersion": version,
        "judges": {role: identity.to_json() for role, identity in sorted(judges.items())},
        "corpus": {"sha256": corpus.sha256, "items": len(corpus.items)},
        "figures": calibration.figures.to_json(),
        "items": [
            *(_single_json(result) for result in calibration.singles),
            *(_pair_json(result) for result in calibration.pairs),
        ],
    }
    validate_output(RECORD_SCHEMA, document)
    return document


def _single_json(result: SingleResult) -> dict[str, JsonValue]:
    out: dict[str, JsonValue] = {
        "id": result.item_id,
        "kind": "single",
        "checks": [
            {"id": c.check_id, "gold": c.gold, "judged": c.judged, "error": c.error}
            for c in result.checks
        ],
    }
    if result.probe is not None:
        out["probe"] = result.probe
    return out


def _pair_json(result: PairResult) -> dict[str, JsonValue]:
    out: dict[str, JsonValue] = {
        "id": result.item_id,
        "kind": "pair",
        "gold": result.gold,
        "judged": result.judged,
        "ab": result.ab,
        "ba": result.ba,
        "error": result.error,
    }
    if result.probe is not None:
        out["probe"] = result.probe
    if result.longer is not None:
        out["longer"] = result.longer
    return out
