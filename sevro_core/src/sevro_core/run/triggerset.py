"""``sevro run EVALS.json --skill DIR``: a skill-creator trigger eval set as an experiment.

The set is recognised by its shape (a JSON array of ``{"query", "should_trigger"}``), so it needs
no extra flag; ``--skill`` names the skill whose description is measured (the first is the
target; more are offered beside it), ``--baseline DIR|git:REF[:PATH]`` an older copy of it to
compare with. Everything is read and checked here, before anything runs (exit 64).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from attrs import evolve

from sevro_core.errors import InvocationError
from sevro_core.experiments.design import ExperimentDesign, quick_design
from sevro_core.experiments.loading import MAX_EXPERIMENT_FILE_BYTES
from sevro_core.experiments.triggerset import (
    is_trigger_set,
    load_trigger_set,
    trigger_case,
    trigger_set_json,
)
from sevro_core.formats.jsonio import read_json_file
from sevro_core.models import Case
from sevro_core.run.loading import load_case


def trigger_set_file(paths: Sequence[Path]) -> Path | None:
    """The trigger eval set when ``paths`` is exactly one ``.json`` file holding one, else None."""
    if len(paths) != 1 or paths[0].suffix != ".json" or not paths[0].is_file():
        return None
    document = read_json_file(paths[0], MAX_EXPERIMENT_FILE_BYTES, what="case file")
    return paths[0] if is_trigger_set(document) else None


def load_trigger_experiment(
    path: Path, skills: Sequence[Path], baseline: str | None, repetitions: int | None
) -> tuple[ExperimentDesign, list[Case]]:
    """The experiment a trigger eval set stands for: one case per query, one or two arms."""
    document = read_json_file(path, MAX_EXPERIMENT_FILE_BYTES, what="trigger eval set")
    queries = load_trigger_set(document, path)
    if not skills:
        raise InvocationError(
            "a trigger eval set needs --skill DIR: the skill whose description it measures",
            source=path,
        )
    if baseline == "none":
        raise InvocationError(
            "--baseline none has no skill that could trigger; compare with an older copy "
            "(--baseline DIR or git:REF) or leave --baseline out for a one-arm run",
            source=path,
        )
    design = quick_design(skills, baseline, repetitions, Path.cwd())
    target = design.arms[-1].target
    assert target is not None  # the quick form's candidate arm always targets its first skill
    for arm in design.arms:
        if arm.target != target:
            raise InvocationError(
                f"--baseline does not hold a skill named {target!r}: a trigger eval set measures "
                "one skill's description, so both arms need that skill",
                source=path,
            )
    cases = [load_case(trigger_case(q, target), source=path, pointer=q.pointer) for q in queries]
    return evolve(design, trigger_set=trigger_set_json(path, target, queries)), cases


def trigger_set_summary(path: Path) -> str:
    """``sevro validate EVALS.json``: the set loads (exit 64 otherwise); what it holds."""
    queries = load_trigger_set(
        read_json_file(path, MAX_EXPERIMENT_FILE_BYTES, what="trigger eval set"), path
    )
    positive = sum(1 for q in queries if q.should_trigger)
    return (
        f"trigger eval set valid: {len(queries)} queries ({positive} should trigger, "
        f"{len(queries) - positive} should not); run it with sevro run {path} --skill DIR"
    )
