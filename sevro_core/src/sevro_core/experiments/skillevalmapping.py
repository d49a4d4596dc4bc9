"""A loaded skill-eval definition as a sevro experiment: arms, one case per group, checks.

Variants become the arms ``baseline`` and ``candidate`` (working-tree paths as directory sources
from the definition root, Git refs as ``git:<ref>:<path>`` sources read from Git's objects), each
group one case (its ``input`` as the case's turns, its fixture snapshotted once from the
definition root into an inline fixture), and every expectation one check carrying its variant as
check-level ``arm`` and its ``turn``. Every case carries a :class:`HostProfile` (the group's
``tools``, its ``runtime``, whether a ``context-text`` check needs the context observed); a
runtime requires the evidence ``sevro.host.runtime-profile``, so a host that cannot honour it
is refused before anything runs. What the run does not select is reported ``not-selected``
in the run's ``experiment.skillEval`` document, never failed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from attrs import evolve, field, frozen

from sevro_core.errors import InvocationError
from sevro_core.experiments.arms import ResolvedArm, resolve_arms
from sevro_core.experiments.bundles import load_bundle
from sevro_core.experiments.design import ExperimentDesign
from sevro_core.experiments.loading import DEFAULT_REPETITIONS, Arm, Comparison
from sevro_core.experiments.skilleval import VARIANTS, Definition, Group, Variant
from sevro_core.experiments.skillevalchecks import to_check
from sevro_core.experiments.sources import (
    DirectorySource,
    Source,
    SourceTree,
    parse_source,
    read_source,
)
from sevro_core.fixtures.git import Git, GitError, find_git
from sevro_core.formats.jsonio import JsonValue
from sevro_core.models import HostProfile
from sevro_core.vocabulary import RUNTIME_PROFILE_OBSERVATION

NOT_SELECTED = "not-selected"
SELECTED = "selected"


@frozen
class Selection:
    """``--group ID|POSITION`` (suites only) and ``--variant baseline|candidate``."""

    group: str | None = None
    variant: str | None = None


@frozen
class SkillEvalRun:
    design: ExperimentDesign
    cases: tuple[tuple[dict[str, Any], Path, str], ...]
    """Each selected group's case document, its file and pointer (for ``load_case``)."""
    notes: tuple[str, ...]
    """What the operator must hear before the run (tools sevro cannot enforce)."""
    review_questions: Mapping[str, tuple[str, ...]] = field(factory=dict)
    """Each group's ``review_questions`` by case id: for the advisory reviewer, never for the
    agent (they are not part of the case document the agent's prompts come from)."""
    profiles: Mapping[str, HostProfile] = field(factory=dict)
    """Each group's host profile by case id (set on the case after ``load_case``)."""


def skilleval_run(
    definition: Definition,
    selection: Selection,
    repetitions: int | None,
    route_given: bool,
) -> SkillEvalRun:
    """Map ``definition`` onto an experiment; exit 64 on the first problem, nothing run.

    ``route_given``: ``--model`` or ``--effort`` was passed, so it wins over the groups' model."""
    groups = _selected_groups(definition, selection)
    variants = (selection.variant,) if selection.variant else VARIANTS
    if not route_given:
        _same_route(groups, definition)
    resolved: list[tuple[ResolvedArm, ...]] = []
    cases = []
    for group in groups:
        arms, names = _arms(group, VARIANTS, definition.root, route_given)
        if group.type == "description":  # whatever is selected: the definition itself is wrong
            _description_only(arms, group)
        resolved.append(resolve_arms([arm for arm in arms if arm.id in variants]))
        cases.append(_case(group, variants, names, definition.root))
    design = ExperimentDesign(
        arms=_suite_arms(groups, resolved),
        comparisons=(Comparison(*VARIANTS),) if len(variants) == 2 else (),
        repetitions=repetitions or DEFAULT_REPETITIONS,
        source=str(definition.path),
        origin=_origin(definition, groups, variants),
    )
    questions = {g.id: g.review_questions for g in groups if g.review_questions}
    profiles = {g.id: _profile(g, variants) for g in groups}
    return SkillEvalRun(design, tuple(cases), _notes(groups), questions, profiles)


def _profile(group: Group, variants: Sequence[str]) -> HostProfile:
    """What the group asks of the host: its tools, runtime, and context observation when a
    selected ``context-text`` check reads it."""
    return HostProfile(
        tools=group.tools,
        runtime=group.runtime,
        observe_context=any(
            e.kind == "context-text" and e.variant in variants for e in group.expectations
        ),
    )


def _selected_groups(definition: Definition, selection: Selection) -> tuple[Group, ...]:
    if selection.group is None:
        return definition.groups
    if definition.kind == "group":
        raise InvocationError(
            "--group selects a group of a suite; this is a direct group definition",
            source=definition.path,
        )
    text = selection.group
    if text.isdigit():
        position = int(text)
        if not 1 <= position <= len(definition.groups):
            raise InvocationError(
                f"--group {text}: the suite has groups 1 to {len(definition.groups)}",
                source=definition.path,
            )
        return (definition.groups[position - 1],)
    for group in definition.groups:
        if group.id == text:
            return (group,)
    listed = ", ".join(g.id for g in definition.groups)
    raise InvocationError(
        f"--group {text[:80]!r}: no such group (groups: {listed})", source=definition.path
    )


def _same_route(groups: Sequence[Group], definition: Definition) -> None:
    """One run has one route per arm, so the selected groups must declare the same model."""
    for group in groups[1:]:
        if (group.model, group.thinking) != (groups[0].model, groups[0].thinking):
            raise InvocationError(
                f"groups {groups[0].id!r} and {group.id!r} declare different models; one sevro "
                "run has one route per arm: select one group with --group, or pass --model",
                source=definition.path,
            )


def _suite_arms(
    groups: Sequence[Group], resolved: Sequence[tuple[ResolvedArm, ...]]
) -> tuple[ResolvedArm, ...]:
    """The arms of the run: the groups' own when they all declare the same variants, else the
    first group's, each carrying every group's environment for that group's case."""
    if all(group.variants == groups[0].variants for group in groups):
        return resolved[0]
    return tuple(
        evolve(
            arm,
            case_overrides=tuple((g.id, arms[i]) for g, arms in zip(groups, resolved, strict=True)),
        )
        for i, arm in enumerate(resolved[0])
    )


def _arms(
    group: Group, variants: Sequence[str], root: Path, route_given: bool
) -> tuple[list[Arm], dict[str, list[str]]]:
    arms: list[Arm] = []
    names: dict[str, list[str]] = {}
    for name in variants:
        variant = group.variants[name]
        skills = tuple(_source(variant, path, root) for path in variant.skills)
        names[name] = [load_bundle(read_source(source)).name for source in skills]
        target = names[name][variant.target] if variant.target is not None else None
        arms.append(
            Arm(
                id=name,
                skills=skills,
                target=target,
                context=tuple(_source(variant, path, root) for path in variant.context),
                model=None if route_given else group.model,
                effort=None if route_given else group.thinking,
            )
        )
    return arms, names


def _source(variant: Variant, path: str, root: Path) -> Source:
    if variant.source.kind == "working-tree":
        return DirectorySource(root / path)
    return parse_source(f"git:{variant.source.ref}:{_repository_prefix(root)}{path}", root)


def _repository_prefix(root: Path) -> str:
    """The definition root relative to the top of its Git work tree (``""`` at the top)."""
    executable = find_git()
    if executable is None:
        raise InvocationError("a git variant source needs git, which is not on PATH")
    try:
        return Git(executable).text("rev-parse", "--show-prefix", cwd=root).strip()
    except (GitError, OSError):
        raise InvocationError(
            f"a git variant source needs the definition root {root} inside a Git work tree"
        ) from None


def _description_only(arms: Sequence[Arm], group: Group) -> None:
    """A description group revises only the target's front matter ``description``."""
    from sevro_core.experiments.skillevalrevision import description_only_difference

    trees: list[SourceTree] = []
    for arm in arms:
        variant = group.variants[arm.id]
        if variant.target is None:
            return  # a no-target baseline: nothing to hold the candidate's target against
        trees.append(read_source(arm.skills[variant.target]))
    problem = description_only_difference(trees[0], trees[1])
    if problem is not None:
        raise InvocationError(
            f"description group {group.id!r}: the baseline and candidate targets must differ "
            f"only in the front matter description, but {problem}",
            source=group.path,
            pointer="/type",
        )


def _case(
    group: Group, variants: Sequence[str], names: Mapping[str, list[str]], root: Path
) -> tuple[dict[str, Any], Path, str]:
    checks: list[JsonValue] = []
    for expectation in group.expectations:
        if expectation.variant not in variants:
            continue
        grader, configuration = to_check(
            expectation.kind,
            expectation.fields,
            group.variants[expectation.variant],
            names[expectation.variant],
            group.path,
            expectation.pointer,
        )
        check: dict[str, JsonValue] = {
            "id": expectation.id,
            "grader": grader,
            "configuration": configuration,
            "arm": expectation.variant,
        }
        if expectation.turn is not None and expectation.kind != "skill-read":
            check["turn"] = expectation.turn
        checks.append(check)
    document: dict[str, Any] = {
        "id": group.id,
        **_prompts(group),
        "fixture": {"files": _fixture_files(group, root)},
        "checks": checks,
        "requiredEvidence": [] if group.runtime is None else [RUNTIME_PROFILE_OBSERVATION],
    }
    return document, group.path, group.pointer


def _prompts(group: Group) -> dict[str, Any]:
    """``input.prompt`` as the case's ``prompt``, ``input.turns`` as its ``turns``."""
    if group.uses_turns:
        return {"turns": list(group.turns)}
    return {"prompt": group.turns[0]}


def _fixture_files(group: Group, root: Path) -> dict[str, str]:
    """The fixture snapshotted once from the definition root (skill-eval's rule), as inline
    files: a source read bounded, symlinks and special files refused, text only."""
    if group.fixture is None:
        return {}
    try:
        tree = read_source(DirectorySource(root / group.fixture))
    except InvocationError as error:
        raise InvocationError(error.message, source=group.path, pointer="/fixture") from None
    files: dict[str, str] = {}
    for entry in tree.files:
        try:
            files[entry.path] = entry.data.decode("utf-8")
        except UnicodeDecodeError:
            raise InvocationError(
                f"fixture file {entry.path!r} is not UTF-8 text (sevro snapshots a skill-eval "
                "fixture as inline text files)",
                source=group.path,
                pointer="/fixture",
            ) from None
    return files


def _origin(
    definition: Definition, groups: Sequence[Group], variants: Sequence[str]
) -> dict[str, Any]:
    """What run.json keeps of the definition: selection, comparisons, review questions."""
    selected = {g.id for g in groups}
    return {
        "definition": str(definition.path),
        "kind": definition.kind,
        "suite": definition.suite,
        "groups": [
            {
                "id": group.id,
                "position": position,
                "type": group.type,
                "status": SELECTED if group.id in selected else NOT_SELECTED,
                "variants": {
                    v: SELECTED if group.id in selected and v in variants else NOT_SELECTED
                    for v in VARIANTS
                },
                "tools": list(group.tools),
                "comparisons": _comparisons(group),
                "reviewQuestions": list(group.review_questions),
                **({"runtime": group.runtime.to_json()} if group.runtime is not None else {}),
            }
            for position, group in enumerate(definition.groups, 1)
        ],
    }


def _comparisons(group: Group) -> list[dict[str, str]]:
    pairs: dict[str, dict[str, str]] = {}
    for expectation in group.expectations:
        if expectation.comparison is not None:
            pairs.setdefault(expectation.comparison, {"id": expectation.comparison})[
                expectation.variant
            ] = expectation.id
    return list(pairs.values())


def _notes(groups: Sequence[Group]) -> tuple[str, ...]:
    notes = []
    for group in groups:
        if group.tools:
            notes.append(
                f"group {group.id}: tools {', '.join(group.tools)} are not enforced by a host "
                "without host profiles: such an agent CLI keeps its own tool set "
                "(docs/skill-eval.md#tools)"
            )
    return tuple(notes)
