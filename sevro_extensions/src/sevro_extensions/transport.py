"""One method call = one fresh process: request on stdin, response on stdout, then it dies.

The argv runs without a shell, in its own process group (``run_bounded`` starts a new
session), with the request written to stdin and stdin closed. Stdout is bounded (a hard error
beyond the bound), stderr is kept only up to its bound, and the call has a timeout. The whole
group is killed with SIGKILL when the call ends, whatever happened, so nothing an extension
starts outlives its call; a timeout or cancellation kills it at once, with no grace.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from attrs import frozen

from sevro_core.api import CancelToken, run_bounded
from sevro_extensions.errors import ExtensionProcessError, one_line
from sevro_extensions.limits import (
    EXTENSION_TIMEOUT_MS,
    MAX_EXTENSION_STDERR_BYTES,
    MAX_EXTENSION_STDOUT_BYTES,
)


@frozen
class CallOutput:
    """What a call that exited 0 wrote: stdout whole, stderr up to its bound."""

    stdout: bytes
    stderr: bytes
    duration_ms: float


@frozen
class CallOptions:
    """Where and how long a call runs: working directory, environment, timeout, cancel."""

    cwd: Path
    env: Mapping[str, str]
    cancel: CancelToken
    timeout_ms: int = EXTENSION_TIMEOUT_MS


def call(argv: Sequence[str], request: bytes, options: CallOptions) -> CallOutput:
    """Run ``argv`` once with ``request`` on stdin; raise :class:`ExtensionProcessError`
    unless it exited 0 within the bounds."""
    if not argv or not Path(argv[0]).is_absolute():
        raise ExtensionProcessError("extension argv[0] must be an absolute path")
    if options.timeout_ms <= 0:
        raise ValueError("timeout_ms must be positive")
    try:
        outcome = run_bounded(
            argv,
            cwd=options.cwd,
            env=options.env,
            timeout_s=options.timeout_ms / 1000,
            cancel=options.cancel,
            output_limit=MAX_EXTENSION_STDOUT_BYTES,
            stdin=request,
            stderr="capture",
            stderr_limit=MAX_EXTENSION_STDERR_BYTES,
            kill_on_overflow=True,
            kill_grace_s=0,
        )
    except OSError as exc:
        raise ExtensionProcessError(
            f"cannot start extension {argv[0]}: {exc.strerror or exc}"
        ) from None
    stderr = outcome.stderr
    if outcome.overflowed or outcome.truncated:
        raise ExtensionProcessError(
            f"extension stdout passed {MAX_EXTENSION_STDOUT_BYTES} bytes", stderr=stderr
        )
    if outcome.timed_out:
        raise ExtensionProcessError(
            f"extension did not answer within {options.timeout_ms} ms", stderr=stderr
        )
    if outcome.cancelled:
        raise ExtensionProcessError("extension call cancelled", stderr=stderr)
    if outcome.exit_code is not None and outcome.exit_code < 0:
        raise ExtensionProcessError(
            f"extension was killed by signal {-outcome.exit_code}{_last_words(stderr)}",
            stderr=stderr,
        )
    if outcome.exit_code != 0:
        raise ExtensionProcessError(
            f"extension exited with status {outcome.exit_code}{_last_words(stderr)}",
            stderr=stderr,
        )
    return CallOutput(stdout=outcome.output, stderr=stderr, duration_ms=outcome.duration_ms)


def _last_words(stderr: bytes) -> str:
    """The last non-blank stderr line, shortened, as a diagnostic suffix."""
    lines = [line for line in stderr.decode("utf-8", "replace").splitlines() if line.strip()]
    return f" (stderr: {one_line(lines[-1], 200)})" if lines else ""
