"""Registers sevro's judge-backed plugins (entry point ``judges`` in group ``sevro``): the
``sevro.semantic`` grader, the advisory reviewer and the comparator rubrics."""

from __future__ import annotations

from collections.abc import Callable

from sevro_core.api import Grader, Reviewer, Rubric, hookimpl
from sevro_judges.rubric_software_engineering import SoftwareEngineeringRubric
from sevro_judges.semantic_grader import SemanticGrader


@hookimpl
def sevro_register_graders(register: Callable[[Grader], None]) -> None:
    register(SemanticGrader())


@hookimpl
def sevro_register_reviewers(register: Callable[[Reviewer], None]) -> None:
    del register  # the advisory reviewer registers here (issue 16, in progress)


@hookimpl
def sevro_register_rubrics(register: Callable[[Rubric], None]) -> None:
    register(SoftwareEngineeringRubric())
