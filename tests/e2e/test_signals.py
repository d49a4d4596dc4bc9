"""SIGINT and SIGTERM: running trials are cancelled, finished ones kept, exit 130 / 143."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from sevro_core.testing import SevroProject
from tests.e2e.helpers import assert_valid_evidence, regex_check


def wait_for(predicate: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not reached")


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_cancels_running_and_keeps_finished_trials(
    sevro_project: SevroProject, sig: int, code: int
) -> None:
    marker = sevro_project.root / "first-trial-done"
    sleeping = sevro_project.root / "sleeping"
    case = sevro_project.case(checks=[regex_check("r", "ok")])
    host = sevro_project.script(
        default=[
            [
                {
                    "run": {
                        "command": f"if [ -e {marker} ]; then touch {sleeping}; exec sleep 61; "
                        f"else touch {marker}; fi"
                    }
                },
                {"reply": {"text": "ok"}},
            ]
        ]
    )
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sevro_core",
            "run",
            str(case),
            "--host-config",
            str(host),
            "--trials",
            "3",
            "--jobs",
            "1",
            # The trials coordinate through files in the project, which is exactly what the
            # sandbox forbids; sandboxed cancellation is tested in tests/e2e/test_sandbox_run.py.
            "--sandbox",
            "none",
            "--json",
            "--results-root",
            str(sevro_project.results),
        ],
        cwd=sevro_project.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for(sleeping.exists)
    process.send_signal(sig)
    if sig == signal.SIGINT:
        time.sleep(0.05)
        process.send_signal(sig)  # a second interrupt must not corrupt anything
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == code, stderr
    assert "Traceback" not in stderr
    result = json.loads(stdout)
    assert result["exitCode"] == code
    assert result["execution"]["status"] == "cancelled"
    trials = result["cases"][0]["trials"]
    assert [t["execution"] for t in trials] == ["completed", "cancelled", "cancelled"]
    assert trials[0]["task"] == "passed" and Path(trials[0]["artifactPath"]).exists()
    assert Path(trials[1]["artifactPath"]).exists(), "the cancelled trial keeps its evidence"
    assert trials[2]["artifactPath"] is None, "trial 3 was never admitted"
    run = assert_valid_evidence(result)
    assert run["status"] == "interrupted"
    assert result["diagnostic"]["message"] == f"interrupted by {signal.Signals(sig).name}"
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=False).stdout
    assert "sleep 61" not in ps
