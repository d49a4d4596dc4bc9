"""``evaluate``: the request the engine builds for one trial and the rules its answer must keep.

An extension is untrusted, so its schema-valid answer still has to survive the runtime rules of
Sevro's protocol v1 (docs/extensions.md, "Evaluate: runtime rules"): ids unique and under the
extension's namespace, checks the case declared, a ``passed`` item citing known and complete
evidence only, a recommendation exactly when a policy is selected, metrics finite. Any broken
rule raises :class:`ExtensionProtocolError` with one line naming the id and the rule; the engine
makes it a grading error, never a pass. Pure functions: no process, no file, no clock.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Protocol

from attrs import frozen

from sevro_core.api import (
    FINAL_MESSAGE_OBSERVATION,
    CheckOutcome,
    CheckStatus,
    Completeness,
    Execution,
    JsonValue,
    Observation,
    describe_first_error,
)
from sevro_core.api import validator as schema_validator
from sevro_extensions.envelope import EXTENSION_PROTOCOL, PACKAGE, is_namespaced, schema_name
from sevro_extensions.errors import ExtensionProtocolError, shown
from sevro_extensions.limits import MAX_EVALUATE_DETAIL_CHARS

MAX_PROTOCOL_ID_CHARS: Final = 128
"""The schema's bound on a plain id (a built-in check, an artifact, an evidence reference)."""
MAX_FILE_URL_CHARS: Final = 4096
"""The schema's bound on an artifact's ``file:///`` URL."""
_DIGEST_CHARS: Final = frozenset("0123456789abcdef")
_MISSING_DETAIL: Final = "the extension returned no result for this declared check"


class EvaluationArtifactLike(Protocol):
    """A preparation artifact as installed in the trial's workspace (E's ``EvaluationArtifact``)."""

    @property
    def id(self) -> str: ...
    @property
    def path(self) -> Path: ...
    @property
    def sha256(self) -> str: ...
    @property
    def git_exclude(self) -> bool | None: ...
    @property
    def executable(self) -> bool | None: ...


class EvaluationInputLike(Protocol):
    """What one trial hands to ``evaluate`` (E's frozen ``EvaluationInput`` fits it)."""

    @property
    def case_id(self) -> str: ...
    @property
    def execution(self) -> Execution: ...
    @property
    def error_code(self) -> str | None: ...
    @property
    def observations(self) -> Mapping[str, Observation]: ...
    @property
    def builtin(self) -> Sequence[CheckOutcome]: ...
    @property
    def artifacts(self) -> Sequence[EvaluationArtifactLike]: ...
    @property
    def final_message(self) -> str | None: ...


@frozen
class CheckedEvaluation:
    """An ``evaluate`` answer that kept every runtime rule, in the engine's terms.

    ``outcomes`` has one entry per declared extension check, in declaration order; a check the
    extension left out is ``unavailable`` (Sevro: missing declared checks stay unavailable).
    """

    outcomes: tuple[CheckOutcome, ...]
    metrics: tuple[Mapping[str, JsonValue], ...]
    domain_outcomes: tuple[Mapping[str, JsonValue], ...]
    recommendation: str | None

    def to_json(self) -> dict[str, JsonValue]:
        """What evidence may retain of the answer (the configuration never reaches it)."""
        return {
            "checks": [outcome.to_json() for outcome in self.outcomes],
            "metrics": [dict(metric) for metric in self.metrics],
            "domainOutcomes": [dict(outcome) for outcome in self.domain_outcomes],
            "taskVerdictRecommendation": self.recommendation,
        }


# ---- the request ------------------------------------------------------------------------------


def evaluate_params(
    trial: EvaluationInputLike,
    *,
    extension_data: Mapping[str, JsonValue],
    policy: str | None,
    configuration: JsonValue,
) -> dict[str, JsonValue]:
    """The ``params`` of one trial's ``evaluate`` request, inside the published schema's bounds.

    Items the schema cannot carry (an id over 128 characters, a non-namespaced observation id, a
    malformed digest) are left out rather than cut, so the extension never sees a forged id; the
    same items are absent from :func:`availability_map`, so nothing can cite them.
    """
    execution: dict[str, JsonValue] = {"status": trial.execution.value}
    if trial.error_code is not None and is_namespaced(trial.error_code):
        execution["errorCode"] = trial.error_code
    params: dict[str, JsonValue] = {
        "caseId": trial.case_id,
        "execution": execution,
        "observations": [_observation(o, trial.final_message) for o in _sent_observations(trial)],
        "builtinChecks": [_builtin(outcome) for outcome in _sent_builtin(trial)],
        "artifacts": [_artifact(artifact) for artifact in _sent_artifacts(trial)],
        "extensionData": dict(extension_data),
        "configuration": configuration,
    }
    if policy is not None:
        params["selectedTaskVerdictPolicy"] = policy
    return params


def merged_extension_data(
    resolved: Mapping[str, JsonValue], prepared: Mapping[str, JsonValue]
) -> dict[str, JsonValue]:
    """Sevro's ``extensionData`` for ``evaluate``: the case's from ``resolve``, then ``prepare``'s
    (a key both name takes ``prepare``'s value, the later word of the extension)."""
    return {**resolved, **prepared}


def availability_map(trial: EvaluationInputLike) -> dict[str, bool]:
    """Every id a ``passed`` item may cite, and whether it is complete evidence.

    Observations count by their completeness, preparation artifacts are complete, built-in
    checks are complete unless ``unavailable``. An id two kinds share is complete only when both
    are, so a name clash can never upgrade missing evidence.
    """
    entries: list[tuple[str, bool]] = [
        (o.id, o.completeness is Completeness.COMPLETE) for o in _sent_observations(trial)
    ]
    entries += [(a.id, True) for a in _sent_artifacts(trial)]
    entries += [(c.id, c.status is not CheckStatus.UNAVAILABLE) for c in _sent_builtin(trial)]
    available: dict[str, bool] = {}
    for key, complete in entries:
        available[key] = available.get(key, True) and complete
    return available


def _sent_observations(trial: EvaluationInputLike) -> Iterator[Observation]:
    for key, observation in trial.observations.items():
        if key == observation.id and is_namespaced(observation.id) and _fits(observation.source):
            yield observation


def _sent_builtin(trial: EvaluationInputLike) -> Iterator[CheckOutcome]:
    seen: set[str] = set()
    for outcome in trial.builtin:
        if _fits(outcome.id) and outcome.id not in seen:
            seen.add(outcome.id)
            yield outcome


def _sent_artifacts(trial: EvaluationInputLike) -> Iterator[EvaluationArtifactLike]:
    seen: set[str] = set()
    for artifact in trial.artifacts:
        if not (_fits(artifact.id) and _is_digest(artifact.sha256)) or artifact.id in seen:
            continue
        if not artifact.path.is_absolute() or len(artifact.path.as_uri()) > MAX_FILE_URL_CHARS:
            continue
        seen.add(artifact.id)
        yield artifact


def _observation(observation: Observation, final_message: str | None) -> dict[str, JsonValue]:
    data: dict[str, JsonValue] = dict(observation.data)
    if observation.id == FINAL_MESSAGE_OBSERVATION and final_message is not None:
        data["text"] = final_message
    return {
        "id": observation.id,
        "source": observation.source,
        "completeness": observation.completeness.value,
        "data": data,
    }


def _builtin(outcome: CheckOutcome) -> dict[str, JsonValue]:
    out: dict[str, JsonValue] = {"id": outcome.id, "status": outcome.status.value}
    if outcome.detail is not None:
        out["detail"] = _bounded_text(outcome.detail, MAX_EVALUATE_DETAIL_CHARS)
    out["evidenceRefs"] = list(dict.fromkeys(r for r in outcome.evidence_refs if _fits(r)))
    return out


def _artifact(artifact: EvaluationArtifactLike) -> dict[str, JsonValue]:
    out: dict[str, JsonValue] = {
        "id": artifact.id,
        "path": artifact.path.as_uri(),
        "sha256": artifact.sha256,
    }
    if artifact.git_exclude is not None:
        out["gitExclude"] = artifact.git_exclude
    if artifact.executable is not None:
        out["executable"] = artifact.executable
    return out


def _fits(value: str) -> bool:
    return 1 <= len(value) <= MAX_PROTOCOL_ID_CHARS


def _is_digest(value: str) -> bool:
    return len(value) == 64 and set(value) <= _DIGEST_CHARS


def _bounded_text(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def evaluates(execution: Execution, *, grader_error: bool) -> bool:
    """Whether the trial reaches ``evaluate`` (Sevro): only after a completed execution and
    built-in grading without an error; a built-in check that merely failed does not stop it."""
    return execution is Execution.COMPLETED and not grader_error


def unanswered(
    declared: Collection[str], *, extension_id: str, detail: str
) -> tuple[CheckOutcome, ...]:
    """The declared extension checks of a trial ``evaluate`` did not answer (skipped, or its
    call failed): each ``unavailable`` with ``detail``, never passed."""
    return _outcomes(
        (), declared, extension_id, missing=_bounded_text(detail, MAX_EVALUATE_DETAIL_CHARS)
    )


# ---- the answer -------------------------------------------------------------------------------


def check_evaluation(
    result: Mapping[str, Any] | JsonValue,
    *,
    extension_id: str,
    declared: Collection[str],
    availability: Mapping[str, bool],
    policy: str | None,
) -> CheckedEvaluation:
    """The ``evaluate`` result if it keeps every runtime rule; else one-line
    :class:`ExtensionProtocolError`.

    ``declared`` holds the case's extension check ids; a ``Mapping`` from check id to its
    declared grader also names the grader each outcome records (otherwise the extension id).
    ``availability`` is :func:`availability_map` of the same trial. ``result`` may come straight
    from :func:`sevro_extensions.client.call_method`; it is checked against the response schema
    again here, so a caller cannot hand over an unchecked one.
    """
    answer = _schema_checked(result)
    checks: list[Mapping[str, Any]] = list(answer["checks"])
    outcomes: list[Mapping[str, Any]] = list(answer.get("domainOutcomes", []))
    _check_ids([("check", c["id"]) for c in checks], extension_id)
    _check_ids([("domain outcome", o["id"]) for o in outcomes], extension_id)
    for check in checks:
        if check["id"] not in declared:
            raise ExtensionProtocolError(
                f"extension {extension_id} returned check {shown(check['id'])}, "
                "which the case does not declare"
            )
    for kind, item in [("check", c) for c in checks] + [("domain outcome", o) for o in outcomes]:
        _check_citations(kind, item, availability)
    metrics = _checked_metrics(answer["metrics"], extension_id)
    recommendation = _checked_recommendation(answer, policy)
    return CheckedEvaluation(
        outcomes=_outcomes(checks, declared, extension_id),
        metrics=metrics,
        domain_outcomes=tuple(_domain_outcome(o) for o in outcomes),
        recommendation=recommendation,
    )


def _schema_checked(result: Mapping[str, Any] | JsonValue) -> Mapping[str, Any]:
    """The answer as the response schema allows it, or a one-line refusal."""
    body = dict(result) if isinstance(result, Mapping) else result
    document = {"protocol": EXTENSION_PROTOCOL, "id": "checked", "method": "evaluate"}
    checker = schema_validator(schema_name("evaluate", "response"), PACKAGE)
    found = describe_first_error(checker.iter_errors({**document, "result": body}))
    if found is not None:
        pointer, message = found
        raise ExtensionProtocolError(
            f"extension evaluate response is invalid: {pointer or '/'}: {message}"
        )
    if not isinstance(body, dict):  # the schema makes it one; keep mypy honest
        raise ExtensionProtocolError("extension evaluate result is not an object")
    return body


def _check_ids(items: Sequence[tuple[str, str]], extension_id: str) -> None:
    prefix = f"{extension_id}."
    seen: set[str] = set()
    for kind, item_id in items:
        if not item_id.startswith(prefix):
            raise ExtensionProtocolError(
                f"extension {extension_id} returned {kind} {shown(item_id)}, "
                f"whose id is not under its namespace {prefix!r}"
            )
        if item_id in seen:
            raise ExtensionProtocolError(
                f"extension {extension_id} returned {kind} {shown(item_id)} twice "
                f"({kind} ids must be unique)"
            )
        seen.add(item_id)


def _check_citations(kind: str, item: Mapping[str, Any], availability: Mapping[str, bool]) -> None:
    """A ``passed`` item must rest on evidence that exists and is complete."""
    if item["status"] != CheckStatus.PASSED.value:
        return
    name = f"{kind} {shown(item['id'])} passed"
    for ref in item["evidenceRefs"]:  # at least one: the schema's citedResult refuses none
        if ref not in availability:
            raise ExtensionProtocolError(f"{name} citing {shown(ref)}, which is no known evidence")
        if not availability[ref]:
            raise ExtensionProtocolError(
                f"{name} citing {shown(ref)}, which is not complete evidence "
                "(partial or unavailable evidence never passes)"
            )


def _checked_metrics(
    metrics: Iterable[Mapping[str, Any]], extension_id: str
) -> tuple[Mapping[str, JsonValue], ...]:
    prefix = f"{extension_id}."
    seen: set[str] = set()
    out: list[Mapping[str, JsonValue]] = []
    for metric in metrics:
        metric_id, value = metric["id"], metric["value"]
        if not metric_id.startswith(prefix):
            raise ExtensionProtocolError(
                f"extension {extension_id} returned metric {shown(metric_id)}, "
                f"whose id is not under its namespace {prefix!r}"
            )
        if metric_id in seen:
            raise ExtensionProtocolError(
                f"extension {extension_id} returned metric {shown(metric_id)} twice"
            )
        if value is not None and not _is_finite_number(value):
            raise ExtensionProtocolError(
                f"metric {shown(metric_id)} has value {value!r}; "
                "a metric is a finite number or null"
            )
        seen.add(metric_id)
        out.append({"id": metric_id, "value": value, "unit": metric["unit"]})
    return tuple(out)


def _is_finite_number(value: object) -> bool:
    """A JSON number a double can hold (an integer beyond it is Infinity in most languages)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def _checked_recommendation(result: Mapping[str, Any], policy: str | None) -> str | None:
    recommendation: str | None = result.get("taskVerdictRecommendation")
    if recommendation is not None and policy is None:
        raise ExtensionProtocolError(
            f"extension recommended the task verdict {shown(recommendation)}, "
            "but no task-verdict policy is selected"
        )
    if recommendation is None and policy is not None:
        raise ExtensionProtocolError(
            f"task-verdict policy {shown(policy)} is selected, "
            "but the extension returned no taskVerdictRecommendation"
        )
    return recommendation


def _outcomes(
    checks: Sequence[Mapping[str, Any]],
    declared: Collection[str],
    extension_id: str,
    *,
    missing: str = _MISSING_DETAIL,
) -> tuple[CheckOutcome, ...]:
    """One outcome per declared check, in declaration order; a missing one is unavailable."""
    returned = {check["id"]: check for check in checks}
    out: list[CheckOutcome] = []
    for check_id in declared:
        grader = declared[check_id] if isinstance(declared, Mapping) else extension_id
        check = returned.get(check_id)
        if check is None:
            out.append(CheckOutcome(check_id, grader, CheckStatus.UNAVAILABLE, missing))
            continue
        detail = check.get("detail")
        out.append(
            CheckOutcome(
                id=check_id,
                grader=grader,
                status=CheckStatus(check["status"]),
                detail=None if detail is None else _bounded_text(detail, MAX_EVALUATE_DETAIL_CHARS),
                evidence_refs=tuple(check["evidenceRefs"]),
            )
        )
    return tuple(out)


def _domain_outcome(outcome: Mapping[str, Any]) -> Mapping[str, JsonValue]:
    out: dict[str, JsonValue] = {"id": outcome["id"], "status": outcome["status"]}
    if "detail" in outcome:
        out["detail"] = _bounded_text(outcome["detail"], MAX_EVALUATE_DETAIL_CHARS)
    out["evidenceRefs"] = list(outcome["evidenceRefs"])
    if "data" in outcome:
        out["data"] = outcome["data"]
    return out
