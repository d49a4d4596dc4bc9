"""`sevro report --compare A B` on real runs of the scripted host: runs of the same cases
compare as two arms; runs that differ in anything but the arm are refused (one line, exit 64);
`--fail-on-regression` turns a regression into exit 1 and nothing else."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from sevro_core.errors import InvocationError
from sevro_core.formats.schemas import validator
from sevro_core.testing import SevroProject
from tests.e2e.helpers import regex_check


def run_dir(project: SevroProject, *args: str | Path) -> Path:
    done = project.run(*args)
    assert done.exit_code in (0, 1), done.stderr
    return Path(str(done.json()["evidencePath"])).parent


def one_line_refusal(done: Any, *fragments: str) -> None:
    assert done.exit_code == 64, done.stdout + done.stderr
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    for fragment in fragments:
        assert fragment in done.stderr, done.stderr


def test_two_plain_runs_of_the_same_cases_compare(sevro_project: SevroProject) -> None:
    case = sevro_project.case(checks=[regex_check("r", "^ok$")])
    host = sevro_project.script(default=[[{"reply": {"text": "ok"}}]])
    first = run_dir(sevro_project, case, "--host-config", host, "--trials", "3")
    second = run_dir(sevro_project, case, "--host-config", host, "--trials", "3")
    done = sevro_project.sevro("report", "--compare", first, second, "--json")
    assert done.exit_code == 0, done.stderr
    report = done.json()
    assert not list(validator("report.v1").iter_errors(report))
    (experiment,) = report["experiments"]
    assert [arm["id"] for arm in experiment["arms"]] == ["A", "B"]
    assert [arm["source"] for arm in experiment["arms"]] == [str(first), str(second)]
    statistics = experiment["statistics"]
    assert not list(validator("experiment-statistics.v1").iter_errors(statistics))
    (comparison,) = statistics["comparisons"]
    assert (comparison["control"], comparison["treatment"]) == ("A", "B")
    assert comparison["pooled"]["transitions"]["bothPass"] == 3
    assert comparison["pooled"]["verdict"] == "no detectable difference"
    assert comparison["activation"]["control"]["rate"] is None  # no target: unknown, not 0
    assert comparison["deltas"]["inputTokens"]["mean"] is None
    markdown = sevro_project.sevro("report", "--compare", first, second)
    assert markdown.exit_code == 0, markdown.stderr
    assert "no detectable difference between B and A: +0 pp" in markdown.stdout
    text = markdown.stdout
    assert text.index("## Experiment") < text.index("no detectable") < text.index("## Input runs")
    assert "| example | 100 % | 100 % | 3 | 0 | 0 | 0 | 0 |" in text
    assert "0 fixed / 0 broken over 3 pairs" in markdown.stdout
    assert "| A | 0 | 0 | 3 | unknown |" in markdown.stdout
    gated = sevro_project.sevro("report", "--compare", first, second, "--fail-on-regression")
    assert gated.exit_code == 0, gated.stderr


def test_a_regression_exits_1_only_with_the_flag(
    sevro_project: SevroProject, tmp_path: Path
) -> None:
    """The same case and host configuration; what changed is outside the project (a file the
    check looks at), as a changed model service would be."""
    broken = tmp_path / "outside" / "broken"
    broken.parent.mkdir()
    check = {
        "id": "not-broken",
        "grader": "sevro.shell",
        "configuration": {"run": f"test ! -e {broken}"},
    }
    case = sevro_project.case(checks=[check])
    host = sevro_project.script(default=[[{"reply": {"text": "ok"}}]])
    args = (case, "--host-config", host, "--trials", "6", "--sandbox", "none")
    good = run_dir(sevro_project, *args)
    broken.write_text("")
    bad = run_dir(sevro_project, *args)
    plain = sevro_project.sevro("report", "--compare", good, bad)
    assert plain.exit_code == 0, plain.stderr
    assert plain.stdout.count("B regressed on A: -100 pp") == 1
    assert "0 fixed / 6 broken over 6 pairs" in plain.stdout
    gated = sevro_project.sevro("report", "--compare", good, bad, "--fail-on-regression")
    assert gated.exit_code == 1 and gated.stdout == plain.stdout
    improved = sevro_project.sevro("report", "--compare", bad, good, "--fail-on-regression")
    assert improved.exit_code == 0
    assert "B improved on A: +100 pp" in improved.stdout
    listed = sevro_project.sevro("report", good, bad, "--fail-on-regression")
    assert listed.exit_code == 0 and "## Experiment" not in listed.stdout


def test_runs_that_differ_in_a_dimension_are_refused(sevro_project: SevroProject) -> None:
    # every input file exists before the first run, so the project itself does not change
    case = sevro_project.case(checks=[regex_check("r", "^ok$")])
    other_case = sevro_project.case("other.json", id="other", checks=[regex_check("r", "^ok$")])
    host = sevro_project.script(default=[[{"reply": {"text": "ok"}}]])
    other_host = sevro_project.script("other-host.json", default=[[{"reply": {"text": "no"}}]])
    base = run_dir(sevro_project, case, "--host-config", host, "--trials", "2")
    more_trials = run_dir(sevro_project, case, "--host-config", host, "--trials", "3")
    different_case = run_dir(sevro_project, other_case, "--host-config", host, "--trials", "2")
    different_host = run_dir(sevro_project, case, "--host-config", other_host, "--trials", "2")
    for other, dimension in (
        (more_trials, "the runs differ in trialCount"),
        (different_case, "the runs differ in caseDigest"),
        (different_host, "the runs differ in configuration hostConfiguration"),
    ):
        done = sevro_project.sevro("report", "--compare", base, other)
        one_line_refusal(done, dimension, "only in their arm")
    one_line_refusal(sevro_project.sevro("report", "--compare", base), "exactly two runs", "not 1")
    one_line_refusal(
        sevro_project.sevro("report", "--compare", base, base / "run.json"), "same run twice"
    )


def _with_arm(run_dir: Path, arm: str, *, on_ref: bool) -> dict[str, Any]:
    """run.json (in memory) with every trial file rewritten to name ``arm``, digests updated."""
    run = json.loads((run_dir / "run.json").read_text())
    for ref in run["trials"]:
        path = run_dir / ref["path"]
        document = json.loads(path.read_text())
        document["arm"] = arm
        data = json.dumps(document).encode()
        path.write_bytes(data)
        ref["sha256"] = hashlib.sha256(data).hexdigest()
        if on_ref:
            ref["arm"] = arm
    return run  # type: ignore[no-any-return]


def test_trials_of_an_experiment_are_keyed_by_case_and_arm(sevro_project: SevroProject) -> None:
    from sevro_core.reporting.report import _trials

    case = sevro_project.case(checks=[regex_check("r", "^ok$")])
    host = sevro_project.script(default=[[{"reply": {"text": "ok"}}]])
    directory = run_dir(sevro_project, case, "--host-config", host, "--trials", "2")
    keyed = _trials(_with_arm(directory, "candidate", on_ref=True), directory)
    assert sorted(keyed) == [("example@candidate", 1), ("example@candidate", 2)]
    assert keyed[("example@candidate", 1)]["arm"] == "candidate"
    # a trial file naming an arm its reference in run.json does not is another trial
    with pytest.raises(InvocationError, match="belongs to another run, case or trial"):
        _trials(_with_arm(directory, "candidate", on_ref=False), directory)


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "skill-ab"


def test_an_experiment_run_is_reported_with_its_statistics(sevro_project: SevroProject) -> None:
    """The skill-ab example, run for real on the scripted host, in a copy of the example (with
    the reversed comparison added, which regressed by the same numbers)."""
    shutil.copytree(EXAMPLE, sevro_project.root / "skill-ab")
    experiment_file = sevro_project.root / "skill-ab" / "experiment.json"
    experiment = json.loads(experiment_file.read_text())
    experiment["comparisons"].append({"control": "candidate", "treatment": "baseline"})
    experiment_file.write_text(json.dumps(experiment))
    host = sevro_project.root / "skill-ab" / "host.json"
    directory = run_dir(sevro_project, experiment_file, "--host-config", host)
    done = sevro_project.sevro("report", directory, "--json")
    assert done.exit_code == 0, done.stderr
    report = done.json()
    assert not list(validator("report.v1").iter_errors(report))
    (entry,) = report["experiments"]
    assert [arm["id"] for arm in entry["arms"]] == ["baseline", "candidate"]
    forward, backward = entry["statistics"]["comparisons"]
    assert forward["pooled"]["verdict"] == "improved"
    assert backward["pooled"]["verdict"] == "regressed"
    assert forward["pooled"]["transitions"]["fixed"] == backward["pooled"]["transitions"]["broken"]
    assert forward["activation"]["treatment"]["rate"] == 1.0  # the mounted skill was read
    assert forward["activation"]["control"]["rate"] is None  # no target: unknown
    assert [case["caseId"] for case in forward["cases"]] == entry["statistics"]["cases"]
    assert len(forward["cases"]) == 5 and forward["pairs"] == 25
    markdown = sevro_project.sevro("report", directory)
    assert "\ncandidate improved on baseline: +" in markdown.stdout
    assert "\nbaseline regressed on candidate: -" in markdown.stdout
    gated = sevro_project.sevro("report", directory, "--fail-on-regression")
    assert gated.exit_code == 1 and gated.stdout == markdown.stdout
    plain = run_dir(sevro_project, EXAMPLE / "cases" / "one-typo.json", "--host-config", host)
    one_line_refusal(
        sevro_project.sevro("report", "--compare", plain, directory),
        "run B is an experiment with 2 arms",
    )


def test_a_plain_run_and_a_one_arm_run_compare(sevro_project: SevroProject) -> None:
    """`sevro run cases/` and later `sevro run cases/ --skill DIR` (the quick form without
    --baseline): the same cases, so they compare; the plain run is A, the arm keeps its id."""
    example = sevro_project.root / "skill-ab"
    shutil.copytree(EXAMPLE, example)
    common = (example / "cases", "--host-config", example / "host.json", "--trials", "5")
    plain = run_dir(sevro_project, *common)
    with_skill = run_dir(sevro_project, *common, "--skill", example / "skills" / "release-notes")
    done = sevro_project.sevro("report", "--compare", plain, with_skill, "--json")
    assert done.exit_code == 0, done.stderr
    (entry,) = done.json()["experiments"]
    assert [arm["id"] for arm in entry["arms"]] == ["A", "candidate"]
    pooled = entry["statistics"]["comparisons"][0]["pooled"]
    assert pooled["verdict"] == "improved" and pooled["transitions"]["broken"] == 0
    gated = sevro_project.sevro("report", "--compare", with_skill, plain, "--fail-on-regression")
    assert gated.exit_code == 1
    assert "\nB regressed on candidate: -" in gated.stdout  # a plain run is named by place


def test_a_skill_edited_between_two_runs_is_a_project_difference(
    sevro_project: SevroProject,
) -> None:
    """Skill v1 today, v2 after editing it in the project: the project changed, so --compare
    refuses and names the dimension (one experiment, --baseline DIR or git:REF, compares two
    versions of a skill instead)."""
    example = sevro_project.root / "skill-ab"
    shutil.copytree(EXAMPLE, example)
    skill = example / "skills" / "release-notes"
    common = (example / "cases", "--host-config", example / "host.json", "--trials", "1")
    first = run_dir(sevro_project, *common, "--skill", skill)
    with (skill / "SKILL.md").open("a") as handle:
        handle.write("\nKeep the notes short.\n")
    second = run_dir(sevro_project, *common, "--skill", skill)
    one_line_refusal(
        sevro_project.sevro("report", "--compare", first, second), "differ in projectDigest"
    )
