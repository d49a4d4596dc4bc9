"""docs/plugins.md's grader, host, reporter and executor work as the page says, through the real
CLI.

Each ``python`` block of the page names its file on its first line (``# acme_file_grader.py``);
the blocks are written to the test's directory and loaded with ``--plugin``. Every claim is
checked with a control where the behaviour is missing: the grader fails when the file is absent
or says something else, the host fails a command that fails, the reporter prints what the runs
were and is unknown without ``--plugin``.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from sevro_core.testing import CliResult, SevroProject, require_sandbox

DOC = Path(__file__).resolve().parent.parent / "docs" / "plugins.md"
PYTHON_BLOCK = re.compile(r"^```python\n# (?P<name>[a-z_]+\.py)\n(?P<body>.*?)^```$", re.M | re.S)
EXAMPLES = (
    "acme_file_grader.py",
    "acme_shell_host.py",
    "acme_csv_reporter.py",
    "acme_serial_executor.py",
    "test_acme.py",
)
"""The page's files; ``test_acme.py`` is the test kit's (tests/core/test_testkit_docs.py)."""


def documented_plugins(directory: Path) -> dict[str, Path]:
    """Write every named python block of the page into ``directory``."""
    text = DOC.read_text("utf-8")
    assert text.count("```python\n") == len(PYTHON_BLOCK.findall(text)), "a block lacks its name"
    written = {}
    for match in PYTHON_BLOCK.finditer(text):
        path = directory / match["name"]
        path.write_text(f"# {match['name']}\n{match['body']}", encoding="utf-8")
        written[match["name"]] = path
    return written


@pytest.fixture
def plugins(sevro_project: SevroProject) -> dict[str, Path]:
    written = documented_plugins(sevro_project.root)
    assert set(written) == set(EXAMPLES)
    return written


def _status_case(project: SevroProject, prompt: str = "Write STATUS.md.") -> Path:
    return project.case(
        id="status",
        prompt=prompt,
        checks=[
            {
                "id": "status-ready",
                "grader": "acme.file-contains",
                "configuration": {"path": "STATUS.md", "contains": "ready"},
            }
        ],
    )


def _checks(done: CliResult) -> tuple[int, str, dict[str, Any]]:
    (case,) = done.json()["cases"]
    (trial,) = case["trials"]
    evidence = json.loads(Path(trial["artifactPath"]).read_text())
    checks = {c["id"]: c for c in evidence["evidence"]["checks"]}
    return done.exit_code, case["task"], checks


def _scripted(project: SevroProject, plugin: Path, *steps: dict[str, Any]) -> CliResult:
    host = project.script(default=[[*steps, {"reply": {"text": "done"}}]])
    return project.run(_status_case(project), "--host-config", host, "--plugin", plugin)


def test_the_grader_passes_only_when_the_file_says_it(
    plugins: dict[str, Path], sevro_project: SevroProject
) -> None:
    grader = plugins["acme_file_grader.py"]
    wrote = _scripted(sevro_project, grader, {"write": {"path": "STATUS.md", "content": "ready\n"}})
    code, task, checks = _checks(wrote)
    assert (code, task) == (0, "passed"), wrote.stdout + wrote.stderr
    assert checks["status-ready"]["status"] == "passed"
    assert checks["status-ready"]["grader"] == "acme.file-contains"

    absent = _scripted(sevro_project, grader)
    code, task, checks = _checks(absent)
    assert (code, task) == (1, "failed"), absent.stdout + absent.stderr
    assert checks["status-ready"]["status"] == "failed"
    assert checks["status-ready"]["detail"] == "STATUS.md does not exist"

    other = _scripted(
        sevro_project, grader, {"write": {"path": "STATUS.md", "content": "blocked\n"}}
    )
    code, task, checks = _checks(other)
    assert (code, task) == (1, "failed"), other.stdout + other.stderr
    assert checks["status-ready"]["detail"] == "STATUS.md lacks 'ready'"


def test_the_grader_refuses_a_bad_configuration_before_any_trial(
    plugins: dict[str, Path], sevro_project: SevroProject
) -> None:
    case = sevro_project.case(
        checks=[
            {
                "id": "escape",
                "grader": "acme.file-contains",
                "configuration": {"path": "../outside", "contains": "x"},
            }
        ]
    )
    host = sevro_project.script(default=[[{"reply": {"text": "done"}}]])
    done = sevro_project.run(
        case, "--host-config", host, "--plugin", plugins["acme_file_grader.py"]
    )
    assert done.exit_code == 64, done.stdout + done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "#/checks/0/configuration/path:" in line and "'..'" in line
    assert not sevro_project.results.exists() or not any(sevro_project.results.rglob("*.json"))


def test_the_host_runs_the_prompt_in_the_sandbox(
    plugins: dict[str, Path], sevro_project: SevroProject
) -> None:
    require_sandbox()  # the host runs every prompt through the trial's sandbox
    loaded = ("--plugin", plugins["acme_shell_host.py"], "--plugin", plugins["acme_file_grader.py"])
    case = _status_case(sevro_project, "printf 'ready\\n' > STATUS.md && echo done")
    done = sevro_project.run(case, "--host", "acme.host.shell", *loaded)
    code, task, checks = _checks(done)
    assert (code, task) == (0, "passed"), done.stdout + done.stderr
    (case_result,) = done.json()["cases"]
    trial_file = Path(case_result["trials"][0]["artifactPath"])
    assert trial_file.with_name("trial-1-raw.txt").read_text() == "done\n"  # the reply
    evidence = json.loads(trial_file.read_text())["evidence"]
    codes = next(o for o in evidence["observations"] if o["id"] == "acme.shell.exit-codes")
    assert codes["source"] == "acme.host.shell" and codes["data"] == {"codes": [0]}

    lazy = _status_case(sevro_project, "echo done")  # replies, writes nothing
    code, task, checks = _checks(sevro_project.run(lazy, "--host", "acme.host.shell", *loaded))
    assert (code, task) == (1, "failed")
    assert checks["status-ready"]["detail"] == "STATUS.md does not exist"

    broken = _status_case(sevro_project, "printf 'ready\\n' > STATUS.md; exit 3")
    failed = sevro_project.run(broken, "--host", "acme.host.shell", *loaded)
    assert failed.exit_code == 2, failed.stdout + failed.stderr  # execution failed, not a pass
    (case_result,) = failed.json()["cases"]
    assert case_result["execution"] == "failed" and case_result["task"] != "passed"

    config = sevro_project.write_json("shell.json", {"timeout": 5})
    refused = sevro_project.run(case, "--host", "acme.host.shell", "--host-config", config, *loaded)
    assert refused.exit_code == 64 and "only 'timeoutSeconds' is accepted" in refused.stderr


def test_the_host_setting_reaches_the_host_and_its_doctor(
    plugins: dict[str, Path], sevro_project: SevroProject
) -> None:
    require_sandbox()
    loaded = ("--plugin", plugins["acme_shell_host.py"], "--plugin", plugins["acme_file_grader.py"])
    case = _status_case(sevro_project, "printf 'ready\\n' > STATUS.md")
    host = ("--host", "acme.host.shell", *loaded)
    chosen = sevro_project.run(case, *host, "--host-setting", "acme.shell=/bin/sh")
    assert _checks(chosen)[:2] == (0, "passed"), chosen.stdout + chosen.stderr
    # control: the flag really selects the shell; /bin/false runs nothing and fails the turn
    wrong = sevro_project.run(case, *host, "--acme-shell", "/bin/false")
    assert wrong.exit_code == 2, wrong.stdout + wrong.stderr
    assert wrong.json()["cases"][0]["execution"] == "failed"

    healthy = sevro_project.sevro("doctor", *host, "--acme-shell", "/bin/sh")
    assert healthy.exit_code == 0, healthy.stdout + healthy.stderr
    shell = Path("/bin/sh").resolve()  # a path setting arrives expanded and made absolute
    assert f"ok   shell: {shell}" in healthy.stdout and "ok   sandbox" in healthy.stdout
    missing = sevro_project.sevro("doctor", *host, "--acme-shell", "/nonexistent/sh")
    assert missing.exit_code == 1 and "FAIL shell: /nonexistent/sh" in missing.stdout
    assert "fix: install /nonexistent/sh" in missing.stdout


def _csv(done: CliResult) -> list[dict[str, str]]:
    assert done.exit_code == 0, done.stdout + done.stderr
    return list(csv.DictReader(io.StringIO(done.stdout)))


def test_the_reporter_prints_each_run_as_a_csv_line(
    plugins: dict[str, Path], sevro_project: SevroProject
) -> None:
    grader, reporter = plugins["acme_file_grader.py"], plugins["acme_csv_reporter.py"]
    passed = _scripted(sevro_project, grader, {"write": {"path": "STATUS.md", "content": "ready"}})
    failed = _scripted(sevro_project, grader)
    assert (passed.exit_code, failed.exit_code) == (0, 1)
    report = sevro_project.sevro(
        "report", sevro_project.results, "--format", "csv", "--plugin", reporter
    )
    rows = {row["run"]: row for row in _csv(report)}
    assert rows == {
        passed.json()["runId"]: {
            "case": "status",
            "run": passed.json()["runId"],
            "trials": "1",
            "task": "passed",
            "pass rate": "1.0",
        },
        failed.json()["runId"]: {
            "case": "status",
            "run": failed.json()["runId"],
            "trials": "1",
            "task": "failed",
            "pass rate": "0.0",
        },
    }
    unknown = sevro_project.sevro("report", sevro_project.results, "--format", "csv")
    assert unknown.exit_code == 64 and "no reporter for format 'csv'" in unknown.stderr


def test_the_executor_runs_every_trial_with_its_own_flag(
    plugins: dict[str, Path], sevro_project: SevroProject
) -> None:
    executor = plugins["acme_serial_executor.py"]
    case = sevro_project.case(
        checks=[{"id": "r", "grader": "sevro.regex", "configuration": {"pattern": "^ok$"}}]
    )
    host = sevro_project.script(default=[[{"reply": {"text": "ok"}}]])
    common = (case, "--host-config", host, "--trials", "2", "--jobs", "2", "--plugin", executor)
    serial = sevro_project.run(
        *common, "--executor", "acme.executor.serial", "--acme-label", "serial"
    )
    assert serial.exit_code == 0, serial.stderr
    said = [line for line in serial.stderr.splitlines() if line.startswith("serial: ")]
    assert said == ["serial: example trial 1", "serial: example trial 2"]
    local = sevro_project.run(*common)  # control: the default executor says nothing
    assert local.exit_code == 0 and "example trial" not in local.stderr
    foreign = sevro_project.run(*common, "--acme-label", "serial")
    assert foreign.exit_code == 64
    assert foreign.stderr == "sevro: error: --acme-label needs --executor acme.executor.serial\n"
