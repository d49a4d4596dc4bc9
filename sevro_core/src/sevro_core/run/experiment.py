"""What ``sevro run`` was asked to evaluate: cases alone, an experiment file, or the quick form.

An experiment file is recognised by its ``format`` (``sevro.experiment.v1``), so
``sevro run EXPERIMENT.json`` needs no extra flag. Its cases (files, directories and inline
objects) are loaded exactly like case files: strict, ids unique, exit 64 before anything runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from attrs import evolve

from sevro_core.errors import InvocationError
from sevro_core.experiments.design import ExperimentDesign, design_from_file, quick_design
from sevro_core.experiments.loading import FORMAT, MAX_EXPERIMENT_FILE_BYTES, InlineCase
from sevro_core.experiments.loading import load_experiment as load_experiment_file
from sevro_core.formats.jsonio import read_json_file
from sevro_core.limits import MAX_CASES_PER_RUN
from sevro_core.models import Case, EvaluatorDirectory
from sevro_core.run.evaluator import read_evaluator
from sevro_core.run.loading import load_case, load_cases


def experiment_file(paths: Sequence[Path]) -> Path | None:
    """The experiment file when ``paths`` is exactly one, else None (case files)."""
    if len(paths) != 1 or paths[0].suffix != ".json" or not paths[0].is_file():
        return None
    document = read_json_file(paths[0], MAX_EXPERIMENT_FILE_BYTES, what="case or experiment file")
    return paths[0] if isinstance(document, dict) and document.get("format") == FORMAT else None


def load_experiment(path: Path, repetitions: int | None) -> tuple[ExperimentDesign, list[Case]]:
    """The experiment file's design and cases, or the one-line exit-64 refusal."""
    experiment = load_experiment_file(path)
    shared = read_evaluator(experiment.evaluator, source=path, pointer="")
    cases: list[Case] = []
    seen: dict[str, str] = {}
    for item in experiment.cases:
        if isinstance(item, InlineCase):
            loaded = [load_case(dict(item.document), source=path, pointer=item.pointer)]
        else:
            loaded = load_cases([item])
        for case in loaded:
            where = f"{case.source}#{case.pointer}" if case.pointer else case.source
            if case.id in seen:
                raise InvocationError(
                    f"duplicate case id {case.id!r} (first defined at {seen[case.id]})",
                    source=case.source,
                    pointer=f"{case.pointer}/id",
                )
            seen[case.id] = where
            cases.append(with_shared_evaluator(case, shared, path))
    if len(cases) > MAX_CASES_PER_RUN:
        raise InvocationError(f"more than {MAX_CASES_PER_RUN} cases in one run", source=path)
    return design_from_file(experiment, repetitions), cases


def with_shared_evaluator(case: Case, shared: Sequence[EvaluatorDirectory], path: Path) -> Case:
    """The case with the experiment's evaluator directories beside its own (a Skivolve
    ``shared_verifier_dir``); a name both declare is refused rather than silently shadowed."""
    if not shared:
        return case
    own = {directory.name for directory in case.evaluator}
    for directory in shared:
        if directory.name in own:
            raise InvocationError(
                f"evaluator directory {directory.name!r} is declared by both the experiment "
                f"({path}) and case {case.id!r}: rename one",
                source=case.source,
                pointer=f"{case.pointer}/evaluator/{directory.name}",
            )
    merged = sorted((*case.evaluator, *shared), key=lambda directory: directory.name)
    return evolve(case, evaluator=tuple(merged))


def quick_experiment(
    skills: Sequence[Path], baseline: str | None, repetitions: int | None
) -> ExperimentDesign | None:
    """The quick form's design, or None when no ``--skill`` was given."""
    if not skills:
        if baseline is not None:
            raise InvocationError("--baseline needs --skill: it names what the skill replaces")
        return None
    return quick_design(skills, baseline, repetitions, Path.cwd())
