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
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Literal

from sevro_core.limits import KILL_GRACE_SECONDS
from sevro_core.models import CancelToken, ProcessOutcome

DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
_DRAIN_AFTER_EXIT_SECONDS = 0.5


StderrMode = Literal["merge", "capture", "discard"]
"""Where a child's stderr goes: into the output stream, a separate bounded capture, or nowhere."""


substitute: Callable[..., ProcessOutcome | None] | None = None
"""The test kit's seam (``sevro_core.testing.fake_processes``): when set, ``run_bounded`` asks
it first, with the same arguments, and launches nothing when it returns an outcome. Never set
outside tests."""


def kill_group(pgid: int, sig: int = signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def terminate_group(process: subprocess.Popen[bytes], grace: float = KILL_GRACE_SECONDS) -> None:
    """SIGTERM the group, then SIGKILL it after ``grace`` seconds (no grace: SIGKILL only)."""
    if grace > 0:
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


class _Sink:
    """Keeps the first ``limit`` bytes of a stream and counts the rest."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.chunks: list[bytes] = []
        self.kept = 0
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        if self.kept < self.limit:
            self.chunks.append(chunk[: self.limit - self.kept])
            self.kept += len(self.chunks[-1])

    def data(self) -> bytes:
        return b"".join(self.chunks)


def run_bounded(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float,
    cancel: CancelToken,
    output_limit: int,
    stdin: bytes | None = None,
    stderr: StderrMode = "merge",
    stderr_limit: int = 0,
    capture_output: bool = True,
    kill_on_overflow: bool = False,
    stall_s: float | None = None,
    kill_grace_s: float = KILL_GRACE_SECONDS,
) -> ProcessOutcome:
    """Run ``argv`` keeping at most ``output_limit`` bytes of its output.

    By default stderr is merged into the output. ``capture_output=False`` sends stdout to
    /dev/null; ``stderr="capture"`` keeps the first ``stderr_limit`` bytes of stderr apart;
    ``kill_on_overflow`` kills the group as soon as the output passes its limit, for callers
    to whom oversized output is an error anyway. ``stall_s`` kills the group when the output
    stream has been silent that long while the process runs (a CLI that makes no progress).
    ``kill_grace_s=0`` kills a timed-out or cancelled group with SIGKILL straight away, for
    callers whose contract allows the child no clean-up (extension calls).
    """
    if substitute is not None:
        faked = substitute(argv, cwd=cwd, env=env, stdin=stdin, timeout_s=timeout_s, cancel=cancel)
        if faked is not None:
            return faked
    if stderr_limit and stderr != "capture":
        # A bound on stderr means the caller parses stdout: merging would corrupt it silently.
        raise ValueError("stderr_limit needs stderr='capture'")
    started = time.monotonic()
    stdout_target = subprocess.PIPE if capture_output else subprocess.DEVNULL
    stderr_target = {
        "merge": subprocess.STDOUT if capture_output else subprocess.DEVNULL,
        "capture": subprocess.PIPE,
        "discard": subprocess.DEVNULL,
    }[stderr]
    process = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=stdout_target,
        stderr=stderr_target,
        start_new_session=True,
        close_fds=True,
    )
    try:
        if stdin is not None and process.stdin is not None:
            threading.Thread(target=_feed, args=(process.stdin, stdin), daemon=True).start()
        out, err = _Sink(output_limit), _Sink(stderr_limit)
        pipes: list[tuple[IO[bytes], _Sink]] = []
        if process.stdout is not None:
            pipes.append((process.stdout, out))
        if process.stderr is not None:
            pipes.append((process.stderr, err))
        timed_out = cancelled = overflowed = stalled = False
        deadline = started + timeout_s
        last_progress = started
        with selectors.DefaultSelector() as selector:
            for pipe, sink in pipes:
                selector.register(pipe, selectors.EVENT_READ, sink)
            open_streams = len(pipes)
            quiet_after_exit: float | None = None
            while open_streams and not overflowed:
                if cancel.cancelled:
                    cancelled = True
                    break
                now = time.monotonic()
                if now >= deadline:
                    timed_out = process.poll() is None
                    break
                if quiet_after_exit is None and process.poll() is not None:
                    # The command is done; whatever it left holding the pipes gets a moment, then
                    # dies with the group below.
                    quiet_after_exit = now + _DRAIN_AFTER_EXIT_SECONDS
                if quiet_after_exit is not None and now >= quiet_after_exit:
                    break
                silent = now - last_progress
                if stall_s is not None and quiet_after_exit is None and silent >= stall_s:
                    stalled = True
                    break
                for key, _ in selector.select(timeout=min(deadline - now, 0.1)):
                    chunk = os.read(key.fd, 65536)
                    if not chunk:
                        selector.unregister(key.fileobj)
                        open_streams -= 1
                        continue
                    key.data.add(chunk)
                    if key.data is out:
                        last_progress = time.monotonic()
                    if kill_on_overflow and key.data is out and out.total > output_limit:
                        overflowed = True
                        break
        if overflowed:
            kill_group(process.pid)
        elif timed_out or cancelled or stalled:
            terminate_group(process, kill_grace_s)
        else:
            while process.poll() is None:
                if cancel.wait(0.02):
                    cancelled = True
                    terminate_group(process, kill_grace_s)
                    break
                if time.monotonic() > deadline:
                    timed_out = True
                    terminate_group(process, kill_grace_s)
                    break
    except BaseException:  # an interrupt (SIGINT outside a run) or a bug: the group dies too
        kill_group(process.pid)
        raise
    kill_group(process.pid)  # whatever the command left running in its group dies with it
    for pipe, _sink in pipes:
        pipe.close()
    code = process.wait()
    return ProcessOutcome(
        exit_code=None if (timed_out or cancelled or overflowed or stalled) else code,
        timed_out=timed_out,
        cancelled=cancelled,
        output=out.data(),
        truncated=out.total > output_limit,
        duration_ms=(time.monotonic() - started) * 1000,
        stderr=err.data(),
        overflowed=overflowed,
        stalled=stalled,
    )
