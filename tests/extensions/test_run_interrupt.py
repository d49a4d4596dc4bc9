"""Ctrl-C while ``sevro run`` talks to an extension before any trial: the run ends at once and
the extension's whole process group dies with it (nothing it started outlives the run)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from sevro_core.testing import SevroProject
from tests.extensions.conftest import SLOW
from tests.extensions.test_transport import _gone, _pids


def test_sigint_during_describe_ends_the_run_and_kills_the_extension_group(
    sevro_project: SevroProject,
) -> None:
    record = sevro_project.root / "record"
    record.mkdir()
    command = sevro_project.write_json("extension/command.json", [str(SLOW), str(record)])
    host = sevro_project.script(default=[[{"reply": {"text": "hello"}}]])
    argv = [
        *(sys.executable, "-m", "sevro_core", "run", "--host", "scripted"),
        *("--host-config", str(host), "--project-root", str(sevro_project.root)),
        *("--results-root", str(sevro_project.results), "--sandbox", "none"),
        *("--extension-command-file", str(command), "--extension-source-file", str(SLOW)),
        *("--case-id", "greets"),
    ]
    process = subprocess.Popen(
        argv, cwd=sevro_project.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        child, grandchild = _pids(record)  # describe is under way: the extension waits forever
        os.kill(process.pid, signal.SIGINT)
        _stdout, stderr = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, stderr
    assert "interrupted" in stderr
    assert _gone(child), "the extension outlived the interrupted run"
    assert _gone(grandchild), "a process the extension started outlived the interrupted run"
