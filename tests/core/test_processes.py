from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

from sevro_core.models import CancelToken
from sevro_core.processes import run_bounded

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
        ["sh", "-c", "printf 'out\\0put'; head -c 3000 /dev/zero | tr '\\0' e >&2; cat"],
        cwd=tmp_path,
        env=ENV,
        timeout_s=10,
        cancel=CancelToken(),
        output_limit=1000,
        stdin=b"-in",
        stderr_limit=100,
    )
    assert outcome.exit_code == 0
    assert outcome.output == b"out\0put-in" and not outcome.truncated
    assert outcome.errors == b"e" * 100
    merged = run_bounded(
        ["sh", "-c", "echo a; echo b >&2"],
        cwd=tmp_path,
        env=ENV,
        timeout_s=10,
        cancel=CancelToken(),
        output_limit=1000,
    )
    assert sorted(merged.output.split()) == [b"a", b"b"] and merged.errors == b""
