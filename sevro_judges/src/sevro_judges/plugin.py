"""Registers sevro's reviewers and rubrics (entry point ``judges`` in group ``sevro``)."""

from __future__ import annotations

from collections.abc import Callable

from sevro_core.api import Reviewer, Rubric, hookimpl
from sevro_judges.rubric_software_engineering import SoftwareEngineeringRubric


@hookimpl
def sevro_register_reviewers(register: Callable[[Reviewer], None]) -> None:
    del register  # the advisory reviewer registers here (issue 16, in progress)


@hookimpl
def sevro_register_rubrics(register: Callable[[Rubric], None]) -> None:
    register(SoftwareEngineeringRubric())
