"""The Markdown of an experiment's statistics (verdict worded from the numbers, unknown never
0 %) and the rules that decide whether two runs compare (reporting/comparing.py)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sevro_core.errors import InvocationError
from sevro_core.experiments.comparison import ArmTrial, experiment_statistics
from sevro_core.reporting.comparing import arm_names, check_comparable, run_statistics
from sevro_core.reporting.experiment import render_experiment_statistics, verdict_sentence
from tests.experiments.test_comparison import outcome_trials, skills, trial_document


def statistics(cases: dict[str, tuple[str, str]], repetitions: int) -> dict[str, Any]:
    trials: list[ArmTrial] = []
    for case, (control, treatment) in cases.items():
        trials += outcome_trials("baseline", case, control)
        trials += outcome_trials("candidate", case, treatment)
    return experiment_statistics(
        ["baseline", "candidate"], [("baseline", "candidate")], trials, repetitions
    )


IMPROVED = {c: ("FFFFFFFF", "PPPPPPPP") for c in "abcd"} | {"e": ("PPPPPPPP", "PPPPPPPF")}


def test_improved_is_worded_with_its_numbers() -> None:
    comparison = statistics(IMPROVED, 8)["comparisons"][0]
    sentence = verdict_sentence(comparison)
    assert sentence.startswith("candidate improved on baseline: +77.5 pp (95 % CI +")
    assert ", McNemar p < 0.001, " in sentence
    assert "32 fixed / 1 broken over 40 pairs." in sentence
    assert "repetitions" not in sentence


def test_regressed_is_worded_with_its_numbers() -> None:
    swapped = {case: (t, c) for case, (c, t) in IMPROVED.items()}
    sentence = verdict_sentence(statistics(swapped, 8)["comparisons"][0])
    assert sentence.startswith("candidate regressed on baseline: -77.5 pp (95 % CI -")
    assert "1 fixed / 32 broken over 40 pairs." in sentence


def test_no_detectable_difference_says_how_many_repetitions_it_would_need() -> None:
    comparison = statistics({"a": ("PFPFP", "PPPFP"), "b": ("FFPFF", "FPPFF")}, 5)["comparisons"][0]
    needed = comparison["pooled"]["repetitionsNeeded"]
    sentence = verdict_sentence(comparison)
    assert sentence.startswith("no detectable difference between candidate and baseline: +20 pp")
    assert f"would need about {needed} repetitions per case" in sentence


def test_unknown_when_no_pair_was_decided_and_never_zero_percent() -> None:
    stats = statistics({"a": ("XXX", "PPP")}, 3)
    sentence = verdict_sentence(stats["comparisons"][0])
    assert sentence == (
        "candidate against baseline: unknown, no pair was decided on both sides "
        "(3 inconclusive of 3 pairs)."
    )
    text = "\n".join(render_experiment_statistics(stats))
    assert "| a | unknown | unknown | 0 | 0 | 0 | 0 | 3 | unknown | unknown | unknown |" in text
    assert "| baseline | a | 0/0 | 3 | unknown |" in text
    assert "0 %" not in text.replace("100 %", "")


def test_inconclusive_pairs_are_named_in_the_sentence() -> None:
    sentence = verdict_sentence(
        statistics({"a": ("PXP", "PPP"), "b": ("FFF", "FFF")}, 3)["comparisons"][0]
    )
    assert "over 5 pairs; 1 inconclusive pair(s) left out." in sentence


def test_p_values_and_cells_are_printed_safely() -> None:
    stats = statistics(IMPROVED, 8)
    text = "\n".join(render_experiment_statistics(stats))
    assert "| 0.00781 | improved | - |" in text  # exact McNemar, 8 of 8 fixed: 2 / 2^8
    assert "| 1 | no detectable difference | 61 |" in text
    assert "p = < 0.001" not in text
    hostile = copy.deepcopy(stats)
    hostile["comparisons"][0]["cases"][0]["caseId"] = "a|b<script>"
    table = "\n".join(render_experiment_statistics(hostile))
    assert "a\\|b&lt;script&gt;" in table and "<script>" not in table


def test_activation_rates_print_with_their_interval() -> None:
    trials = [
        ArmTrial("candidate", "a", r, "pass", r <= 3, None, None, None, None) for r in (1, 2, 3, 4)
    ] + outcome_trials("baseline", "a", "PPPP")
    stats = experiment_statistics(["baseline", "candidate"], [("baseline", "candidate")], trials, 4)
    text = "\n".join(render_experiment_statistics(stats))
    assert "| candidate | 3 | 4 | 0 | 75 % (30.1-95.4 %) |" in text
    assert "| baseline | 0 | 0 | 4 | unknown |" in text


# --- which runs compare ------------------------------------------------------------------------


def run(trials: int = 2, host_text: str = "ok", route: str = "r1", **extra: Any) -> dict[str, Any]:
    dimensions = {
        "runnerBuildDigest": "b",
        "projectDigest": "p",
        "configurationDigest": f"c-{extra}",
        "caseDigest": "cases",
        "routeDigest": route,
        "trialCount": trials,
    }
    redacted = {"trialCount": trials, "jobs": 2, "hostConfiguration": {"candidate": host_text}}
    if "arms" in extra:
        redacted["arms"] = {arm["id"]: arm["fingerprint"] for arm in extra["arms"]}
    return {
        "runId": "x",
        "evaluationIdentity": {"dimensions": dimensions},
        "configuration": {"redacted": redacted},
        **extra,
    }


def arm(arm_id: str, **route: str | None) -> dict[str, Any]:
    return {
        "id": arm_id,
        "fingerprint": f"f-{arm_id}",
        "host": None,
        "model": None,
        "effort": None,
    } | route


def test_runs_compare_when_only_the_arm_differs() -> None:
    check_comparable([run(), run(arms=[arm("candidate")])], [None, arm("candidate")])


@pytest.mark.parametrize(
    ("second", "named"),
    [
        (run(trials=3), "trialCount"),
        (run(route="r2"), "routeDigest"),
        (run(host_text="other"), "configuration hostConfiguration"),
    ],
)
def test_runs_that_differ_elsewhere_are_refused(second: dict[str, Any], named: str) -> None:
    with pytest.raises(InvocationError, match=f"differ in {named}"):
        check_comparable([run(), second], [None, None])


def test_route_may_differ_only_when_an_arm_declares_it() -> None:
    overridden = arm("fast", model="small")
    second = run(route="r2", host_text="other", arms=[overridden])
    check_comparable([run(), second], [None, overridden])
    with pytest.raises(InvocationError, match="routeDigest"):
        check_comparable([run(), run(route="r2", arms=[arm("c")])], [None, arm("c")])


def test_arm_names() -> None:
    assert arm_names([None, None]) == ("A", "B")
    assert arm_names([None, arm("candidate")]) == ("A", "candidate")
    assert arm_names([arm("old"), arm("new")]) == ("old", "new")
    assert arm_names([arm("candidate"), arm("candidate")]) == ("A", "B")


def test_an_experiment_run_gets_its_statistics_from_its_trials() -> None:
    experiment_run = run(
        arms=[arm("baseline"), arm("candidate")],
        experiment={
            "source": None,
            "repetitions": 2,
            "comparisons": [{"control": "baseline", "treatment": "candidate"}],
        },
    )
    result = {"cases": [{"caseId": "a@baseline"}, {"caseId": "a@candidate"}]}
    documents = [
        trial_document("baseline", "a", 1, "failed"),
        trial_document("baseline", "a", 2, "failed"),
        trial_document("candidate", "a", 1, observation=skills("notes", read=True)),
        trial_document("candidate", "a", 2, observation=skills("notes", read=False)),
    ]
    stats = run_statistics(experiment_run, result, documents)
    assert stats["cases"] == ["a"]
    comparison = stats["comparisons"][0]
    assert comparison["pooled"]["transitions"]["fixed"] == 2
    assert comparison["activation"]["treatment"]["rate"] == 0.5
    for stray in (trial_document(None, "a", 1), trial_document("other", "a", 1)):
        with pytest.raises(InvocationError, match="not a consistent experiment"):
            run_statistics(experiment_run, result, [stray])


def test_stored_statistics_are_used_only_when_their_counts_match_the_trials() -> None:
    experiment_run = run(
        arms=[arm("baseline"), arm("candidate")],
        experiment={
            "source": None,
            "repetitions": 2,
            "comparisons": [{"control": "baseline", "treatment": "candidate"}],
        },
    )
    result = {"cases": [{"caseId": "a"}]}
    documents = [
        trial_document("baseline", "a", 1, "failed"),
        trial_document("baseline", "a", 2, "passed"),
        trial_document("candidate", "a", 1, observation=skills("notes", read=True)),
        trial_document("candidate", "a", 2, execution="failed"),
    ]
    computed = run_statistics(experiment_run, result, documents)
    # what sevro run would store, marked so the test sees which document comes back
    stored = copy.deepcopy(computed)
    stored["comparisons"][0]["pooled"]["repetitionsNeeded"] = 12345
    assert run_statistics({**experiment_run, "statistics": stored}, result, documents) == stored
    # one count that the trials do not support: refused, whichever count it is
    for path in (
        ("arms", 0, "cases", 0, "passRate", "passes"),
        ("arms", 1, "cases", 0, "activation", "known"),
        ("comparisons", 0, "cases", 0, "transitions", "inconclusive"),
        ("arms", 0, "cases", 0, "trials"),
    ):
        forged = copy.deepcopy(computed)
        target: Any = forged
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] += 1
        if path[-1] == "passes":
            forged["arms"][0]["cases"][0]["passRate"]["decided"] += 1
        with pytest.raises(InvocationError, match="do not match its trial files"):
            run_statistics({**experiment_run, "statistics": forged}, result, documents)
    # not a statistics document at all: computed from the trials instead
    invalid = {**experiment_run, "statistics": {"format": "something else"}}
    assert run_statistics(invalid, result, documents) == computed


def test_checking_stored_statistics_loads_no_statistics_library(tmp_path: Path) -> None:
    experiment_run = run(
        arms=[arm("baseline"), arm("candidate")],
        experiment={
            "source": None,
            "repetitions": 1,
            "comparisons": [{"control": "baseline", "treatment": "candidate"}],
        },
    )
    result = {"cases": [{"caseId": "a"}]}
    documents = [trial_document("baseline", "a", 1, "failed"), trial_document("candidate", "a", 1)]
    stored = run_statistics(experiment_run, result, documents)
    inputs = tmp_path / "inputs.json"
    inputs.write_text(json.dumps([{**experiment_run, "statistics": stored}, result, documents]))
    script = (
        "import json, sys\n"
        "from sevro_core.reporting.comparing import run_statistics\n"
        f"run, result, documents = json.load(open({str(inputs)!r}))\n"
        "assert run_statistics(run, result, documents) == run['statistics']\n"
        "print(sorted(m for m in ('scipy', 'statsmodels', 'numpy') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"


def test_statistics_of_a_run_without_its_experiment_entry_use_its_trial_count() -> None:
    from sevro_core.experiments.comparison import statistics_of_run

    documents = [trial_document("candidate", "a", r) for r in (1, 2)]
    plain_identity = run(trials=2, arms=[arm("candidate")])
    assert statistics_of_run(plain_identity, documents)["repetitions"] == 2
    del plain_identity["evaluationIdentity"]
    with pytest.raises(ValueError, match="no number of repetitions"):
        statistics_of_run(plain_identity, documents)
