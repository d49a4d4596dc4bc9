"""What every agent-CLI host shares: the stderr tail in a failure reason, the PID namespace,
and helpers that touch files an operator names (never blocked by a special file)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from sevro_core.hosts.agentcli import (
    is_native_executable,
    pid_namespace_argv,
    secret_strings,
    stderr_tail,
)
from sevro_core.isolation.processes import DEFAULT_PATH, run_bounded
from sevro_core.limits import MAX_HOST_STDERR_TAIL_CHARS, MAX_HOST_STDERR_TAIL_LINES
from sevro_core.models import CancelToken
from sevro_core.testing import require_tool

SECRET = "sk-planted-secret-0123456789"


def test_the_tail_keeps_the_last_lines_on_one_line() -> None:
    stderr = b"".join(f"line {i}\n".encode() for i in range(20))
    tail = stderr_tail(stderr, [])
    kept = [f"line {i}" for i in range(20 - MAX_HOST_STDERR_TAIL_LINES, 20)]
    assert tail == " | ".join(kept)
    assert "line 0 " not in tail and "\n" not in tail


def test_secrets_are_scrubbed_before_the_tail_is_cut() -> None:
    """A bound that falls inside a secret must not leave part of it behind."""
    for cut in range(1, len(SECRET)):
        stderr = SECRET.encode() + b"x" * (MAX_HOST_STDERR_TAIL_CHARS - cut)
        tail = stderr_tail(stderr, [SECRET])
        assert not any(SECRET[i : i + 6] in tail for i in range(len(SECRET) - 5)), cut
    assert stderr_tail(f"auth failed for {SECRET}\n".encode(), [SECRET]).endswith("[redacted]")
    assert SECRET in stderr_tail(f"{SECRET}\n".encode(), [])  # the negative control


def test_control_characters_are_escaped_and_the_tail_is_bounded() -> None:
    tail = stderr_tail(b"\x1b[31mred\x1b[0m\tx\x00boom\n", [])
    assert tail == "\\x1b[31mred\\x1b[0m\\tx\\x00boom"
    assert all(c.isprintable() for c in tail)
    long = stderr_tail(b"start " + b"y" * 10_000 + b" end\n", [])
    assert (
        len(long) == MAX_HOST_STDERR_TAIL_CHARS + 3
        and long.startswith("...")
        and long.endswith("end")
    )
    assert stderr_tail(b"", []) == "(empty)" and stderr_tail(b"\n \n", []) == "(empty)"


def _survivors(marker: str) -> list[int]:
    time.sleep(0.3)
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True, check=False)
    return [
        int(line.split()[0])
        for line in out.stdout.splitlines()
        if marker in line and "ps -eo" not in line
    ]


def _detach(prefix: list[str], marker: str, tmp_path: Path) -> list[int]:
    outcome = run_bounded(
        [
            *prefix,
            "/bin/sh",
            "-c",
            # Wait until the detached child has its own session (it writes `ready` after
            # setsid()), or the group kill at the end may reach it first and hide the escape.
            f"setsid -f /bin/sh -c 'echo > ready; exec {marker}' >/dev/null 2>&1 </dev/null; "
            "while [ ! -e ready ]; do sleep 0.01; done; rm ready; echo $$",
        ],
        cwd=tmp_path,
        env={"PATH": DEFAULT_PATH},
        timeout_s=30,
        cancel=CancelToken(),
        output_limit=100,
    )
    assert outcome.exit_code == 0, outcome
    return _survivors(marker)


def test_a_setsid_process_escapes_a_group_kill_but_not_the_pid_namespace(tmp_path: Path) -> None:
    """Why agent CLIs run in a PID namespace: a process group kill misses a new session."""
    unshare = require_tool("unshare")
    marker = f"sleep 93{os.getpid() % 10000}.25"
    escaped = _detach([], marker, tmp_path)
    for pid in escaped:
        os.kill(pid, signal.SIGKILL)
    assert escaped, "the negative control: without a namespace the detached process survives"
    assert not _detach(pid_namespace_argv(unshare), marker, tmp_path)


def test_an_executable_fifo_is_not_a_native_binary_and_never_blocks(tmp_path: Path) -> None:
    fifo = tmp_path / "codex"
    os.mkfifo(fifo)
    os.chmod(fifo, 0o755)
    assert is_native_executable(fifo) is False  # a blocking open() would hang here
    native = shutil.which("ls")
    assert native is not None and is_native_executable(Path(native))


def test_secret_strings_survive_any_nesting() -> None:
    assert secret_strings(b'{"a": ["12345678", {"b": "abcdefgh"}], "c": "short"}') == [
        "12345678",
        "abcdefgh",
    ]
    deep = b"[" * 100_000 + b"]" * 100_000  # past the parser's stack: scrubbed as text
    assert secret_strings(deep) == [deep.decode()]
    nested = b"[" * 900 + b'"abcdefghij"' + b"]" * 900  # parses; the walk must not recurse
    assert secret_strings(nested) == ["abcdefghij"]
