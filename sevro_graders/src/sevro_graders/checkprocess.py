"""Running an evaluator-owned command in the trial's sandbox, for ``sevro.shell`` and
``sevro.verifier`` alike: role ``checks``, a timeout, bounded stdout killed on overflow, stderr
apart. Every way the command can end without proving anything (not isolable, cancelled, timed
out, flooding stdout, no exit code) is a grading error, worded once here, never a pass.
"""

from __future__ import annotations

from collections.abc import Sequence

from sevro_core.api import GradingError, IsolationError, ProcessOutcome, TrialView
from sevro_graders.check_workspace import FINAL, check_isolation

ROLE = "checks"


def run_check_process(
    view: TrialView,
    argv: Sequence[str],
    *,
    what: str,
    timeout_ms: int,
    stdout_limit: int | None,
    workspace: str = FINAL,
) -> ProcessOutcome:
    """Run ``argv`` for ``what`` ("the shell check"); ``stdout_limit`` None discards stdout;
    ``workspace`` ``pristine`` runs it in a fresh copy of the fixture (``check_workspace``).

    The outcome returned has a non-negative exit code and complete stdout.
    """
    if view.isolation is None:
        raise GradingError(f"{what} runs only inside the trial's sandbox, and none was given")
    limit = stdout_limit if stdout_limit is not None else 0
    try:
        with check_isolation(view, workspace) as isolation:
            outcome = isolation.run(
                list(argv),
                role=ROLE,
                timeout_s=timeout_ms / 1000,
                output_limit=limit,
                merge_stderr=False,
                capture_output=stdout_limit is not None,
                kill_on_overflow=True,
            )
    except IsolationError as exc:
        raise GradingError(f"isolation error: {exc}") from None
    if outcome.cancelled:
        raise GradingError(f"{what} was cancelled")
    if outcome.timed_out:
        raise GradingError(f"{what} timed out after {timeout_ms} ms")
    if outcome.overflowed or outcome.truncated:
        raise GradingError(f"{what}'s stdout exceeds {limit} bytes")
    if outcome.exit_code is None or outcome.exit_code < 0:
        raise GradingError(f"process error: {what} ended without an exit code")
    return outcome
