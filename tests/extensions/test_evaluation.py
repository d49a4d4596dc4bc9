"""``evaluate``: the request sevro builds and every runtime rule its answer must keep.

Each rule has a positive control (an honest answer passes through) and a negative one (a lying
answer is refused with one line naming the id and the rule), first on literal answers, then
against the real Node reference extension told to lie through its configuration.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
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
from sevro_extensions.envelope import new_request
from sevro_extensions.errors import ExtensionProtocolError
from sevro_extensions.evaluation import (
    CheckedEvaluation,
    availability_map,
    check_evaluation,
    evaluate_params,
    evaluates,
    merged_extension_data,
    unanswered,
)
from sevro_extensions.limits import MAX_EVALUATE_DETAIL_CHARS
from tests.extensions.conftest import REFERENCE, run

EXT = "sevro-test.reference"
ANSWER = f"{EXT}.answer"
DIGEST = hashlib.sha256(b"notes\n").hexdigest()


@frozen
class Artifact:
    id: str
    path: Path
    sha256: str
    git_exclude: bool | None = None
    executable: bool | None = None


@frozen
class Trial:
    """Stands in for the core's frozen ``EvaluationInput`` (same attribute names)."""

    case_id: str
    execution: Execution
    error_code: str | None
    observations: Mapping[str, Observation]
    builtin: tuple[CheckOutcome, ...]
    artifacts: tuple[Artifact, ...]
    final_message: str | None


def _final(text: str | None, completeness: Completeness = Completeness.COMPLETE) -> Observation:
    data: dict[str, JsonValue] = {} if text is None else {"byteLength": len(text.encode())}
    return Observation(FINAL_MESSAGE_OBSERVATION, "sevro.engine", completeness, data)


def trial(
    text: str | None = "hello there",
    *,
    final: Completeness = Completeness.COMPLETE,
    extra: tuple[Observation, ...] = (),
    builtin: tuple[CheckOutcome, ...] = (),
    artifacts: tuple[Artifact, ...] = (),
    execution: Execution = Execution.COMPLETED,
    error_code: str | None = None,
) -> Trial:
    observations = {o.id: o for o in (_final(text, final), *extra)}
    return Trial("greets", execution, error_code, observations, builtin, artifacts, text)


PARTIAL = Observation("sevro.commands", "codex", Completeness.PARTIAL, {"commands": []})
GONE = Observation("sevro.skills", "codex", Completeness.UNAVAILABLE, {})
OUTPUT = CheckOutcome("output", "sevro.output", CheckStatus.PASSED, evidence_refs=("x",))
SHELL = CheckOutcome("tests-pass", "sevro.shell", CheckStatus.UNAVAILABLE, "no sandbox")
NOTES = Artifact("notes", Path("/tmp/ws/notes/PREPARED.md"), DIGEST, git_exclude=True)
RICH = trial(extra=(PARTIAL, GONE), builtin=(OUTPUT, SHELL), artifacts=(NOTES,))
AVAILABLE = availability_map(RICH)


def _request_problem(params: Mapping[str, JsonValue]) -> str | None:
    document = {"protocol": "sevro.extension.v1", "id": "x", "method": "evaluate", "params": params}
    checker = schema_validator("extension-evaluate-request.v1", "sevro_extensions")
    found = describe_first_error(checker.iter_errors(document))
    return None if found is None else f"{found[0]}: {found[1]}"


# ---- the request ------------------------------------------------------------------------------


def test_the_request_carries_the_trial_as_the_schema_wants() -> None:
    data = merged_extension_data(
        {f"{EXT}.case": {"word": "hello"}, f"{EXT}.both": 1}, {f"{EXT}.both": 2}
    )
    params = evaluate_params(
        RICH, extension_data=data, policy=f"{EXT}.strict", configuration={"secret": "s"}
    )
    assert _request_problem(params) is None
    new_request("evaluate", params)  # the envelope's own check agrees
    assert params["caseId"] == "greets"
    assert params["execution"] == {"status": "completed"}
    final = params["observations"][0]  # type: ignore[index]
    assert final == {
        "id": FINAL_MESSAGE_OBSERVATION,
        "source": "sevro.engine",
        "completeness": "complete",
        "data": {"byteLength": 11, "text": "hello there"},
    }
    assert [o["id"] for o in params["observations"]] == [  # type: ignore[union-attr]
        FINAL_MESSAGE_OBSERVATION,
        "sevro.commands",
        "sevro.skills",
    ]
    assert params["builtinChecks"] == [
        {"id": "output", "status": "passed", "evidenceRefs": ["x"]},
        {"id": "tests-pass", "status": "unavailable", "detail": "no sandbox", "evidenceRefs": []},
    ]
    assert params["artifacts"] == [
        {
            "id": "notes",
            "path": "file:///tmp/ws/notes/PREPARED.md",
            "sha256": DIGEST,
            "gitExclude": True,
        }
    ]
    assert params["extensionData"] == {f"{EXT}.case": {"word": "hello"}, f"{EXT}.both": 2}
    assert params["selectedTaskVerdictPolicy"] == f"{EXT}.strict"
    assert params["configuration"] == {"secret": "s"}


def test_no_policy_means_no_selected_policy_and_no_final_text_means_no_text() -> None:
    silent = trial(None, final=Completeness.UNAVAILABLE, execution=Execution.FAILED)
    params = evaluate_params(silent, extension_data={}, policy=None, configuration={})
    assert _request_problem(params) is None
    assert "selectedTaskVerdictPolicy" not in params
    assert params["execution"] == {"status": "failed"}
    assert params["observations"][0]["data"] == {}  # type: ignore[index]


def test_a_partial_final_message_is_sent_with_its_text_and_marked_partial() -> None:
    params = evaluate_params(
        trial("hel", final=Completeness.PARTIAL), extension_data={}, policy=None, configuration={}
    )
    sent = params["observations"][0]  # type: ignore[index]
    assert sent["completeness"] == "partial" and sent["data"]["text"] == "hel"


def test_everything_beyond_the_schema_is_cut_or_left_out() -> None:
    long_id = "c" * 129
    wild = trial(
        extra=(
            Observation("not namespaced", "codex", Completeness.COMPLETE, {}),
            Observation("sevro.far", "s" * 129, Completeness.COMPLETE, {}),
        ),
        builtin=(
            CheckOutcome("verbose", "sevro.shell", CheckStatus.FAILED, "d" * 5000),
            CheckOutcome(long_id, "sevro.shell", CheckStatus.PASSED),
            CheckOutcome("refs", "sevro.shell", CheckStatus.PASSED, evidence_refs=("a", "a", "")),
            CheckOutcome("refs", "sevro.shell", CheckStatus.FAILED),
        ),
        artifacts=(
            Artifact("bad-digest", Path("/tmp/a"), "ABC"),
            Artifact("relative", Path("a/b"), DIGEST),
            Artifact("deep", Path("/" + "d/" * 2100), DIGEST),
            NOTES,
            Artifact("notes", Path("/tmp/other"), DIGEST),
        ),
        error_code="Not Namespaced",
    )
    params = evaluate_params(wild, extension_data={}, policy=None, configuration={})
    assert _request_problem(params) is None
    assert params["execution"] == {"status": "completed"}
    assert [o["id"] for o in params["observations"]] == [FINAL_MESSAGE_OBSERVATION]  # type: ignore[union-attr]
    checks: Any = params["builtinChecks"]
    assert [c["id"] for c in checks] == ["verbose", "refs"]
    assert len(checks[0]["detail"]) == MAX_EVALUATE_DETAIL_CHARS
    assert checks[0]["detail"].endswith("...")
    assert checks[1]["evidenceRefs"] == ["a"]
    assert [a["path"] for a in params["artifacts"]] == ["file:///tmp/ws/notes/PREPARED.md"]  # type: ignore[union-attr]
    # what is not sent cannot be cited
    available = availability_map(wild)
    assert long_id not in available and "bad-digest" not in available
    assert "not namespaced" not in available and available["refs"] is True


def test_negative_control_the_schema_refuses_what_the_bounding_removes() -> None:
    """Without the bounds above the request would be refused, so that test can fail."""
    params = evaluate_params(RICH, extension_data={}, policy=None, configuration={})
    for path, bad in (
        (("builtinChecks", 0, "detail"), "d" * 5000),
        (("builtinChecks", 0, "id"), "c" * 129),
        (("observations", 0, "id"), "not namespaced"),
        (("artifacts", 0, "sha256"), "ABC"),
        (("artifacts", 0, "path"), "a/b"),
        (("execution", "errorCode"), "Not Namespaced"),
    ):
        broken: Any = copy.deepcopy(params)
        target = broken
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = bad
        assert _request_problem(broken) is not None, path


def test_the_availability_map_follows_completeness_artifacts_and_builtin_status() -> None:
    assert AVAILABLE == {
        FINAL_MESSAGE_OBSERVATION: True,
        "sevro.commands": False,
        "sevro.skills": False,
        "notes": True,
        "output": True,
        "tests-pass": False,
    }
    assert availability_map(trial(final=Completeness.PARTIAL))[FINAL_MESSAGE_OBSERVATION] is False


def test_an_id_two_kinds_share_is_complete_only_when_both_are() -> None:
    clash = trial(
        builtin=(CheckOutcome("notes", "sevro.shell", CheckStatus.UNAVAILABLE),),
        artifacts=(NOTES,),
    )
    assert availability_map(clash)["notes"] is False
    fine = trial(
        builtin=(CheckOutcome("notes", "sevro.shell", CheckStatus.FAILED),), artifacts=(NOTES,)
    )
    assert availability_map(fine)["notes"] is True
    shadow = Observation("acme.notes", "codex", Completeness.PARTIAL, {})
    later = trial(extra=(shadow,), artifacts=(Artifact("acme.notes", Path("/tmp/n"), DIGEST),))
    assert availability_map(later)["acme.notes"] is False


# ---- the answer -------------------------------------------------------------------------------

DECLARED = {ANSWER: ANSWER, f"{EXT}.style": f"{EXT}.style-grader"}


def honest() -> dict[str, Any]:
    return {
        "checks": [
            {"id": ANSWER, "status": "passed", "detail": "said hello",
             "evidenceRefs": [FINAL_MESSAGE_OBSERVATION, "notes", "output"]},
            {"id": f"{EXT}.style", "status": "failed", "evidenceRefs": ["sevro.commands"]},
        ],
        "metrics": [
            {"id": f"{EXT}.length", "value": 11, "unit": "characters"},
            {"id": f"{EXT}.score", "value": None, "unit": "points"},
        ],
        "domainOutcomes": [
            {"id": f"{EXT}.domain.greeting", "status": "passed",
             "evidenceRefs": [FINAL_MESSAGE_OBSERVATION], "data": {"word": "hello"}},
        ],
    }  # fmt: skip


def checked(result: Mapping[str, Any], policy: str | None = None, **kw: Any) -> CheckedEvaluation:
    return check_evaluation(
        result,
        extension_id=kw.get("extension_id", EXT),
        declared=kw.get("declared", DECLARED),
        availability=kw.get("availability", AVAILABLE),
        policy=policy,
    )


def test_an_honest_answer_becomes_outcomes_metrics_and_domain_outcomes() -> None:
    result = checked(honest())
    assert result.outcomes == (
        CheckOutcome(
            ANSWER,
            ANSWER,
            CheckStatus.PASSED,
            "said hello",
            (FINAL_MESSAGE_OBSERVATION, "notes", "output"),
        ),
        CheckOutcome(
            f"{EXT}.style", f"{EXT}.style-grader", CheckStatus.FAILED, None, ("sevro.commands",)
        ),
    )
    assert result.metrics == (
        {"id": f"{EXT}.length", "value": 11, "unit": "characters"},
        {"id": f"{EXT}.score", "value": None, "unit": "points"},
    )
    assert result.domain_outcomes == (
        {
            "id": f"{EXT}.domain.greeting",
            "status": "passed",
            "evidenceRefs": [FINAL_MESSAGE_OBSERVATION],
            "data": {"word": "hello"},
        },
    )
    assert result.recommendation is None


def test_the_checked_answer_as_evidence_json() -> None:
    record = checked(honest() | {"taskVerdictRecommendation": "passed"}, f"{EXT}.strict").to_json()
    assert record["checks"] == [
        {
            "id": ANSWER,
            "grader": ANSWER,
            "status": "passed",
            "detail": "said hello",
            "evidenceRefs": [FINAL_MESSAGE_OBSERVATION, "notes", "output"],
        },
        {
            "id": f"{EXT}.style",
            "grader": f"{EXT}.style-grader",
            "status": "failed",
            "evidenceRefs": ["sevro.commands"],
        },
    ]
    assert record["taskVerdictRecommendation"] == "passed"
    assert [m["id"] for m in record["metrics"]] == [f"{EXT}.length", f"{EXT}.score"]  # type: ignore[index,union-attr]
    assert record["domainOutcomes"] == [dict(checked(honest()).domain_outcomes[0])]


def test_a_result_that_is_not_an_object_is_refused() -> None:
    for wrong in (None, [], "checks"):
        with pytest.raises(
            ExtensionProtocolError, match=r"^extension evaluate response is invalid: /result"
        ):
            checked(wrong)  # type: ignore[arg-type]


def test_a_declared_check_left_out_is_unavailable_never_passed() -> None:
    answer = honest()
    answer["checks"] = answer["checks"][:1]
    outcomes = checked(answer).outcomes
    assert outcomes[1].id == f"{EXT}.style"
    assert outcomes[1].status is CheckStatus.UNAVAILABLE
    assert outcomes[1].detail == "the extension returned no result for this declared check"


def test_evaluate_runs_only_after_completed_execution_and_error_free_grading() -> None:
    assert evaluates(Execution.COMPLETED, grader_error=False)
    assert not evaluates(Execution.COMPLETED, grader_error=True)
    for execution in (Execution.FAILED, Execution.CANCELLED, Execution.NOT_RUN):
        assert not evaluates(execution, grader_error=False)


def test_unanswered_declared_checks_are_unavailable_with_the_reason() -> None:
    outcomes = unanswered(DECLARED, extension_id=EXT, detail="x" * 5000)
    assert [(o.id, o.grader, o.status) for o in outcomes] == [
        (ANSWER, ANSWER, CheckStatus.UNAVAILABLE),
        (f"{EXT}.style", f"{EXT}.style-grader", CheckStatus.UNAVAILABLE),
    ]
    assert all(len(o.detail or "") == MAX_EVALUATE_DETAIL_CHARS for o in outcomes)
    assert unanswered({}, extension_id=EXT, detail="skipped") == ()


def test_declared_ids_without_graders_record_the_extension_as_grader() -> None:
    outcomes = checked(honest(), declared=[ANSWER, f"{EXT}.style"]).outcomes
    assert [o.grader for o in outcomes] == [EXT, EXT]


def test_a_declared_check_outside_the_namespace_can_only_stay_unavailable() -> None:
    answer = honest() | {"checks": []}
    (outcome,) = checked(answer, declared={"acme.answer": ANSWER}).outcomes
    assert (outcome.id, outcome.grader, outcome.status) == (
        "acme.answer",
        ANSWER,
        CheckStatus.UNAVAILABLE,
    )
    with pytest.raises(ExtensionProtocolError, match="whose id is not under its namespace"):
        lone = {"id": "acme.answer", "status": "failed", "evidenceRefs": []}
        checked(honest() | {"checks": [lone]}, declared={"acme.answer": ANSWER})


def test_a_domain_outcome_may_share_its_id_with_a_check() -> None:
    """Checks and domain outcomes are separate lists in evidence, as in Sevro's answer."""
    answer = honest()
    answer["domainOutcomes"][0]["id"] = ANSWER
    assert checked(answer).domain_outcomes[0]["id"] == ANSWER


def test_failed_and_unavailable_items_may_cite_anything() -> None:
    """Only a pass must rest on complete evidence; a failure citing partial evidence is fine."""
    answer = honest()
    answer["checks"][1]["evidenceRefs"] = ["sevro.skills", "unknown-thing"]
    answer["domainOutcomes"][0] = {
        "id": f"{EXT}.domain.greeting", "status": "unavailable", "evidenceRefs": ["sevro.commands"],
    }  # fmt: skip
    assert checked(answer).outcomes[1].status is CheckStatus.FAILED


def test_a_selected_policy_and_its_recommendation_go_together() -> None:
    answer = honest() | {"taskVerdictRecommendation": "failed"}
    assert checked(answer, policy=f"{EXT}.strict").recommendation == "failed"


def _lie(change: str) -> dict[str, Any]:
    answer = honest()
    checks, outcomes = answer["checks"], answer["domainOutcomes"]
    if change == "foreign-check":
        checks[1]["id"] = "acme.style"
    elif change == "foreign-outcome":
        outcomes[0]["id"] = "acme.greeting"
    elif change == "prefix-without-dot":
        checks[1]["id"] = f"{EXT}-style"
    elif change == "duplicate-check":
        checks.append(dict(checks[1]))
    elif change == "duplicate-outcome":
        outcomes.append(dict(outcomes[0]))
    elif change == "undeclared":
        checks.append({"id": f"{EXT}.bonus", "status": "failed", "evidenceRefs": []})
    elif change == "pass-without-evidence":
        checks[0]["evidenceRefs"] = []
    elif change == "pass-citing-unknown":
        checks[0]["evidenceRefs"] = [FINAL_MESSAGE_OBSERVATION, "sevro-test.made-up"]
    elif change == "pass-citing-partial":
        checks[0]["evidenceRefs"] = ["sevro.commands"]
    elif change == "pass-citing-unavailable-observation":
        checks[0]["evidenceRefs"] = ["sevro.skills"]
    elif change == "pass-citing-unavailable-builtin":
        checks[0]["evidenceRefs"] = ["tests-pass"]
    elif change == "outcome-pass-citing-partial":
        outcomes[0]["evidenceRefs"] = ["sevro.commands"]
    elif change == "unsolicited-recommendation":
        answer["taskVerdictRecommendation"] = "passed"
    elif change == "foreign-metric":
        answer["metrics"][0]["id"] = "acme.length"
    elif change == "duplicate-metric":
        answer["metrics"].append(dict(answer["metrics"][0]))
    elif change in ("nan-metric", "infinite-metric", "huge-metric", "bool-metric"):
        bad = {"nan": float("nan"), "infinite": float("inf"), "huge": 10**400, "bool": True}
        answer["metrics"][0]["value"] = bad[change.split("-", maxsplit=1)[0]]
    elif change == "schema":
        del answer["metrics"]
    return answer


NOT_COMPLETE = r", which is not complete evidence"
NOT_OURS = r", whose id is not under its namespace"
REF = r"sevro-test\.reference"
LIES = {
    "foreign-check": rf"^extension {REF} returned check \"acme\.style\"{NOT_OURS} '{REF}\.'$",
    "foreign-outcome": rf"returned domain outcome \"acme\.greeting\"{NOT_OURS}",
    "prefix-without-dot": rf"returned check \"{REF}-style\"{NOT_OURS}",
    "duplicate-check": rf"returned check \"{REF}\.style\" twice",
    "duplicate-outcome": (
        rf"returned domain outcome \"{REF}\.domain\.greeting\" twice "
        r"\(domain outcome ids must be unique\)$"
    ),
    "undeclared": rf"returned check \"{REF}\.bonus\", which the case does not declare$",
    "pass-without-evidence": r"^extension evaluate response is invalid: /result/checks/0",
    "pass-citing-unknown": (
        rf"^check \"{REF}\.answer\" passed citing \"sevro-test\.made-up\", "
        r"which is no known evidence$"
    ),
    "pass-citing-partial": (
        rf"^check \"{REF}\.answer\" passed citing \"sevro\.commands\"{NOT_COMPLETE}"
    ),
    "pass-citing-unavailable-observation": rf"passed citing \"sevro\.skills\"{NOT_COMPLETE}",
    "pass-citing-unavailable-builtin": rf"passed citing \"tests-pass\"{NOT_COMPLETE}",
    "outcome-pass-citing-partial": (
        rf"^domain outcome \"{REF}\.domain\.greeting\" passed citing "
        rf"\"sevro\.commands\"{NOT_COMPLETE}"
    ),
    "unsolicited-recommendation": (
        r"^extension recommended the task verdict \"passed\", "
        r"but no task-verdict policy is selected$"
    ),
    "foreign-metric": rf"returned metric \"acme\.length\"{NOT_OURS}",
    "duplicate-metric": rf"returned metric \"{REF}\.length\" twice$",
    "nan-metric": r"a metric is a finite number or null$",
    "infinite-metric": r"a metric is a finite number or null$",
    "huge-metric": r"a metric is a finite number or null$",
    "bool-metric": r"^extension evaluate response is invalid: /result/metrics/0/value",
    "schema": r"^extension evaluate response is invalid: /result: 'metrics' is required$",
}


@pytest.mark.parametrize("change", sorted(LIES))
def test_a_lying_answer_is_refused_with_one_line(change: str) -> None:
    with pytest.raises(ExtensionProtocolError, match=LIES[change]) as caught:
        checked(_lie(change))
    assert "\n" not in str(caught.value)


def test_a_selected_policy_without_a_recommendation_is_refused() -> None:
    with pytest.raises(
        ExtensionProtocolError,
        match=r"^task-verdict policy \"sevro-test\.reference\.strict\" is selected, "
        r"but the extension returned no taskVerdictRecommendation$",
    ):
        checked(honest(), policy=f"{EXT}.strict")


def test_a_pass_on_evidence_that_becomes_partial_is_refused() -> None:
    """The same honest answer, against a trial whose final message was cut off."""
    cut = availability_map(RICH) | {FINAL_MESSAGE_OBSERVATION: False}
    with pytest.raises(ExtensionProtocolError, match="which is not complete evidence"):
        checked(honest(), availability=cut)


def test_a_hostile_id_is_shown_short_on_one_line() -> None:
    answer = honest()
    answer["checks"][1]["id"] = "acme." + "x\ny" * 0 + "z" * 120
    with pytest.raises(ExtensionProtocolError) as caught:
        checked(answer)
    assert len(str(caught.value)) < 400 and "\n" not in str(caught.value)


def test_a_long_detail_is_kept_within_the_bound() -> None:
    answer = honest()
    answer["checks"][1]["detail"] = "d" * MAX_EVALUATE_DETAIL_CHARS
    assert checked(answer).outcomes[1].detail == "d" * MAX_EVALUATE_DETAIL_CHARS
    answer["checks"][1]["detail"] += "d"
    with pytest.raises(ExtensionProtocolError, match="invalid: /result/checks/1/detail"):
        checked(answer)


# ---- end to end, against the real Node reference extension -------------------------------------

REFERENCE_DECLARED = {ANSWER: ANSWER}


def _exchange(node: str, cwd: Path, subject: Trial, *, policy: str | None, lie: str | None) -> Any:
    argv = [node, str(REFERENCE)]
    resolved = run(
        argv,
        "resolve",
        {"projectRoot": cwd.as_uri(), "selectors": {"caseIds": ["greets"]}, "configuration": {}},
        cwd,
    )
    case = resolved.result["cases"][0]
    assert {c["id"]: c["grader"] for c in case["checks"]} == REFERENCE_DECLARED
    configuration: dict[str, JsonValue] = {} if lie is None else {"lie": lie}
    prepared = run(
        argv,
        "prepare",
        {"case": case, "host": {"id": "codex", "capabilities": []}, "condition": "passive",
         "configuration": configuration},
        cwd,
    )  # fmt: skip
    data = merged_extension_data(case["extensionData"], prepared.result["extensionData"])
    params = evaluate_params(
        subject, extension_data=data, policy=policy, configuration=configuration
    )
    answer = run(argv, "evaluate", params, cwd)
    return check_evaluation(
        answer.result,
        extension_id=EXT,
        declared=REFERENCE_DECLARED,
        availability=availability_map(subject),
        policy=policy,
    )


def test_the_reference_extension_passes_a_greeting_on_complete_evidence(
    node: str, tmp_path: Path
) -> None:
    subject = trial(
        "hello there", extra=(PARTIAL, GONE), builtin=(OUTPUT, SHELL), artifacts=(NOTES,)
    )
    result = _exchange(node, tmp_path, subject, policy=f"{EXT}.strict", lie=None)
    assert [(o.id, o.grader, o.status) for o in result.outcomes] == [
        (ANSWER, ANSWER, CheckStatus.PASSED)
    ]
    assert result.outcomes[0].evidence_refs == (FINAL_MESSAGE_OBSERVATION,)
    assert result.recommendation == "passed"
    assert result.metrics == ({"id": f"{EXT}.message-length", "value": 11, "unit": "characters"},)


def test_the_reference_extension_answers_a_case_without_checks_with_none(
    node: str, tmp_path: Path
) -> None:
    argv = [node, str(REFERENCE)]
    subject = Trial("farewell", Execution.COMPLETED, None, trial().observations, (), (), "bye")
    params = evaluate_params(subject, extension_data={}, policy=None, configuration={})
    answer = run(argv, "evaluate", params, tmp_path)
    result = check_evaluation(
        answer.result, extension_id=EXT, declared={}, availability={}, policy=None
    )
    assert result.outcomes == () and result.recommendation is None


def test_the_reference_extension_fails_and_abstains_honestly(node: str, tmp_path: Path) -> None:
    failed = _exchange(node, tmp_path, trial("good day"), policy=None, lie=None)
    assert failed.outcomes[0].status is CheckStatus.FAILED and failed.recommendation is None
    cut = _exchange(
        node, tmp_path, trial("hello", final=Completeness.PARTIAL), policy=None, lie=None
    )
    assert cut.outcomes[0].status is CheckStatus.UNAVAILABLE


REFERENCE_LIES = {
    "pass-anyway": (
        trial("hello", final=Completeness.PARTIAL),
        None,
        rf"^check \"{REF}\.answer\" passed citing "
        rf"\"sevro\.observation\.final-message\"{NOT_COMPLETE}",
    ),
    "cite-unknown": (trial(), None, r"citing \"sevro-test\.made-up\", which is no known evidence$"),
    "undeclared-check": (trial(), None, rf"\"{REF}\.bonus\", which the case does not declare$"),
    "foreign-prefix": (trial(), None, rf"\"acme\.answer\"{NOT_OURS}"),
    "duplicate-check": (trial(), None, rf"\"{REF}\.answer\" twice"),
    "recommend-unasked": (trial(), None, r"but no task-verdict policy is selected$"),
    "withhold-recommendation": (trial(), f"{EXT}.strict", r"no taskVerdictRecommendation$"),
}


@pytest.mark.parametrize("lie", sorted(REFERENCE_LIES))
def test_the_reference_extension_caught_lying(node: str, tmp_path: Path, lie: str) -> None:
    subject, policy, message = REFERENCE_LIES[lie]
    with pytest.raises(ExtensionProtocolError, match=message):
        _exchange(node, tmp_path, subject, policy=policy, lie=lie)
