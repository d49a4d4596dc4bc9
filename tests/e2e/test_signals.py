"""SIGINT and SIGTERM: running trials are cancelled, finished ones kept, exit 130 / 143."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from sevro_core.testing import SevroProject, start_sevro
from tests.e2e.helpers import assert_valid_evidence, regex_check


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
    args = [case, "--host-config", host, "--trials", "3", "--jobs", "1"]
    # The trials coordinate through files in the project, which is exactly what the
    # sandbox forbids; sandboxed cancellation is tested in tests/e2e/test_sandbox_run.py.
    args += ["--sandbox", "none", "--json", "--results-root", sevro_project.results]
    with start_sevro(["run", *args], cwd=sevro_project.root) as process:
        process.wait_until(sleeping, timeout=30)
        process.send_signal(sig)
        if sig == signal.SIGINT:
            time.sleep(0.05)
            process.send_signal(sig)  # a second interrupt must not corrupt anything
        done = process.finish(timeout=60)
    stdout, stderr = done.stdout, done.stderr
    assert done.exit_code == code, stderr
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
