"""``sevro calibrate``: a case's reference results run as real trials, and a weak oracle caught.

Positive controls: a good variant passes and a bad one fails as declared (exit 0). Negative
controls: a bad or adversarial variant the checks let pass (exit 1, the table names the check),
and every refusal (exit 64, one line, nothing run). The shipped examples calibrate clean.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sevro_core.testing import CliResult, SevroProject, require_sandbox

ROOT = Path(__file__).resolve().parent.parent
READY = {"id": "ready", "grader": "sevro.regex", "configuration": {"pattern": "^ready$"}}
NO_PASS_CLAIM = {
    "id": "no-pass-claim",
    "grader": "sevro.regex",
    "configuration": {"pattern": "PASS", "negate": True},
}


def _reply(text: str) -> dict[str, Any]:
    return {"turns": [[{"reply": {"text": text}}]]}


GOOD = {"id": "good", "kind": "good", "expect": "passed", "script": _reply("ready")}
BAD = {
    "id": "bad",
    "kind": "bad",
    "expect": "failed",
    "failingChecks": ["ready"],
    "script": _reply("not ready"),
}


def _from_file(path: str) -> dict[str, Any]:
    """BAD with its reply in a file instead of a script."""
    return {**{k: v for k, v in BAD.items() if k != "script"}, "finalOutput": path}


def _case(project: SevroProject, variants: list[Any], checks: list[Any] | None = None) -> Path:
    return project.case(
        "cases/answer.json",
        id="answer",
        prompt="Say ready.",
        checks=checks if checks is not None else [READY],
        calibration=variants,
    )


def _calibrate(project: SevroProject, *args: str | Path) -> CliResult:
    return project.sevro("calibrate", *args, "--results-root", project.results)


def _rows(done: CliResult) -> dict[str, list[str]]:
    """The table's rows by variant id: kind, expected, got, result."""
    rows = {}
    for line in done.stdout.splitlines()[1:]:
        cells = line.split()
        if len(cells) == 6 and not line.startswith(" "):
            rows[cells[1]] = cells[2:]
    return rows


def test_good_and_bad_variants_that_get_their_verdicts_exit_0(
    sevro_project: SevroProject,
) -> None:
    case = _case(sevro_project, [GOOD, BAD])
    done = _calibrate(sevro_project, case)
    assert done.exit_code == 0, done.stdout + done.stderr
    assert _rows(done) == {
        "good": ["good", "passed", "passed", "ok"],
        "bad": ["bad", "failed", "failed", "ok"],
    }
    assert "all 2 variant(s) got the verdict they expect" in done.stdout
    (run_dir,) = [p for p in sevro_project.results.iterdir() if not p.name.startswith(".")]
    result = json.loads((run_dir / "run.json").read_text())
    assert str(run_dir) in done.stdout  # the evidence is kept like a run's
    cases = {c["caseId"] for c in result["result"]["cases"]}
    assert cases == {"answer--good", "answer--bad"}


def test_a_bad_variant_the_checks_let_pass_is_a_weak_oracle(sevro_project: SevroProject) -> None:
    weak = {"id": "ready", "grader": "sevro.regex", "configuration": {"pattern": "ready"}}
    case = _case(sevro_project, [GOOD, BAD], checks=[weak])
    done = _calibrate(sevro_project, case)
    assert done.exit_code == 1, done.stdout + done.stderr
    assert _rows(done)["bad"] == ["bad", "failed", "passed", "DISAGREES"]
    assert _rows(done)["good"][-1] == "ok"
    assert "    ready: passed (expected failed)" in done.stdout.splitlines()
    assert "1 of 2 variant(s) disagree" in done.stdout


def test_a_bad_variant_failing_other_checks_than_declared_disagrees(
    sevro_project: SevroProject,
) -> None:
    """The verdict alone agrees; the declared failing check does not: still exit 1."""
    short = {"id": "short", "grader": "sevro.regex", "configuration": {"pattern": "^.{0,3}$"}}
    strict = {**BAD, "script": _reply("ready")}
    done = _calibrate(sevro_project, _case(sevro_project, [strict], checks=[READY, short]))
    assert done.exit_code == 1, done.stdout + done.stderr
    assert _rows(done)["bad"] == ["bad", "failed", "failed", "DISAGREES"]
    lines = done.stdout.splitlines()
    assert "    ready: passed (expected failed)" in lines
    assert "    short: failed (expected passed)" in lines


@pytest.mark.parametrize(
    ("checks", "code", "got"),
    [
        ([READY, NO_PASS_CLAIM], 0, "failed"),
        ([{**READY, "configuration": {"pattern": "ready"}}], 1, "passed"),
    ],
    ids=["caught", "fooled"],
)
def test_an_adversarial_final_output_that_claims_a_pass(
    checks: list[Any], code: int, got: str, sevro_project: SevroProject
) -> None:
    """A final output that prints PASS and the word the check looks for: a strict oracle fails
    it, a weak one (a substring regex) is fooled and calibrate says so."""
    (sevro_project.root / "cases" / "outputs").mkdir(parents=True)
    (sevro_project.root / "cases" / "outputs" / "fake.txt").write_text("PASS: ready\n")
    fake = {
        "id": "fake",
        "kind": "adversarial",
        "expect": "failed",
        "finalOutput": "outputs/fake.txt",
    }
    done = _calibrate(sevro_project, _case(sevro_project, [GOOD, fake], checks=checks))
    assert done.exit_code == code, done.stdout + done.stderr
    assert _rows(done)["fake"][:3] == ["adversarial", "failed", got]


def test_the_shipped_examples_calibrate_clean(sevro_project: SevroProject) -> None:
    require_sandbox()  # scripted run steps and shell checks
    done = _calibrate(
        sevro_project,
        ROOT / "examples" / "quickstart" / "cases",
        ROOT / "examples" / "git-coding" / "cases",
    )
    assert done.exit_code == 0, done.stdout + done.stderr
    rows = _rows(done)
    assert len(rows) == 10 and all(r[-1] == "ok" for r in rows.values()), done.stdout
    assert {r[0] for r in rows.values()} == {"good", "bad", "adversarial"}


def test_sevro_run_validates_variants_but_never_runs_them_nor_hashes_them(
    sevro_project: SevroProject,
) -> None:
    host = sevro_project.script(default=[[{"reply": {"text": "ready"}}]])
    identities = []
    for variants in ([BAD], [GOOD]):
        case = _case(sevro_project, variants)
        done = sevro_project.run(case, "--host-config", host)
        assert done.exit_code == 0, done.stdout + done.stderr
        assert [c["caseId"] for c in done.json()["cases"]] == ["answer"]
        (run_json,) = sevro_project.results.glob("*/run.json")
        dimensions = json.loads(run_json.read_text())["evaluationIdentity"]["dimensions"]
        del dimensions["projectDigest"]  # the case file is in the project and changed
        identities.append(dimensions)
        for path in sevro_project.results.glob("*/run.json"):
            path.unlink()
    assert identities[0] == identities[1]
    broken = _case(sevro_project, [{**GOOD, "expect": "failed"}])
    refused = sevro_project.run(broken, "--host-config", host)
    assert refused.exit_code == 64 and "/calibration/0/expect" in refused.stderr


@pytest.mark.parametrize(
    ("variants", "message"),
    [
        ([{**GOOD, "weight": 1}], "/calibration/0/weight: unknown key 'weight'"),
        ([GOOD, {**BAD, "id": "good"}], "/calibration/1/id: duplicate calibration variant id"),
        ([{**BAD, "finalOutput": "missing.txt"}], "exactly one of 'script' and 'finalOutput'"),
        (
            [_from_file("missing.txt")],
            "/calibration/0/finalOutput: finalOutput 'missing.txt' cannot be read",
        ),
        ([_from_file("../x.txt")], "without '..'"),
        ([{**GOOD, "expect": "failed"}], "/calibration/0/expect: a good variant must expect"),
        ([{**BAD, "failingChecks": ["nope"]}], "failingChecks names no check of this case: 'nope'"),
        ([{**GOOD, "failingChecks": ["ready"]}], "failingChecks needs expect failed"),
        ([{**GOOD, "script": {"turns": [[], []]}}], "script has 2 turn(s) but the case has 1"),
        ([{**GOOD, "kind": "fine"}], "/calibration/0/kind"),
        (
            [{**GOOD, "script": {"turns": [[{"write": {"path": "/etc/x", "content": ""}}]]}}],
            "answer.json#/calibration/0/script/turns/0/0/write/path: path '/etc/x' is absolute",
        ),
    ],
    ids=[
        "unknown-key", "duplicate-id", "both-results", "missing-file", "escaping-file",
        "good-expects-failed", "unknown-check", "failing-checks-on-pass", "turns", "kind",
        "absolute-write",
    ],
)  # fmt: skip
def test_bad_variants_are_refused_before_anything_runs(
    variants: list[Any], message: str, sevro_project: SevroProject
) -> None:
    done = _calibrate(sevro_project, _case(sevro_project, variants))
    assert done.exit_code == 64, done.stdout + done.stderr
    assert message in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert not sevro_project.results.exists()


def test_a_final_output_that_is_a_symlink_is_refused(sevro_project: SevroProject) -> None:
    (sevro_project.root / "cases").mkdir()
    (sevro_project.root / "secret.txt").write_text("ready")
    (sevro_project.root / "cases" / "out.txt").symlink_to(sevro_project.root / "secret.txt")
    variant = {"id": "v", "kind": "good", "expect": "passed", "finalOutput": "out.txt"}
    done = _calibrate(sevro_project, _case(sevro_project, [variant]))
    assert done.exit_code == 64 and "symlink" in done.stderr, done.stderr


def test_cases_without_variants_are_refused(sevro_project: SevroProject) -> None:
    case = sevro_project.case("cases/plain.json")
    done = _calibrate(sevro_project, case)
    assert done.exit_code == 64
    assert "no case declares calibration variants" in done.stderr


SEMANTIC_JUDGE = {
    "format": "sevro.scripted-host.v1",
    "judges": {
        "semantic": [
            {
                "promptContains": "clean environment",
                "reply": '{"checks":[{"id":"gives-a-reason","verdict":"pass","reason":"Cause."}]}',
            },
            {"reply": '{"checks":[{"id":"gives-a-reason","verdict":"fail","reason":"None."}]}'},
        ]
    },
}


def test_a_case_graded_by_a_judge_is_calibrated_with_that_judge(
    sevro_project: SevroProject,
) -> None:
    """The semantic judge flags reach the run; without them the case is refused (exit 64)."""
    check = {
        "id": "gives-a-reason",
        "grader": "sevro.semantic",
        "configuration": {"proposition": "The response gives a concrete cause."},
    }
    cause = "CI starts from a clean environment, so a file only your machine has is missing."
    variants = [
        {**GOOD, "script": _reply(cause)},
        {"id": "restates", "kind": "bad", "expect": "failed", "script": _reply("It can happen.")},
    ]
    case = _case(sevro_project, variants, checks=[check])
    judge = sevro_project.write_json("judge.json", SEMANTIC_JUDGE)
    done = _calibrate(
        sevro_project, case, "--semantic-host", "scripted", "--semantic-host-config", judge
    )
    assert done.exit_code == 0, done.stdout + done.stderr
    assert _rows(done) == {
        "good": ["good", "passed", "passed", "ok"],
        "restates": ["bad", "failed", "failed", "ok"],
    }
    refused = _calibrate(sevro_project, case)
    assert refused.exit_code == 64 and "--semantic-host" in refused.stderr, refused.stderr
