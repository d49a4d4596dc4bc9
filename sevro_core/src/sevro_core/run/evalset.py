"""``sevro run SKILL_DIR`` (or its ``evals/evals.json``): skill-creator's output evals as an
experiment.

A directory holding ``SKILL.md`` and ``evals/evals.json``, or that file itself (an object with
``skill_name``/``evals``), needs no extra flag. The skill directory is the candidate arm (without
its ``evals/``, which holds the answers) and ``none`` the baseline, as skill-creator runs every
eval with and without the skill; ``--baseline DIR|git:REF[:PATH]`` compares with an older copy
instead. Every expectation is a ``sevro.semantic`` check, so the run needs a semantic judge.
Everything is read and checked here, before anything runs (exit 64).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from attrs import evolve

from sevro_core.errors import InvocationError
from sevro_core.experiments.bundles import SKILL_FILE, load_bundle
from sevro_core.experiments.design import ExperimentDesign, quick_design
from sevro_core.experiments.evalset import (
    EVALS_DIRECTORY,
    EVALS_FILE,
    EvalSet,
    eval_case,
    is_eval_set,
    load_eval_set,
    skill_root_of,
)
from sevro_core.experiments.loading import MAX_EXPERIMENT_FILE_BYTES
from sevro_core.experiments.sources import DirectorySource, read_source
from sevro_core.formats.jsonio import read_json_file
from sevro_core.models import Case
from sevro_core.run.loading import load_case

WITHOUT_EVALS = frozenset({EVALS_DIRECTORY})
"""What no arm mounts of the skill: its evals, expectations and expected outputs."""


def eval_set_file(paths: Sequence[Path]) -> Path | None:
    """The ``evals/evals.json`` when ``paths`` is exactly one skill directory holding it (and
    ``SKILL.md``) or one ``.json`` file shaped like it, else None."""
    if len(paths) != 1:
        return None
    path = paths[0]
    if path.is_dir():
        inside = path / EVALS_DIRECTORY / EVALS_FILE
        return inside if inside.is_file() and (path / SKILL_FILE).is_file() else None
    if path.suffix != ".json" or not path.is_file():
        return None
    document = read_json_file(path, MAX_EXPERIMENT_FILE_BYTES, what="case file")
    return path if is_eval_set(document) else None


def load_eval_experiment(path: Path, flags: Any) -> tuple[ExperimentDesign, list[Case]]:
    """The experiment an eval set stands for: one case per eval, the skill against ``none``
    (or ``--baseline``); ``flags`` carries ``skill``, ``baseline``, ``trials`` and
    ``semantic_host``."""
    if getattr(flags, "skill", None):
        raise InvocationError(
            "--skill: a skill-creator eval set runs the skill directory that holds it",
            source=path,
        )
    evals = checked_eval_set(path)
    if not getattr(flags, "semantic_host", None):
        raise InvocationError(
            "each expectation is a sevro.semantic check, graded by a semantic judge: pass "
            "--semantic-host HOST (and its model or configuration)",
            source=path,
        )
    design = quick_design(
        [evals.skill_root],
        getattr(flags, "baseline", None) or "none",
        getattr(flags, "trials", None),
        Path.cwd(),
        without=WITHOUT_EVALS,
    )
    cases = [
        evolve(
            load_case(eval_case(item), source=path, pointer=item.pointer),
            expected_output=item.expected_output,
        )
        for item in evals.evals
    ]
    return design, cases


def checked_eval_set(path: Path) -> EvalSet:
    """The set loaded strictly, its ``skill_name`` matching the skill's ``SKILL.md``."""
    document = read_json_file(path, MAX_EXPERIMENT_FILE_BYTES, what="skill-creator eval set")
    root = skill_root_of(path)
    evals = load_eval_set(document, path, root)
    name = load_bundle(read_source(DirectorySource(root, WITHOUT_EVALS))).name
    if evals.skill_name != name:
        raise InvocationError(
            f"skill_name {evals.skill_name[:80]!r} is not the skill's name {name!r} "
            f"(its {SKILL_FILE})",
            source=path,
            pointer="/skill_name",
        )
    return evals


def eval_set_summary(path: Path, shown: Path) -> str:
    """``sevro validate SKILL_DIR``: the set loads (exit 64 otherwise); what it holds."""
    evals = checked_eval_set(path).evals
    expectations = sum(len(item.expectations) for item in evals)
    files = sum(len(item.files) for item in evals)
    return (
        f"skill-creator eval set valid: {len(evals)} eval(s), {expectations} expectation(s) "
        f"(sevro.semantic checks), {files} input file(s); run it with sevro run {shown} "
        "--semantic-host HOST"
    )
