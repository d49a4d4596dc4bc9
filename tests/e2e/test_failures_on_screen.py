"""The run summary says why each failed or errored case did not pass: bounded and escaped."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from sevro_core.limits import (
    MAX_FAILURE_REASON_CHARS,
    MAX_SUMMARY_FAILED_CASES,
    MAX_SUMMARY_REASONS_PER_CASE,
)
from sevro_core.testing import SevroProject, require_sandbox
from sevro_hosts_codex.testing import require_codex
from tests.e2e.helpers import regex_check

HEADER = "why cases did not pass (first failing check or error per trial):"


def summary(project: SevroProject, *args: Any) -> str:
    """``sevro run`` without --json (the human summary), as a user off a terminal sees it."""
    done = project.sevro("run", *args, "--results-root", project.results)
    assert done.exit_code in (1, 2), done.stderr
    return done.stdout


def reasons(stdout: str) -> list[str]:
    assert HEADER in stdout, stdout
    block = stdout.split(HEADER + "\n", 1)[1]
    return [line for line in block.splitlines() if line.startswith("  ")]


def test_failing_shell_check_shows_its_detail(sevro_project: SevroProject) -> None:
    require_sandbox()
    shell = {
        "id": "greets",
        "grader": "sevro.shell",
        "configuration": {"run": "echo bye", "expectExact": "hello"},
    }
    case = sevro_project.case(checks=[regex_check("said", "^ok$"), shell])
    host = sevro_project.script(default=[[{"reply": {"text": "ok"}}]])
    out = summary(sevro_project, case, "--host-config", host, "--trials", "3")
    assert reasons(out)[0] == (
        "  example (trials 1-3 of 3): check greets (sevro.shell) failed: "
        "expectExact: stdout differs from the expected text"
    )
    assert "sevro report --details" in out


def test_passing_case_lists_nothing(sevro_project: SevroProject) -> None:
    case = sevro_project.case(checks=[regex_check("said", "^ok$")])
    host = sevro_project.script(default=[[{"reply": {"text": "ok"}}]])
    done = sevro_project.sevro("run", case, "--host-config", host, "--results-root", "r")
    assert done.exit_code == 0, done.stderr
    assert HEADER not in done.stdout


def test_scripted_failure_is_escaped_and_bounded(sevro_project: SevroProject) -> None:
    hostile = "x\x1b[2J\x1b]0;owned\x07\nFAKE: all passed\u202e" + "y" * 3000
    case = sevro_project.case(checks=[regex_check("said", "^ok$")])
    host = sevro_project.script(default=[[{"fail": {"message": hostile}}]])
    out = summary(sevro_project, case, "--host-config", host, "--trials", "2", "--jobs", "1")
    lines = reasons(out)
    assert lines[0].startswith(
        "  example (trial 1 of 2): execution failed (sevro.host.failed): "
        "scripted failure: x\\x1b[2J\\x1b]0;owned\\x07\\nFAKE: all passed\\u202e"
    )
    assert lines[0].endswith("…")
    assert len(lines[0]) <= len("  example (trial 1 of 2): ") + MAX_FAILURE_REASON_CHARS
    # an execution failure stops admission: the other trial says so instead of staying silent
    assert lines[1].startswith("  example (trial 2 of 2): not run:")
    for raw in ("\x1b", "\x07", "\u202e"):
        assert raw not in out
    assert "\nFAKE" not in out


def test_distinct_reasons_per_case_are_capped(sevro_project: SevroProject) -> None:
    """Each trial fails a different check: the summary names a few and counts the rest."""
    trials = MAX_SUMMARY_REASONS_PER_CASE + 2
    checks = [regex_check(f"not-{n}", f"^(?!no {n}$)") for n in range(1, trials + 1)]
    case = sevro_project.case(checks=checks)
    host = sevro_project.script(default=[[{"reply": {"text": "no {{sevro.trial}}"}}]])
    out = summary(sevro_project, case, "--host-config", host, "--trials", str(trials))
    lines = reasons(out)
    assert lines[:MAX_SUMMARY_REASONS_PER_CASE] == [
        f"  example (trial {n} of {trials}): check not-{n} (sevro.regex) failed: "
        "regex assertion failed"
        for n in range(1, MAX_SUMMARY_REASONS_PER_CASE + 1)
    ]
    assert lines[MAX_SUMMARY_REASONS_PER_CASE] == "  example: … and 2 more reason(s) in 2 trial(s)"


def test_many_failed_cases_are_capped(sevro_project: SevroProject) -> None:
    count = MAX_SUMMARY_FAILED_CASES + 3
    for index in range(count):
        sevro_project.case(
            f"cases/c{index:02d}.json", id=f"c{index:02d}", checks=[regex_check("r", "^ok$")]
        )
    host = sevro_project.script(default=[[{"reply": {"text": "no"}}]])
    out = summary(sevro_project, sevro_project.root / "cases", "--host-config", host)
    lines = reasons(out)
    assert len(lines) == MAX_SUMMARY_FAILED_CASES + 2
    assert lines[-2] == "  … and 3 more case(s)"
    assert lines[-1].startswith("  (all reasons: sevro report --details ")


@pytest.mark.slow
def test_real_codex_error_reaches_the_summary_escaped(
    sevro_project: SevroProject, mock_model: Callable[..., Any]
) -> None:
    """The real Codex CLI against a model that fails the turn with terminal escapes in its text."""
    from sevro_core.testing.mockmodel import Message, reply
    from tests.hosts_codex.helpers import API_KEY, API_KEY_ENV, host_config

    codex = require_codex()
    server = mock_model([reply(Message("partial"), error="\x1b[31mNot logged in\x1b[0m")])
    case = sevro_project.case(checks=[regex_check("said", "^ok$")])
    done = sevro_project.sevro(
        "run",
        case,
        "--host",
        "codex",
        "--host-config",
        host_config(sevro_project, server),
        "--model",
        "mock-model",
        "--codex-bin",
        codex,
        "--codex-api-key-env",
        API_KEY_ENV,
        "--results-root",
        sevro_project.results,
        env={API_KEY_ENV: API_KEY},
        timeout=180,
    )
    assert done.exit_code == 2, done.stderr
    (line,) = [x for x in reasons(done.stdout) if x.startswith("  example")]
    assert line.startswith("  example (trial 1 of 1): execution failed (sevro.host.")
    assert "\\x1b[31mNot logged in\\x1b[0m" in line
    assert "\x1b" not in done.stdout
