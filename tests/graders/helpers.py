"""Shared helpers for the output-grader tests."""

from __future__ import annotations

from pathlib import Path

from sevro_core.models import TrialView


def view(message: str | None, *, complete: bool = True) -> TrialView:
    """A trial view holding only a final message, as the engine builds it."""
    return TrialView(
        case_id="case",
        trial=1,
        final_message=message,
        final_message_complete=complete,
        observations={},
        workspace=Path("/nonexistent-workspace"),
    )
