"""SIGINT/SIGTERM during start-up end with one line and exit 130/143, never a traceback.

The entry point (sevro_core.entry) is the first sevro code the interpreter runs; from the moment
it has installed its SIGTERM handler (visible in /proc/PID/status as a caught signal) every
signal must end the process cleanly: before the run, with ``sevro: interrupted by SIG...``;
once the run has started, as an interrupted run. What comes before that moment is the
interpreter's own start-up (documented in docs/running.md).
"""

from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path

import pytest

from sevro_core.testing import SevroProcess, SevroProject, start_sevro
from tests.e2e.helpers import regex_check, spawn_unsandboxed_run

DELAYS = (0.0, 0.002, 0.005, 0.01, 0.02, 0.035, 0.05, 0.08, 0.12, 0.2)
EXIT_CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}
HANG_LIMIT = 60.0


def catches_sigterm(pid: int) -> bool:
    """Whether the process has a handler for SIGTERM: sevro's entry point has run."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    for line in status.splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) & (1 << (signal.SIGTERM - 1)))
    return False


def start(project: SevroProject, command: list[str]) -> SevroProcess:
    case = project.case(checks=[regex_check("r", "ok")])
    host = project.script(default=[[{"sleep": {"ms": 60_000}}, {"reply": {"text": "ok"}}]])
    process = spawn_unsandboxed_run(project, case, host, launcher=tuple(command))
    deadline = time.monotonic() + HANG_LIMIT
    while not catches_sigterm(process.pid):
        assert process.poll() is None, process.finish()
        assert time.monotonic() < deadline, "the entry point never ran"
        time.sleep(0.0005)
    return process


def assert_clean_end(process: SevroProcess, sig: signal.Signals, printed: str = "") -> str:
    """Assert a clean end; return where the signal landed: ``start-up`` or ``run``.
    ``printed`` is what the test already read from stdout."""
    done = process.finish(HANG_LIMIT, hang=f"sevro hung after {sig.name} in start-up")
    assert done.stdout.startswith(printed)
    stdout, stderr = done.stdout.removeprefix(printed), done.stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    # Rarely (1 in ~80 here) CPython ends with its own SIGINT re-raise after sevro's line and
    # sys.exit(130): the shell shows 130 either way. Not yet understood; see the issue-12 report.
    accepted = {EXIT_CODES[sig], -signal.SIGINT} if sig == signal.SIGINT else {EXIT_CODES[sig]}
    assert done.exit_code in accepted, (done.exit_code, stderr)
    if stdout:  # the run had started: it was interrupted like any run
        assert json.loads(stdout)["exitCode"] == EXIT_CODES[sig]
        return "run"
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert lines[-1] == f"sevro: interrupted by {sig.name}", stderr
    assert all(line.startswith("20") for line in lines[:-1]), stderr  # only log lines before
    return "start-up"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_at_any_early_moment_ends_with_one_line(
    sevro_project: SevroProject, sig: signal.Signals
) -> None:
    landed = []
    for delay in DELAYS:
        process = start(sevro_project, [sys.executable, "-m", "sevro_core"])
        time.sleep(delay)
        process.send_signal(sig)
        landed.append(assert_clean_end(process, sig))
    # Importing the CLI takes far longer than nothing: the earliest signals hit start-up (with
    # the handler installed only by the run, as before, they would all have hit the run).
    assert landed[0] == "start-up", landed


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_the_console_script_goes_through_the_same_entry_point(
    sevro_project: SevroProject, sig: signal.Signals
) -> None:
    script = Path(sys.executable).parent / "sevro"
    assert "sevro_core.entry" in script.read_text()
    process = start(sevro_project, [str(script)])
    time.sleep(0.01)
    process.send_signal(sig)
    assert_clean_end(process, sig)


SLOW_COMMAND = """
import sys, time
import typer
from sevro_core import cli, entry

slow = typer.Typer()


@slow.command()
def run() -> None:
    print("inside the command", flush=True)
    time.sleep(60)


cli.app = slow
sys.argv = ["sevro"]
entry.main()
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_inside_a_command_is_not_swallowed_by_typer(sig: signal.Signals) -> None:
    """Typer turns KeyboardInterrupt in a command into a silent exit 130, even for SIGTERM."""
    with start_sevro([], launcher=(sys.executable, "-c", SLOW_COMMAND)) as process:
        first = process.wait_for_line("inside the command", stream="stdout", timeout=HANG_LIMIT)
        assert first == ["inside the command"]
        process.send_signal(sig)
        assert assert_clean_end(process, sig, printed="inside the command\n") == "start-up"
