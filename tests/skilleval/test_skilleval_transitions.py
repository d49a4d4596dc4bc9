"""skill-eval comparisons as transitions: counted per paired trial, unavailable sides apart."""

from __future__ import annotations

from typing import Any

from sevro_core.experiments.comparison import statistics_counts, statistics_of_run
from sevro_core.experiments.skillevaltransitions import check_transitions, describe
from sevro_core.formats.schemas import validate_input
from sevro_core.reporting.skilleval import skilleval_lines

COMPARISON = {"id": "result-exists", "baseline": "b-result", "candidate": "c-result"}


def origin(**group: Any) -> dict[str, Any]:
    return {
        "definition": "group.json",
        "kind": "group",
        "suite": None,
        "groups": [
            {
                "id": "body",
                "position": 1,
                "type": "body",
                "status": "selected",
                "variants": {"baseline": "selected", "candidate": "selected"},
                "tools": [],
                "comparisons": [COMPARISON],
                "reviewQuestions": ["Was the guidance applied?"],
                **group,
            }
        ],
    }


def trial(arm: str, repetition: int, status: str | None, executed: bool = True) -> dict[str, Any]:
    check = f"{arm[0]}-result"
    checks = [] if status is None else [{"id": check, "grader": "sevro.path", "status": status}]
    return {
        "arm": arm,
        "caseId": "body",
        "trial": repetition,
        "evidence": {
            "execution": {"status": "completed" if executed else "failed"},
            "checks": checks,
        },
    }


def test_every_transition_and_every_unavailable_side() -> None:
    documents = [
        trial("baseline", 1, "passed"), trial("candidate", 1, "passed"),
        trial("baseline", 2, "failed"), trial("candidate", 2, "passed"),
        trial("baseline", 3, "passed"), trial("candidate", 3, "failed"),
        trial("baseline", 4, "failed"), trial("candidate", 4, "failed"),
        trial("baseline", 5, "unavailable"), trial("candidate", 5, "passed"),
        trial("baseline", 6, "passed"), trial("candidate", 6, "passed", executed=False),
        trial("baseline", 7, None), trial("candidate", 7, "passed"),
        trial("baseline", 8, "passed"),  # the candidate's trial never ran
    ]  # fmt: skip
    (row,) = check_transitions(origin(), documents, 8)
    assert row["transitions"] == {
        "pass-to-pass": 1,
        "fail-to-pass": 1,
        "pass-to-fail": 1,
        "fail-to-fail": 1,
        "unavailable": 4,
    }
    assert row["pairs"][1] == {"repetition": 2, "baseline": "fail", "candidate": "pass"}
    assert row["pairs"][7] == {"repetition": 8, "baseline": "pass", "candidate": "unavailable"}
    assert describe(row) == (
        "result-exists (body): 1 pass-to-pass, 1 fail-to-pass, 1 pass-to-fail, 1 fail-to-fail, "
        "4 unavailable"
    )


def test_a_group_or_variant_not_selected_has_no_transitions() -> None:
    documents = [trial("candidate", 1, "passed")]
    assert check_transitions(origin(status="not-selected"), documents, 1) == []
    one_variant = origin(variants={"baseline": "not-selected", "candidate": "selected"})
    assert check_transitions(one_variant, documents, 1) == []


def test_the_statistics_document_carries_and_recounts_them() -> None:
    run = {
        "arms": [{"id": "baseline"}, {"id": "candidate"}],
        "experiment": {
            "source": "group.json",
            "repetitions": 1,
            "comparisons": [{"control": "baseline", "treatment": "candidate"}],
            "skillEval": origin(),
        },
    }
    documents = [trial("baseline", 1, "failed"), trial("candidate", 1, "passed")]
    for document in documents:
        document.update(evidence={**document["evidence"], "grading": {"status": "completed"},
                                  "task": {"verdict": "passed"}})  # fmt: skip
    statistics = statistics_of_run(run, documents)
    validate_input("experiment-statistics.v1", statistics, source="statistics")
    assert statistics["checkTransitions"][0]["transitions"]["fail-to-pass"] == 1
    counted = statistics_of_run(run, documents, counts_only=True)
    assert statistics_counts(statistics) == counted
    lines = skilleval_lines(origin(), statistics)
    assert "review (body): Was the guidance applied?" in lines
    assert "result-exists (body): 0 pass-to-pass, 1 fail-to-pass" in lines


def test_not_selected_groups_and_variants_are_shown() -> None:
    document = origin(variants={"baseline": "not-selected", "candidate": "selected"})
    document["groups"].append({**document["groups"][0], "id": "other", "status": "not-selected"})
    lines = skilleval_lines(document, None)
    assert "group body: variant baseline not-selected" in lines
    assert "group other: not-selected" in lines
