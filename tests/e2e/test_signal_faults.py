"""Fault suite: signals at any point of a run end it with 130/143 and never hang it.

Each run gets a generous hang limit (``HANG_LIMIT``): exceeding it is a hang, not a slow
machine; the bound users rely on is documented in docs/running.md.
"""

from __future__ import annotations

import os
import random
import signal
import time
from pathlib import Path

import pytest

from sevro_core.testing import SevroProject
from tests.e2e.helpers import regex_check, spawn_unsandboxed_run, trial_evidence

HANG_LIMIT = 60.0
EXIT_CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signals_during_heavy_log_writing_always_end_the_run(
    sevro_project: SevroProject, sig: signal.Signals
) -> None:
    """The handler used to log; a signal landing inside a log write deadlocked the runner."""
    case = sevro_project.case(checks=[regex_check("r", "ok")])
    host = sevro_project.script(default=[[{"reply": {"text": "ok"}}]])
    chance = random.Random(12)
    for attempt in range(12):
        with spawn_unsandboxed_run(
            sevro_project, case, host, "--trials", "1000", "--jobs", "3", "-vv"
        ) as process:
            # the main thread is writing log lines now
            process.wait_for_line("trial finished", timeout=HANG_LIMIT)
            time.sleep(chance.uniform(0.0, 0.3))
            process.send_signal(sig)
            done = process.finish(
                HANG_LIMIT, hang=f"attempt {attempt}: the run hung after {sig.name}"
            )
        assert done.exit_code == EXIT_CODES[sig], attempt


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_a_pathological_regex_match_is_obeyed(
    sevro_project: SevroProject, sig: signal.Signals
) -> None:
    """The match ends within REGEX_CHECK_TIMEOUT_SECONDS; the run then stops as interrupted."""
    case = sevro_project.case(checks=[regex_check("slow", "^(a|aa)+$")])
    host = sevro_project.script(default=[[{"reply": {"text": "a" * 4000 + "b"}}]])
    with spawn_unsandboxed_run(
        sevro_project, case, host, "--trials", "3", "--jobs", "1", "-vv"
    ) as process:
        process.wait_for_line("run started", timeout=HANG_LIMIT)
        started = cpu_seconds(process.pid)
        # only the match burns CPU: we are inside it
        process.wait_until(
            lambda: cpu_seconds(process.pid) >= started + 1.0,
            timeout=HANG_LIMIT,
            what="the match to start",
        )
        process.send_signal(sig)
        done = process.finish(HANG_LIMIT, hang=f"the run ignored {sig.name} during a regex match")
    assert done.exit_code == EXIT_CODES[sig]
    result = done.json()
    assert result["exitCode"] == EXIT_CODES[sig]
    trials = result["cases"][0]["trials"]
    assert [t["execution"] for t in trials] == ["cancelled"] * 3, trials


def test_without_a_signal_the_pathological_match_is_a_grading_error(
    sevro_project: SevroProject,
) -> None:
    """The positive control: the same run, uninterrupted, errors on the time limit."""
    case = sevro_project.case(checks=[regex_check("slow", "^(a|aa)+$")])
    host = sevro_project.script(default=[[{"reply": {"text": "a" * 4000 + "b"}}]])
    with spawn_unsandboxed_run(sevro_project, case, host, "--trials", "1") as process:
        done = process.finish(HANG_LIMIT)
    result = done.json()
    assert result["grading"]["status"] == "error", done.stderr
    evidence = trial_evidence(result)
    assert evidence["grading"]["error"]["checkId"] == "slow"
    (check,) = evidence["checks"]
    assert check["status"] == "unavailable"
    assert check["detail"].startswith(
        "grader error: check 'slow': regex /^(a|aa)+$/ did not finish within the 5 s regex time "
        "limit of a check (REGEX_CHECK_TIMEOUT_SECONDS"
    )
