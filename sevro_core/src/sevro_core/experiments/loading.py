"""Experiment files (``sevro.experiment.v1``): loaded strictly, before anything runs.

The file is read bounded and strict (no duplicate keys, no non-finite numbers), validated
against the published schema, then checked for what the schema cannot say: comparisons name
existing, distinct arms and none is repeated; an arm without skills has no target; every source
spec parses; every case path exists. Every problem is one :class:`InvocationError` line naming
the file and the JSON pointer at fault (exit 64).

Only what is knowable without reading sources is checked here: whether ``target`` names one of
the arm's skills is known only once the bundles are read, and case files are loaded by the run
(``run/loading.py``, a room above this one). Nothing is run and nothing is written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from attrs import field, frozen

from sevro_core.errors import InvocationError, join_pointer
from sevro_core.experiments.sources import Source, parse_source
from sevro_core.formats.jsonio import read_json_file
from sevro_core.formats.schemas import load_schema, validate_input
from sevro_core.judges.calibrated import (
    CALIBRATED_ROLES,
    check_calibration,
    requirement_from_json,
)
from sevro_core.judges.routes import (
    COMPARE_WHEN,
    DEFAULT_REVIEWER,
    DEFAULT_RUBRIC,
    JudgeRouteSpec,
    JudgeSettings,
)
from sevro_core.limits import MAX_CASE_FILE_BYTES, MAX_HOST_CONFIG_BYTES
from sevro_core.vocabulary import ADVISORY_ROLE, COMPARATOR_ROLE, JUDGE_ROLES

FORMAT = "sevro.experiment.v1"
SCHEMA = "experiment.v1"
DEFAULT_REPETITIONS = 5
DEFAULT_CONTROL = "baseline"
DEFAULT_TREATMENT = "candidate"
MAX_EXPERIMENT_FILE_BYTES = MAX_CASE_FILE_BYTES
"""An experiment file may carry inline cases, so it is bounded like a case file."""


@frozen
class Arm:
    """One configuration under test: its skills, target skill, context files and overrides."""

    id: str
    skills: tuple[Source, ...]
    target: str | None
    context: tuple[Source, ...]
    host: str | None = None
    model: str | None = None
    effort: str | None = None


@frozen
class Comparison:
    control: str
    treatment: str


@frozen
class InlineCase:
    """A case written inside the experiment file, validated against ``case.v1``."""

    document: Mapping[str, Any]
    pointer: str


@frozen
class Experiment:
    source: Path
    arms: tuple[Arm, ...]
    cases: tuple[Path | InlineCase, ...]
    """Canonical paths of case files or directories, and inline cases, in file order."""
    repetitions: int
    comparisons: tuple[Comparison, ...]
    judges: JudgeSettings | None = None
    """The file's ``judges`` block, or None when it declares no judge."""
    evaluator: Mapping[str, str] = field(factory=dict)
    """Evaluator directories every case receives (name -> path relative to the file); read and
    fingerprinted by the run layer, exactly like a case's own ``evaluator``."""

    def arm(self, arm_id: str) -> Arm:
        return next(arm for arm in self.arms if arm.id == arm_id)


def load_experiment(path: Path) -> Experiment:
    """Read, validate and check one experiment file; raise an exit-64 error on the first fault."""
    document = read_json_file(path, MAX_EXPERIMENT_FILE_BYTES, what="experiment file")
    if not isinstance(document, dict):
        raise InvocationError("an experiment file holds one JSON object", source=path)
    _check_arms(document.get("arms"), path)
    validate_input(SCHEMA, document, source=path)
    base = path.resolve().parent
    arms = tuple(
        _arm(arm_id, spec, base, path) for arm_id, spec in sorted(document["arms"].items())
    )
    return Experiment(
        source=path,
        arms=arms,
        cases=tuple(_case(item, index, base, path) for index, item in enumerate(document["cases"])),
        repetitions=document.get("repetitions", DEFAULT_REPETITIONS),
        comparisons=_comparisons(document, path),
        judges=_judges(document.get("judges"), base, path),
        evaluator=dict(document.get("evaluator", {})),
    )


def _judges(block: Mapping[str, Any] | None, base: Path, path: Path) -> JudgeSettings | None:
    """The ``judges`` block as settings: each role's route, with its host configuration read."""
    if not block:
        return None
    specs = []
    for role in JUDGE_ROLES:
        spec = block.get(role)
        if spec is None:
            continue
        config, config_source = None, None
        if "hostConfig" in spec:
            config_path = (base / spec["hostConfig"]).resolve()
            pointer = join_pointer("/judges", role, "hostConfig")
            config = _host_config(config_path, path, pointer)
            config_source = str(config_path)
        specs.append(
            JudgeRouteSpec(
                role=role,
                host=spec["host"],
                model=spec.get("model"),
                effort=spec.get("effort"),
                config=config,
                config_source=config_source,
            )
        )
    advisory = block.get(ADVISORY_ROLE, {})
    comparator = block.get(COMPARATOR_ROLE, {})
    required = {
        role: _calibration(role, block[role]["requireCalibratedJudge"], base, path)
        for role in CALIBRATED_ROLES
        if "requireCalibratedJudge" in block.get(role, {})
    }
    return JudgeSettings(
        routes=tuple(specs),
        advisory_exclude=tuple(sorted(advisory.get("exclude", ()))),
        reviewer=advisory.get("reviewer", DEFAULT_REVIEWER),
        rubric=comparator.get("rubric", DEFAULT_RUBRIC),
        compare_when=comparator.get("when", COMPARE_WHEN[0]),
        require_calibrated_judge=required,
    )


def _calibration(role: str, required: Mapping[str, Any], base: Path, path: Path) -> dict[str, Any]:
    """The ``requireCalibratedJudge`` of ``role`` with its record resolved against the file,
    checked now as far as it can be without the configured judge (the record, its corpus, the
    role's minima); planning checks the judge identity once the judge is configured."""
    where = f"{path}#{join_pointer('/judges', role, 'requireCalibratedJudge')}"
    requirement = requirement_from_json(required, base, source=where)
    check_calibration(role, requirement, None, source=where)
    return {**required, "calibration": str(requirement.record)}


def _host_config(config_path: Path, path: Path, pointer: str) -> Mapping[str, Any]:
    if not config_path.is_file():
        raise InvocationError(
            f"judge host configuration {str(config_path)[:300]} does not exist",
            source=path,
            pointer=pointer,
        )
    config = read_json_file(config_path, MAX_HOST_CONFIG_BYTES, what="judge host configuration")
    if not isinstance(config, dict):
        raise InvocationError(
            "a judge host configuration holds one JSON object", source=path, pointer=pointer
        )
    return config


_SLUG_RE = re.compile(load_schema(SCHEMA)["$defs"]["slug"]["pattern"])
_MAX_SLUG_LENGTH: int = load_schema(SCHEMA)["$defs"]["slug"]["maxLength"]
_MIN_ARMS: int = load_schema(SCHEMA)["properties"]["arms"]["minProperties"]


def _check_arms(arms: Any, path: Path) -> None:
    """Say why ``arms`` is refused more plainly than the schema can: too few arms, or a bad id
    pointed at itself (the schema would point at the ``arms`` object)."""
    if not isinstance(arms, dict):
        return
    if len(arms) < _MIN_ARMS:
        raise InvocationError(
            f"an experiment compares at least {_MIN_ARMS} arms, found {len(arms)}",
            source=path,
            pointer="/arms",
        )
    for arm_id in arms:
        if len(arm_id) > _MAX_SLUG_LENGTH or not _SLUG_RE.fullmatch(arm_id):
            raise InvocationError(
                f"arm id {arm_id[:80]!r} must be at most {_MAX_SLUG_LENGTH} lowercase letters, "
                "digits and inner hyphens",
                source=path,
                pointer=join_pointer("/arms", arm_id),
            )


def _arm(arm_id: str, spec: Mapping[str, Any], base: Path, path: Path) -> Arm:
    pointer = join_pointer("/arms", arm_id)
    if not spec["skills"] and spec["target"] is not None:
        raise InvocationError(
            "an arm without skills has no target skill: target must be null",
            source=path,
            pointer=join_pointer(pointer, "target"),
        )
    return Arm(
        id=arm_id,
        skills=_sources(spec["skills"], base, path, join_pointer(pointer, "skills")),
        target=spec["target"],
        context=_sources(spec["context"], base, path, join_pointer(pointer, "context")),
        host=spec.get("host"),
        model=spec.get("model"),
        effort=spec.get("effort"),
    )


def _sources(specs: list[str], base: Path, path: Path, pointer: str) -> tuple[Source, ...]:
    sources = []
    for index, spec in enumerate(specs):
        if "\x00" in spec:
            raise InvocationError(
                "source contains a NUL byte", source=path, pointer=join_pointer(pointer, index)
            )
        try:
            sources.append(parse_source(spec, base))
        except InvocationError as error:
            raise InvocationError(
                error.message, source=path, pointer=join_pointer(pointer, index)
            ) from None
    return tuple(sources)


def _case(item: Any, index: int, base: Path, path: Path) -> Path | InlineCase:
    pointer = join_pointer("/cases", index)
    if isinstance(item, dict):
        return InlineCase(item, pointer)
    text = str(item)
    if "\x00" in text:
        raise InvocationError("case path contains a NUL byte", source=path, pointer=pointer)
    resolved = (base / text).resolve()
    if not resolved.exists():
        raise InvocationError(
            f"case path {text[:200]!r} does not exist (resolved to {str(resolved)[:300]})",
            source=path,
            pointer=pointer,
        )
    if not (resolved.is_file() or resolved.is_dir()):
        raise InvocationError(
            f"case path {text[:200]!r} is neither a regular file nor a directory",
            source=path,
            pointer=pointer,
        )
    return resolved


def _comparisons(document: Mapping[str, Any], path: Path) -> tuple[Comparison, ...]:
    arms = document["arms"]
    if "comparisons" not in document:
        if DEFAULT_CONTROL in arms and DEFAULT_TREATMENT in arms:
            return (Comparison(DEFAULT_CONTROL, DEFAULT_TREATMENT),)
        raise InvocationError(
            f"comparisons is required unless arms {DEFAULT_CONTROL!r} and "
            f"{DEFAULT_TREATMENT!r} both exist",
            source=path,
            pointer="",
        )
    comparisons: list[Comparison] = []
    for index, entry in enumerate(document["comparisons"]):
        pointer = join_pointer("/comparisons", index)
        for role in ("control", "treatment"):
            if entry[role] not in arms:
                raise InvocationError(
                    f"no arm {entry[role]!r} (arms: {', '.join(sorted(arms))})",
                    source=path,
                    pointer=join_pointer(pointer, role),
                )
        comparison = Comparison(entry["control"], entry["treatment"])
        if comparison.control == comparison.treatment:
            raise InvocationError(
                "an arm cannot be compared with itself",
                source=path,
                pointer=join_pointer(pointer, "treatment"),
            )
        if comparison in comparisons:
            raise InvocationError(
                f"duplicate comparison (also /comparisons/{comparisons.index(comparison)})",
                source=path,
                pointer=pointer,
            )
        comparisons.append(comparison)
    return tuple(comparisons)
