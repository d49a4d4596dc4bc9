"""The default task-verdict policy: Sevro's ``assessTrial`` rule."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sevro_core.api import (
    CheckOutcome,
    CheckStatus,
    Execution,
    Grading,
    Verdict,
    VerdictPolicy,
    hookimpl,
)


class DefaultVerdictPolicy:
    """Not executed → not assessed; any failed check → failed; fully graded → passed.

    A failed check fails the task even when another check is unavailable: the failure is proven.
    """

    id = "sevro.verdict.default"
    version = "1.0.0"
    capabilities: frozenset[str] = frozenset()
    requires: frozenset[str] = frozenset()

    def verdict(
        self, execution: Execution, grading: Grading, outcomes: Sequence[CheckOutcome]
    ) -> Verdict:
        if execution is not Execution.COMPLETED:
            return Verdict.NOT_ASSESSED
        if any(o.status is CheckStatus.FAILED for o in outcomes):
            return Verdict.FAILED
        if grading is Grading.COMPLETED:
            return Verdict.PASSED
        return Verdict.NOT_ASSESSED


@hookimpl
def sevro_register_verdict_policies(register: Callable[[VerdictPolicy], None]) -> None:
    register(DefaultVerdictPolicy())
