"""``--junit`` and ``--github-summary`` end to end on the scripted host: the XML CI dashboards
read counts and explains what the evidence says, untrusted text stays inert and well-formed,
and a file that cannot be written is refused before anything runs."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from sevro_core.testing import SevroProject, require_sandbox, require_tool
from tests.e2e.helpers import notes_experiment, regex_check

HOSTILE = "ready ]]> <script>alert(1)</script> &amp; \x01\x1b[31m red \ufffe end"
"""Agent text a check detail may carry: a CDATA end, markup, an entity, controls, a non-XML
character."""

ECHO_GRADER = """
from sevro_core.models import CheckOutcome
from sevro_core.plugin.hookspecs import hookimpl
from sevro_core.states import CheckStatus

class Check:
    def grade(self, check_id, view):
        return CheckOutcome(check_id, "acme.echo", CheckStatus.FAILED, detail=view.final_message)

class Echo:
    id = "acme.echo"
    version = "0.1"
    stage = 10
    capabilities = frozenset()
    requires = frozenset()
    def compile(self, configuration):
        return Check()

@hookimpl
def sevro_register_graders(register):
    register(Echo())
"""
"""A grader that fails with the agent's final message as its detail, as judges and verifiers
can: untrusted text in a check detail."""


COUNTS = ("tests", "failures", "errors", "skipped", "time")


def parse(path: Path) -> ET.Element:
    """The JUnit document, checked against the structure JUnit consumers share: testsuites >
    testsuite > testcase > at most one failure, error or skipped, with their attributes."""
    assert path.read_bytes().startswith(b"<?xml version='1.0' encoding='utf-8'?>")
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites" and set(COUNTS) <= set(root.attrib)
    for suite in root:
        assert suite.tag == "testsuite" and {"name", *COUNTS} <= set(suite.attrib)
        cases = list(suite)
        assert all(case.tag == "testcase" for case in cases)
        assert int(suite.attrib["tests"]) == len(cases)
        for key, tag in (("failures", "failure"), ("errors", "error"), ("skipped", "skipped")):
            assert int(suite.attrib[key]) == sum(1 for case in cases if case.find(tag) is not None)
        for case in cases:
            assert {"classname", "name", "time"} <= set(case.attrib)
            float(case.attrib["time"])
            assert all(child.tag in ("failure", "error", "skipped") for child in case)
            assert all("message" in child.attrib for child in case)
    for key in ("tests", "failures", "errors", "skipped"):
        assert int(root.attrib[key]) == sum(int(suite.attrib[key]) for suite in root)
    return root


def counts(element: ET.Element) -> dict[str, int]:
    return {key: int(element.attrib[key]) for key in ("tests", "failures", "errors", "skipped")}


def junit_cases(root: ET.Element) -> dict[tuple[str, str], ET.Element]:
    return {(c.attrib["classname"], c.attrib["name"]): c for c in root.iter("testcase")}


def kind(case: ET.Element) -> str | None:
    children = [child.tag for child in case]
    assert len(children) <= 1, children
    return children[0] if children else None


@pytest.fixture
def four_cases(sevro_project: SevroProject) -> tuple[Path, Path]:
    """good passes, bad fails a check, silent has no final message (unavailable), open has no
    checks (not assessed)."""
    cases = [
        {"id": "good", "checks": [regex_check("ready", "^ready$")]},
        {"id": "bad", "checks": [regex_check("ready", "^ready$"), regex_check("any", ".")]},
        {"id": "silent", "checks": [regex_check("ready", "^ready$")]},
        {"id": "open", "checks": []},
    ]
    base = {"prompt": "Say ready.", "fixture": {"files": {}}, "requiredEvidence": []}
    path = sevro_project.write_json("cases.json", [{**base, **case} for case in cases])
    host = sevro_project.script(
        default=[[{"reply": {"text": "ready"}}]],
        cases={"bad": [[{"reply": {"text": "nope"}}]], "silent": [[]]},
    )
    return path, host


def test_junit_counts_and_explains_each_kind_of_outcome(
    sevro_project: SevroProject, four_cases: tuple[Path, Path]
) -> None:
    cases, host = four_cases
    junit = sevro_project.root / "junit.xml"
    done = sevro_project.run(cases, "--host-config", host, "--trials", "2", "--junit", junit)
    assert done.exit_code == 4, done.stderr  # unavailable outranks the task failure
    root = parse(junit)
    assert counts(root) == {"tests": 4, "failures": 1, "errors": 1, "skipped": 1}
    (suite,) = root.iter("testsuite")
    assert counts(suite) == counts(root)
    assert suite.attrib["name"] == f"sevro {done.json()['runId']}"
    found = junit_cases(root)
    assert sorted(found) == [(c, c) for c in ("bad", "good", "open", "silent")]
    assert {name: kind(case) for (name, _), case in found.items()} == {
        "good": None,
        "bad": "failure",
        "silent": "error",
        "open": "skipped",
    }
    failure = found[("bad", "bad")].find("failure")
    assert failure is not None and failure.text is not None
    assert failure.attrib["message"] == (
        "0/2 trials passed: check ready (sevro.regex) failed: regex assertion failed"
    )
    assert failure.text.count("check ready (sevro.regex) failed") == 2  # every trial
    assert "check any" not in failure.text  # the check that passed is not listed
    error = found[("silent", "silent")].find("error")
    assert error is not None and error.text is not None
    assert error.attrib["type"] == "sevro.unavailable"
    assert "check ready (sevro.regex) unavailable" in error.attrib["message"]
    skipped = found[("open", "open")].find("skipped")
    assert skipped is not None and "not a pass" in skipped.attrib["message"]


def test_a_dry_run_is_skipped_not_an_error(
    sevro_project: SevroProject, four_cases: tuple[Path, Path]
) -> None:
    cases, host = four_cases
    junit = sevro_project.root / "junit.xml"
    done = sevro_project.run(cases, "--host-config", host, "--dry", "--junit", junit)
    assert done.exit_code == 0, done.stderr
    root = parse(junit)
    assert counts(root) == {"tests": 4, "failures": 0, "errors": 0, "skipped": 4}
    assert all("dry run" in (s.attrib["message"]) for s in root.iter("skipped"))


def test_untrusted_check_details_stay_inert_and_the_xml_parses(
    sevro_project: SevroProject,
) -> None:
    plugin = sevro_project.root / "echo_grader.py"
    plugin.write_text(ECHO_GRADER)
    case = sevro_project.case(
        id="hostile", checks=[{"id": "echo", "grader": "acme.echo", "configuration": {}}]
    )
    host = sevro_project.script(default=[[{"reply": {"text": HOSTILE}}]])
    junit = sevro_project.root / "junit.xml"
    done = sevro_project.run(case, "--plugin", plugin, "--host-config", host, "--junit", junit)
    assert done.exit_code == 1, done.stderr
    raw = junit.read_bytes()
    assert b"<script>" not in raw and b"]]>" not in raw and b"\x01" not in raw
    assert b"\x1b" not in raw and "\ufffe".encode() not in raw
    failure = parse(junit).find("testsuite/testcase/failure")
    assert failure is not None and failure.text is not None
    # what a dashboard shows after parsing: the text as written, controls as visible escapes
    expected = "ready ]]> <script>alert(1)</script> &amp; \\x01\\x1b[31m red \\ufffe end"
    assert expected in failure.text
    assert expected in failure.attrib["message"]


def test_an_experiment_is_one_testcase_per_case_and_arm(sevro_project: SevroProject) -> None:
    require_sandbox()
    notes_experiment(sevro_project, read_skill=False)
    junit = sevro_project.root / "junit.xml"
    done = sevro_project.run(
        "cases",
        "--skill",
        "skills/notes",
        "--baseline",
        "none",
        "--host-config",
        "host.json",
        "--trials",
        "2",
        "--junit",
        junit,
    )
    assert done.exit_code == 1, done.stderr
    root = parse(junit)
    assert counts(root) == {"tests": 2, "failures": 1, "errors": 0, "skipped": 0}
    found = junit_cases(root)
    assert sorted(found) == [("notes", "baseline"), ("notes", "candidate")]
    assert kind(found[("notes", "baseline")]) == "failure"
    assert kind(found[("notes", "candidate")]) is None
    failure = found[("notes", "baseline")].find("failure")
    assert failure is not None and "check highlights (sevro.shell) failed" in str(failure.text)


def test_report_writes_the_same_junit_and_summary_as_the_run(
    sevro_project: SevroProject, four_cases: tuple[Path, Path]
) -> None:
    cases, host = four_cases
    from_run = sevro_project.root / "run.xml"
    summary = sevro_project.root / "summary.md"
    summary.write_text("earlier step\n")
    env = {"GITHUB_STEP_SUMMARY": str(summary)}
    done = sevro_project.run(
        cases, "--host-config", host, "--junit", from_run, "--github-summary", env=env
    )
    assert done.exit_code == 4, done.stderr
    after_run = summary.read_text()
    assert after_run.startswith("earlier step\n# sevro report\n")
    assert "| bad |" in after_run and "regex assertion failed" in after_run  # with reasons
    run_dir = Path(done.json()["evidencePath"]).parent
    from_report = sevro_project.root / "report.xml"
    reported = sevro_project.sevro(
        "report", run_dir, "--junit", from_report, "--github-summary", env=env
    )
    assert reported.exit_code == 0, reported.stderr
    assert reported.stdout.startswith("# sevro report")  # stdout is the report, unchanged
    assert from_report.read_bytes() == from_run.read_bytes()
    assert summary.read_text().startswith(after_run + "# sevro report\n")  # appended again


def test_github_summary_without_the_variable_says_so_and_does_nothing_else(
    sevro_project: SevroProject, four_cases: tuple[Path, Path]
) -> None:
    cases, host = four_cases
    env = {"GITHUB_STEP_SUMMARY": ""}
    done = sevro_project.run(cases, "--host-config", host, "--github-summary", env=env)
    assert done.exit_code == 4, done.stderr  # the run's own exit code, not an error
    notes = [line for line in done.stderr.splitlines() if "GITHUB_STEP_SUMMARY" in line]
    assert notes == ["sevro: --github-summary: $GITHUB_STEP_SUMMARY is not set; no summary written"]
    assert sorted(p.name for p in sevro_project.root.iterdir()) == [
        "cases.json",
        "host.json",
        "results",
    ]


@pytest.mark.parametrize(
    ("flag", "where"),
    [
        ("--junit", "missing/junit.xml"),
        ("--junit", "."),
        ("--github-summary", "missing/summary.md"),
    ],
)
@pytest.mark.parametrize("command", ["run", "report"])
def test_an_output_that_cannot_be_written_is_refused_before_anything_runs(
    sevro_project: SevroProject,
    four_cases: tuple[Path, Path],
    flag: str,
    where: str,
    command: str,
) -> None:
    cases, host = four_cases
    target = sevro_project.root / where
    args: list[Any] = ["--junit", target] if flag == "--junit" else ["--github-summary"]
    env = {"GITHUB_STEP_SUMMARY": str(target)}
    if command == "run":
        done = sevro_project.run(cases, "--host-config", host, *args, env=env)
        assert done.json()["exitCode"] == 64
    else:
        done = sevro_project.sevro("report", sevro_project.root / "no-such-run", *args, env=env)
    assert done.exit_code == 64, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("sevro: error: ") and flag in line and "Traceback" not in line
    assert not sevro_project.results.exists()  # nothing ran
    assert not (sevro_project.root / "missing").exists()


def test_a_writable_output_is_not_refused(
    sevro_project: SevroProject, four_cases: tuple[Path, Path]
) -> None:
    """Positive control for the refusal above: the same flags with a writable target run."""
    cases, host = four_cases
    (sevro_project.root / "out").mkdir()
    target = sevro_project.root / "out" / "junit.xml"
    done = sevro_project.run(cases, "--host-config", host, "--junit", target)
    assert done.exit_code == 4 and target.is_file()


def test_a_junit_file_in_a_read_only_directory_is_refused_up_front(
    sevro_project: SevroProject, four_cases: tuple[Path, Path]
) -> None:
    """Even root cannot write a read-only mount; bubblewrap makes one for the test."""
    bwrap = require_tool("bwrap")
    cases, host = four_cases
    out = sevro_project.root / "out"
    out.mkdir()
    done = subprocess.run(
        [
            bwrap, "--bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--ro-bind", str(out), str(out),
            sys.executable, "-m", "sevro_core", "run", str(cases), "--host-config", str(host),
            "--results-root", str(sevro_project.results), "--junit", str(out / "junit.xml"),
        ],
        cwd=sevro_project.root, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 64, done.stderr
    assert done.stderr == (
        f"sevro: error: {out / 'junit.xml'}: --junit: the directory {out} is not writable\n"
    )
    assert not sevro_project.results.exists()
