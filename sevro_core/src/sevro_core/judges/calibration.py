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
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from attrs import evolve, frozen

from sevro_core.errors import ConfigurationError, GradingError, InvocationError, SevroError
from sevro_core.formats.canonical import hash_json
from sevro_core.formats.jsonio import JsonValue
from sevro_core.formats.schemas import validate_output
from sevro_core.judges.corpus import Corpus, PairItem, SingleItem, load_corpus
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
    HostOptions,
    JudgedResult,
    PluginLookup,
    Rubric,
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


PairJudge = Callable[[ComparisonSubject], PairDecisions]
"""Judges one subject in both orders (the core's ``judge_pair`` with the registered rubric)."""


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
    judges: TrialJudges,
    *,
    semantic: Grader | None,
    judge_pair: PairJudge | None,
) -> Calibration:
    """Judge every item of ``corpus``; exit 64 before any call if a needed judge is missing."""
    compiled = _compile_singles(corpus.singles, judges, semantic)
    if corpus.pairs and (judge_pair is None or not judges.available(COMPARATOR_ROLE)):
        raise InvocationError(
            f"the corpus has pairs but no comparator judge ({COMPARATOR_ROLE}) is configured",
            source=corpus.source,
        )
    with tempfile.TemporaryDirectory(prefix="sevro-calibration-") as empty:
        singles = tuple(
            _grade_single(item, compiled[item.id], judges, Path(empty)) for item in corpus.singles
        )
    pairs = tuple(_judge_pair(item, judge_pair) for item in corpus.pairs if judge_pair)
    return Calibration(corpus, singles, pairs)


def _compile_singles(
    items: Sequence[SingleItem], judges: TrialJudges, semantic: Grader | None
) -> dict[str, list[CompiledCheck]]:
    if not items:
        return {}
    if semantic is None or not judges.available(SEMANTIC_ROLE):
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


def _judge_pair(item: PairItem, judge_pair: PairJudge) -> PairResult:
    try:
        decided = judge_pair(subject(item))
    except GradingError as exc:
        decided = PairDecisions(None, None, f"grading error: {exc}")
    error = _bounded(decided.error) if decided.error is not None else None
    return PairResult(item.id, item.gold, decided.ab, decided.ba, error, item.probe, item.longer)


def _bounded(text: str) -> str:
    flat = " ".join(text.split())
    if len(flat) <= MAX_CALIBRATION_ERROR_CHARS:
        return flat
    return flat[: MAX_CALIBRATION_ERROR_CHARS - 1] + "…"


def record(calibration: Calibration, identity: JudgeIdentity, version: str) -> dict[str, JsonValue]:
    """The ``sevro.judge-calibration.v1`` document (checked against its schema)."""
    corpus = calibration.corpus
    document: dict[str, JsonValue] = {
        "format": RECORD_FORMAT,
        "sevroVersion": version,
        "judge": identity.to_json(),
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


@frozen
class CalibrationSetup:
    """Everything a calibration needs, resolved and checked before any judge is asked."""

    corpus: Corpus
    hosts: Mapping[str, ConfiguredHost]
    """The judge host configured for each role the corpus needs (``semantic``, ``comparator``)."""
    identity: JudgeIdentity
    semantic: Grader | None
    rubric: Rubric | None


def prepare_calibration(
    registry: PluginLookup,
    corpus_path: Path | None,
    host_id: str,
    options: HostOptions,
    rubric_id: str | None,
) -> CalibrationSetup:
    """Load the corpus, configure the judge host for each role it needs and find the semantic
    grader and the rubric; exit 64 on the first thing that cannot run."""
    corpus = load_corpus(corpus_path)
    roles = ((SEMANTIC_ROLE,) if corpus.singles else ()) + (
        (COMPARATOR_ROLE,) if corpus.pairs else ()
    )
    hosts = {role: _configure(registry, host_id, evolve(options, role=role)) for role in roles}
    identities = {judge_identity(host) for host in hosts.values()}
    if len(identities) != 1:
        raise InvocationError(
            f"host {host_id} configures its semantic and comparator judges differently; "
            "calibrate a corpus of one kind at a time"
        )
    semantic = registry.grader(SEMANTIC_GRADER) if corpus.singles else None
    if corpus.singles and semantic is None:
        raise InvocationError(f"the corpus has single items but no {SEMANTIC_GRADER} grader")
    return CalibrationSetup(
        corpus, hosts, identities.pop(), semantic, _rubric(registry, rubric_id, corpus)
    )


def _configure(registry: PluginLookup, host_id: str, options: HostOptions) -> ConfiguredHost:
    host = registry.host(host_id)
    if host is None:
        raise InvocationError(f"--host {host_id!r} is not installed")
    try:
        return host.configure(options)
    except ConfigurationError as exc:
        source = options.config_source or "--host-config"
        raise InvocationError(exc.message, source=source, pointer=exc.pointer) from None


def _rubric(registry: PluginLookup, rubric_id: str | None, corpus: Corpus) -> Rubric | None:
    if not corpus.pairs:
        return None
    known = registry.ids("rubric")
    if rubric_id is None:
        if len(known) != 1:
            raise InvocationError(
                f"the corpus has pairs: choose the comparator's rubric with --rubric "
                f"(installed: {', '.join(known) or 'none'})"
            )
        rubric_id = known[0]
    found = registry.rubric(rubric_id)
    if found is None:
        raise InvocationError(
            f"--rubric {rubric_id!r} is not installed (installed: {', '.join(known) or 'none'})"
        )
    return found


def judge_session(hosts: Mapping[str, ConfiguredHost]) -> TrialJudges:
    """The judges calibration asks: the core's judge session over ``hosts`` (one empty,
    sandboxed, passive run per prompt, every call recorded)."""
    del hosts
    raise CalibrationUnavailable(
        "sevro judge calibrate needs the judge session (sevro_core.judges.session), "
        "which this build does not have yet"
    )


def pair_judge(rubric: Rubric, judges: TrialJudges) -> PairJudge:
    """The core's two-order comparison (``judge_pair``) with ``rubric``."""
    del rubric, judges
    raise CalibrationUnavailable(
        "sevro judge calibrate needs the core's pairwise comparison "
        "(sevro_core.judges.comparator), which this build does not have yet"
    )


class CalibrationUnavailable(SevroError):
    """A piece of the production judging path is missing: an internal error (exit 70)."""

    code = "sevro.judge.unavailable"


def run_calibration(setup: CalibrationSetup, version: str) -> dict[str, JsonValue]:
    """Calibrate the set-up judge and return its record."""
    judges = judge_session(setup.hosts)
    comparison = pair_judge(setup.rubric, judges) if setup.rubric is not None else None
    calibration = calibrate(setup.corpus, judges, semantic=setup.semantic, judge_pair=comparison)
    return record(calibration, setup.identity, version)
