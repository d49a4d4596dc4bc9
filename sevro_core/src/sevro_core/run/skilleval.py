"""``sevro run`` on a skill-eval definition (``schema_version: 1``, ``kind`` group or suite).

A JSON file with ``schema_version`` and ``kind`` group or suite is a skill-eval definition, so
``sevro run GROUP.json`` needs no extra flag. The definition root is the current directory, as
in skill-eval. Everything is loaded, mapped and checked here (exit 64 on the first problem) and
the generated cases go through the same case loader as case files.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from attrs import evolve

from sevro_core.errors import InvocationError
from sevro_core.experiments.design import ExperimentDesign
from sevro_core.experiments.skilleval import MAX_DEFINITION_BYTES, VARIANTS, is_definition
from sevro_core.formats.jsonio import read_json_file
from sevro_core.models import Case
from sevro_core.run.loading import load_case


def skilleval_file(paths: Sequence[Path]) -> Path | None:
    """The definition when ``paths`` is exactly one skill-eval JSON file, else None."""
    if len(paths) != 1 or paths[0].suffix != ".json" or not paths[0].is_file():
        return None
    document = read_json_file(paths[0], MAX_DEFINITION_BYTES, what="case or definition file")
    return paths[0] if is_definition(document) else None


def load_skilleval(path: Path, flags: Any) -> tuple[ExperimentDesign, list[Case]]:
    """The definition's experiment and cases; ``flags`` carries the selection and overrides
    (``group``, ``variant``, ``trials``, ``model``, ``effort``)."""
    from sevro_core.experiments.skilleval import load_definition
    from sevro_core.experiments.skillevalmapping import Selection, skilleval_run

    variant = getattr(flags, "variant", None)
    if variant is not None and variant not in VARIANTS:
        raise InvocationError(f"--variant must be baseline or candidate, not {variant[:80]!r}")
    definition = load_definition(path, Path.cwd())
    mapped = skilleval_run(
        definition,
        Selection(getattr(flags, "group", None), variant),
        getattr(flags, "trials", None),
        route_given=bool(getattr(flags, "model", None) or getattr(flags, "effort", None)),
    )
    cases = [
        evolve(
            case,
            review_questions=mapped.review_questions.get(case.id, ()),
            host_profile=mapped.profiles.get(case.id),
        )
        for case in (load_case(d, source=src, pointer=ptr) for d, src, ptr in mapped.cases)
    ]
    for note in mapped.notes:
        sys.stderr.write(f"sevro: note: {note}\n")
    return mapped.design, cases
