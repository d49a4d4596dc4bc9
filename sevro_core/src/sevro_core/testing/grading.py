"""Grading one trial view with a grader, the way the engine does it for one check."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from sevro_core.testing.views import trial_view

if TYPE_CHECKING:
    from sevro_core.formats.jsonio import JsonValue
    from sevro_core.models import CheckOutcome, TrialView
    from sevro_core.plugin.protocols import Grader


def grade(
    grader: Grader,
    configuration: Mapping[str, JsonValue],
    view: TrialView | None = None,
    *,
    check_id: str = "check",
) -> CheckOutcome:
    """Compile ``configuration`` through ``grader`` and grade ``view`` (an empty final message
    when omitted).

    A configuration the grader refuses raises its ``ConfigurationError`` (a run reports the
    same message and pointer, after the case file's ``#/checks/N/configuration``); a check that
    cannot be assessed raises ``GradingError`` (a run records it as ``unavailable``).
    """
    compiled = grader.compile(configuration)
    return compiled.grade(check_id, view if view is not None else trial_view())
