from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

from sevro_core.isolation.processes import run_bounded
from sevro_core.models import CancelToken

ENV = {"PATH": "/usr/bin:/bin"}


def alive(marker: str) -> bool:
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=False).stdout
    return any(marker in line and "ps -eo" not in line for line in out.splitlines())


def test_output_is_bounded_and_exit_code_kept(tmp_path: Path) -> None:
    outcome = run_bounded(
        ["sh", "-c", "head -c 5000 /dev/zero; exit 3"],
        cwd=tmp_path,
        env=ENV,
        timeout_s=10,
        cancel=CancelToken(),
        output_limit=1000,
    )
    assert outcome.exit_code == 3
    assert len(outcome.output) == 1000 and outcome.truncated
    assert not outcome.timed_out


def test_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    marker = f"sleep 31{os.getpid() % 1000}"
    outcome = run_bounded(
        ["sh", "-c", f"{marker} & {marker}"],
        cwd=tmp_path,
        env=ENV,
        timeout_s=0.3,
        cancel=CancelToken(),
        output_limit=100,
    )
    assert outcome.timed_out and outcome.exit_code is None
    time.sleep(0.1)
    assert not alive(marker)


def test_background_processes_die_with_the_command(tmp_path: Path) -> None:
    marker = f"sleep 32{os.getpid() % 1000}"
    outcome = run_bounded(
        ["sh", "-c", f"({marker} >/dev/null 2>&1 &) ; echo started"],
        cwd=tmp_path,
        env=ENV,
        timeout_s=10,
        cancel=CancelToken(),
        output_limit=100,
    )
    assert outcome.exit_code == 0 and outcome.output == b"started\n"
    time.sleep(0.1)
    assert not alive(marker)


def test_cancellation_stops_the_command(tmp_path: Path) -> None:
    cancel = CancelToken()
    threading.Timer(0.2, cancel.cancel, args=("SIGINT",)).start()
    started = time.monotonic()
    outcome = run_bounded(
        ["sleep", "30"], cwd=tmp_path, env=ENV, timeout_s=30, cancel=cancel, output_limit=100
    )
    assert outcome.cancelled and time.monotonic() - started < 10


def test_stdin_is_fed(tmp_path: Path) -> None:
    outcome = run_bounded(
        ["cat"],
        cwd=tmp_path,
        env=ENV,
        timeout_s=10,
        cancel=CancelToken(),
        output_limit=1 << 20,
        stdin=b"y" * 200_000,
    )
    assert outcome.output == b"y" * 200_000


def test_stderr_can_be_kept_apart_and_bounded(tmp_path: Path) -> None:
    outcome = run_bounded(
        ["sh", "-c", "echo out; head -c 5000 /dev/zero >&2"],
        cwd=tmp_path,
        env=ENV,
        timeout_s=10,
        cancel=CancelToken(),
        output_limit=100,
        stderr="capture",
        stderr_limit=10,
    )
    assert outcome.output == b"out\n" and outcome.stderr == b"\0" * 10
    assert not outcome.truncated


def test_output_can_be_discarded(tmp_path: Path) -> None:
    outcome = run_bounded(
        ["sh", "-c", "echo out; echo err >&2; exit 4"],
        cwd=tmp_path,
        env=ENV,
        timeout_s=10,
        cancel=CancelToken(),
        output_limit=0,
        capture_output=False,
        stderr="discard",
    )
    assert outcome.exit_code == 4 and outcome.output == b"" and outcome.stderr == b""


def test_overflow_kills_the_group_at_once(tmp_path: Path) -> None:
    started = time.monotonic()
    outcome = run_bounded(
        ["sh", "-c", "yes"],
        cwd=tmp_path,
        env=ENV,
        timeout_s=30,
        cancel=CancelToken(),
        output_limit=1000,
        kill_on_overflow=True,
    )
    assert outcome.overflowed and outcome.truncated and outcome.exit_code is None
    assert len(outcome.output) == 1000 and time.monotonic() - started < 10


def test_a_background_process_holding_the_pipe_does_not_stall_the_run(tmp_path: Path) -> None:
    marker = f"sleep 33{os.getpid() % 1000}"
    started = time.monotonic()
    outcome = run_bounded(
        ["sh", "-c", f"{marker} & echo done"],
        cwd=tmp_path,
        env=ENV,
        timeout_s=20,
        cancel=CancelToken(),
        output_limit=100,
    )
    assert outcome.exit_code == 0 and not outcome.timed_out and outcome.output == b"done\n"
    assert time.monotonic() - started < 5
    time.sleep(0.1)
    assert not alive(marker)


def test_a_silent_command_is_killed_as_stalled(tmp_path: Path) -> None:
    """No output for ``stall_s`` while it runs: the group dies long before the timeout."""
    marker = f"sleep 32{os.getpid() % 1000}"
    started = time.monotonic()
    outcome = run_bounded(
        ["sh", "-c", f"echo started; echo 'waiting on the model' >&2; {marker} & {marker}"],
        cwd=tmp_path,
        env=ENV,
        timeout_s=60,
        cancel=CancelToken(),
        output_limit=1000,
        stderr="capture",
        stderr_limit=1000,
        stall_s=0.5,
    )
    assert outcome.stalled and not outcome.timed_out and outcome.exit_code is None
    assert outcome.output == b"started\n" and outcome.stderr == b"waiting on the model\n"
    assert time.monotonic() - started < 10
    assert not alive(marker)


def test_a_command_that_keeps_printing_is_not_stalled(tmp_path: Path) -> None:
    """Each line resets the stall clock: 1.5 s of work in 0.3 s steps passes a 0.8 s bound."""
    outcome = run_bounded(
        ["sh", "-c", "for i in 1 2 3 4 5; do echo $i; sleep 0.3; done"],
        cwd=tmp_path,
        env=ENV,
        timeout_s=60,
        cancel=CancelToken(),
        output_limit=1000,
        stall_s=0.8,
    )
    assert not outcome.stalled and outcome.exit_code == 0
    assert outcome.output == b"1\n2\n3\n4\n5\n"


def test_stderr_output_is_not_progress(tmp_path: Path) -> None:
    """A CLI that only logs (retries, reconnects) to stderr is still stalled."""
    outcome = run_bounded(
        ["sh", "-c", "while true; do echo reconnecting >&2; sleep 0.1; done"],
        cwd=tmp_path,
        env=ENV,
        timeout_s=60,
        cancel=CancelToken(),
        output_limit=1000,
        stderr="capture",
        stderr_limit=100,
        stall_s=0.6,
    )
    assert outcome.stalled and outcome.stderr.startswith(b"reconnecting\n")


def _timed_out_with_trap(tmp_path: Path, **kwargs: float) -> bool:
    """Time out a shell that records SIGTERM; whether it got one."""
    marker = tmp_path / "terminated"
    outcome = run_bounded(
        ["sh", "-c", f"trap 'echo term > {marker}; exit 0' TERM; sleep 30 & wait"],
        cwd=tmp_path,
        env=ENV,
        timeout_s=0.5,
        cancel=CancelToken(),
        output_limit=100,
        **kwargs,
    )
    assert outcome.timed_out
    return marker.exists()


def test_a_timed_out_group_gets_sigterm_first_by_default(tmp_path: Path) -> None:
    assert _timed_out_with_trap(tmp_path)


def test_no_kill_grace_means_sigkill_only(tmp_path: Path) -> None:
    assert not _timed_out_with_trap(tmp_path, kill_grace_s=0)
