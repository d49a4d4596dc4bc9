"""Registers sevro's reviewers and rubrics (entry point ``judges`` in group ``sevro``)."""

from __future__ import annotations

from collections.abc import Callable

from sevro_core.api import Reviewer, Rubric, hookimpl


@hookimpl
def sevro_register_reviewers(register: Callable[[Reviewer], None]) -> None:
    from sevro_judges.advisory_reviewer import AdvisoryReviewer

    register(AdvisoryReviewer())


@hookimpl
def sevro_register_rubrics(register: Callable[[Rubric], None]) -> None:
    del register  # the software-engineering rubric registers here (issue 16, in progress)
