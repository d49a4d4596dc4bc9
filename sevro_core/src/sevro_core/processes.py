"""Running untrusted commands: own process group, bounded output, timeouts, cancellation.

Every child gets a new session so the whole tree it spawns can be killed at once, and the group
is killed after the main process exits too, so nothing it left in the background survives.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

from attrs import frozen

from sevro_core.limits import KILL_GRACE_SECONDS
from sevro_core.models import CancelToken

DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"


@frozen
class ProcessOutcome:
    exit_code: int | None
    timed_out: bool
    cancelled: bool
    output: bytes
    truncated: bool
    duration_ms: float


def kill_group(pgid: int, sig: int = signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def terminate_group(process: subprocess.Popen[bytes], grace: float = KILL_GRACE_SECONDS) -> None:
    """SIGTERM the group, then SIGKILL it after ``grace`` seconds."""
    kill_group(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=grace)
    kill_group(process.pid, signal.SIGKILL)
    process.wait()


def _feed(pipe: IO[bytes], data: bytes) -> None:
    """Write stdin from a thread so a child that writes before it reads cannot deadlock us."""
    try:
        pipe.write(data)
        pipe.close()
    except (BrokenPipeError, OSError):
        pass


def run_bounded(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float,
    cancel: CancelToken,
    output_limit: int,
    stdin: bytes | None = None,
) -> ProcessOutcome:
    """Run ``argv`` with stdout and stderr merged, keeping at most ``output_limit`` bytes."""
    started = time.monotonic()
    process = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        close_fds=True,
    )
    assert process.stdout is not None
    if stdin is not None and process.stdin is not None:
        threading.Thread(target=_feed, args=(process.stdin, stdin), daemon=True).start()
    chunks: list[bytes] = []
    kept = total = 0
    timed_out = cancelled = False
    deadline = started + timeout_s
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        open_stream = True
        while open_stream:
            if cancel.cancelled:
                cancelled = True
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            for _key, _ in selector.select(timeout=min(remaining, 0.1)):
                chunk = os.read(process.stdout.fileno(), 65536)
                if not chunk:
                    open_stream = False
                    break
                total += len(chunk)
                if kept < output_limit:
                    chunks.append(chunk[: output_limit - kept])
                    kept += len(chunks[-1])
    if timed_out or cancelled:
        terminate_group(process)
    else:
        while process.poll() is None:
            if cancel.wait(0.02):
                cancelled = True
                terminate_group(process)
                break
            if time.monotonic() > deadline:
                timed_out = True
                terminate_group(process)
                break
    kill_group(process.pid)  # whatever the command left running in its group dies with it
    process.stdout.close()
    code = process.wait()
    return ProcessOutcome(
        exit_code=None if (timed_out or cancelled) else code,
        timed_out=timed_out,
        cancelled=cancelled,
        output=b"".join(chunks),
        truncated=total > output_limit,
        duration_ms=(time.monotonic() - started) * 1000,
    )
