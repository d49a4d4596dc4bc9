"""An experiment ready to plan: its arms read and fingerprinted, comparisons and repetitions.

Both forms end here: an experiment file (``sevro run EXPERIMENT.json``) and the quick form
(``sevro run cases/ --skill DIR --baseline SOURCE``). The planner takes it from there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from attrs import evolve, frozen

from sevro_core.errors import InvocationError
from sevro_core.experiments.arms import ResolvedArm, resolve_arms
from sevro_core.experiments.bundles import load_bundle
from sevro_core.experiments.loading import (
    DEFAULT_CONTROL,
    DEFAULT_REPETITIONS,
    DEFAULT_TREATMENT,
    Arm,
    Comparison,
    Experiment,
)
from sevro_core.experiments.sources import (
    DirectorySource,
    GitSource,
    NoSource,
    Source,
    parse_source,
    read_source,
)
from sevro_core.fixtures.git import Git, GitError, find_git
from sevro_core.judges.routes import JudgeSettings


@frozen
class ExperimentDesign:
    arms: tuple[ResolvedArm, ...]
    comparisons: tuple[Comparison, ...]
    repetitions: int
    source: str | None
    """The experiment file, or None for the quick form."""
    origin: Mapping[str, Any] | None = None
    """A skill-eval definition's selection, comparisons and review questions (run.json's
    ``experiment.skillEval``), None for sevro's own forms."""
    trigger_set: Mapping[str, Any] | None = None
    """A skill-creator trigger eval set's queries (``triggerSet`` in ``run.json``), or None."""
    judges: JudgeSettings | None = None
    """The experiment file's judges (``judges``), or None."""

    def arm(self, arm_id: str) -> ResolvedArm:
        return next(arm for arm in self.arms if arm.id == arm_id)

    def input_paths(self) -> list[Path]:
        """The experiment file and every working-tree source: inputs no agent may see."""
        paths = [Path(self.source).resolve()] if self.source is not None else []
        for arm in (a for top in self.arms for a in (top, *(o for _, o in top.case_overrides))):
            trees = (*(s.tree for s in arm.skills), *arm.context)
            paths.extend(
                t.source.path.resolve() for t in trees if isinstance(t.source, DirectorySource)
            )
        return paths

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "source": self.source,
            "repetitions": self.repetitions,
            "comparisons": [
                {"control": c.control, "treatment": c.treatment} for c in self.comparisons
            ],
        }
        if self.origin is not None:
            document["skillEval"] = dict(self.origin)
        if self.trigger_set is not None:
            document["triggerSet"] = dict(self.trigger_set)
        return document


def design_from_file(experiment: Experiment, repetitions: int | None) -> ExperimentDesign:
    """Read the file's arms (exit 64 on a bad source); ``repetitions`` overrides the file's."""
    return ExperimentDesign(
        arms=resolve_arms(experiment.arms),
        comparisons=experiment.comparisons,
        repetitions=repetitions or experiment.repetitions,
        source=str(experiment.source),
        judges=experiment.judges,
    )


def quick_design(
    skills: Sequence[Path],
    baseline: str | None,
    repetitions: int | None,
    base: Path,
    without: frozenset[str] = frozenset(),
) -> ExperimentDesign:
    """``--skill DIR`` (repeatable; the first is the target) and ``--baseline SOURCE``.

    ``--baseline`` is ``none``, a directory holding an older copy of the first skill, or
    ``git:<ref>`` (each skill as it is at that ref) or ``git:<ref>:<path>``. Without it there is
    one arm and nothing to compare: a run that ``sevro report --compare A B`` can compare later.
    ``without`` names top-level entries no arm's skill mounts (a skill-creator skill's
    ``evals/``).
    """
    candidate_sources = tuple(_without(parse_source(str(p), base), without) for p in skills)
    target = _skill_name(candidate_sources[0])
    arms = [Arm(DEFAULT_TREATMENT, candidate_sources, target, ())]
    if baseline is not None:
        sources = tuple(_without(s, without) for s in _baseline_sources(baseline, skills, base))
        names = [_skill_name(source) for source in sources if not isinstance(source, NoSource)]
        # the same skill at the baseline keeps the target; a different single skill is its own
        arms.insert(0, Arm(DEFAULT_CONTROL, sources, target if target in names else None, ()))
    resolved = resolve_arms(arms)
    comparisons = (Comparison(DEFAULT_CONTROL, DEFAULT_TREATMENT),) if baseline else ()
    return ExperimentDesign(
        arms=resolved,
        comparisons=comparisons,
        repetitions=repetitions or DEFAULT_REPETITIONS,
        source=None,
    )


def _without(source: Source, names: frozenset[str]) -> Source:
    if names and isinstance(source, DirectorySource | GitSource):
        return evolve(source, without=names)
    return source


def _skill_name(source: Source) -> str:
    """The name a bundle's ``SKILL.md`` declares (the source is read again when the arm is)."""
    return load_bundle(read_source(source)).name


def _baseline_sources(spec: str, skills: Sequence[Path], base: Path) -> tuple[Source, ...]:
    if spec == "none":
        return (NoSource(),)
    if spec.startswith("git:") and spec.count(":") == 1:
        return tuple(parse_source(f"{spec}:{_repository_path(path)}", base) for path in skills)
    return (parse_source(spec, base),)


def _repository_path(path: Path) -> str:
    """``path`` relative to the top of the Git work tree holding it (for ``git:<ref>``)."""
    executable = find_git()
    if executable is None:
        raise InvocationError("--baseline git:<ref> needs git, which is not on PATH")
    directory = path.resolve()
    try:
        top = Git(executable).text("rev-parse", "--show-toplevel", cwd=directory)
    except (GitError, OSError):
        raise InvocationError(
            f"--baseline git:<ref>: --skill {path} is not inside a Git work tree"
        ) from None
    return directory.relative_to(Path(top).resolve()).as_posix()
