"""Arms as a run uses them: every source read once, fingerprinted, and re-verified per trial.

Reading happens at planning, before anything runs, so a missing bundle, a bad ``SKILL.md``, a
target that is not one of the arm's skills, two skills with one name, or two arms that would
evaluate byte-identical sources are all refused with exit 64. A Git source is read from the
commit its ref named at planning; its bytes are kept, so a ref that moves mid-run changes
nothing. A working-tree directory is re-read before every trial and must still have its
fingerprint, so an edit mid-run fails the run instead of mixing versions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from attrs import frozen

from sevro_core.errors import InvocationError
from sevro_core.experiments.bundles import SkillBundle, load_bundle
from sevro_core.experiments.loading import Arm
from sevro_core.experiments.mounting import MountedSkillBundle
from sevro_core.experiments.sources import DirectorySource, SourceTree, read_source, verify
from sevro_core.formats.canonical import hash_json


@frozen
class ResolvedSkill:
    bundle: SkillBundle
    tree: SourceTree

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.bundle.name,
            "source": self.tree.source.describe(),
            "revision": self.tree.revision,
            "fingerprint": self.tree.fingerprint,
        }


@frozen
class ResolvedArm:
    """An arm with its sources read: what the engine mounts and the identity records."""

    arm: Arm
    skills: tuple[ResolvedSkill, ...]
    context: tuple[SourceTree, ...]
    target: str | None
    """The skill whose activation is measured: the declared one, or the only skill."""
    case_overrides: tuple[tuple[str, ResolvedArm], ...] = ()
    """Per case id, the environment this arm mounts for that case instead (a skill-eval suite's
    groups each declare their own variants); empty for sevro's own experiments."""

    @property
    def id(self) -> str:
        return self.arm.id

    @property
    def evaluated(self) -> dict[str, Any]:
        """What the arm evaluates, byte for byte: two arms with equal values are one arm."""
        evaluated: dict[str, Any] = {
            "skills": sorted([s.bundle.name, s.tree.fingerprint] for s in self.skills),
            "target": self.target,
            "context": [tree.fingerprint for tree in self.context],
            "host": self.arm.host,
            "model": self.arm.model,
            "effort": self.arm.effort,
        }
        if self.case_overrides:  # only then, so other arms keep their fingerprints
            evaluated["cases"] = [[case, arm.evaluated] for case, arm in self.case_overrides]
        return evaluated

    def for_case(self, case_id: str) -> ResolvedArm:
        """The environment this arm mounts for ``case_id``."""
        return next((arm for case, arm in self.case_overrides if case == case_id), self)

    @property
    def mounts_anything(self) -> bool:
        """Whether any case of this arm mounts skills or context."""
        return bool(self.skills or self.context) or any(
            arm.mounts_anything for _, arm in self.case_overrides
        )

    @property
    def mounts_context(self) -> bool:
        """Whether any case of this arm mounts context into the instructions file."""
        return bool(self.context) or any(arm.mounts_context for _, arm in self.case_overrides)

    @property
    def fingerprint(self) -> str:
        return hash_json(self.evaluated)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.arm.id,
            "fingerprint": self.fingerprint,
            "target": self.target,
            "skills": [s.to_json() for s in self.skills],
            "context": [
                {
                    "source": t.source.describe(),
                    "revision": t.revision,
                    "fingerprint": t.fingerprint,
                }
                for t in self.context
            ],
            "host": self.arm.host,
            "model": self.arm.model,
            "effort": self.arm.effort,
            **(
                {"cases": [{"caseId": c, **arm.to_json()} for c, arm in self.case_overrides]}
                if self.case_overrides
                else {}
            ),
        }

    def bundles(self) -> tuple[MountedSkillBundle, ...]:
        return tuple(MountedSkillBundle(s.bundle.name, s.tree) for s in self.skills)

    def verified(self) -> ResolvedArm:
        """Re-read every working-tree source; :class:`SourceChangedError` when one changed.

        Git sources are kept as read at planning (their commit cannot change)."""
        for tree in (*(s.tree for s in self.skills), *self.context):
            if isinstance(tree.source, DirectorySource):
                verify(tree.source, tree.fingerprint)
        return self


def resolve_arm(arm: Arm) -> ResolvedArm:
    """Read and validate the arm's sources (exit 64 naming the source on any problem)."""
    skills: list[ResolvedSkill] = []
    for source in arm.skills:
        tree = read_source(source)
        if not tree.files:
            continue  # `none`: the arm has no skill from this source
        bundle = load_bundle(tree)
        if any(s.bundle.name == bundle.name for s in skills):
            raise InvocationError(
                f"arm {arm.id!r} has two skills named {bundle.name!r} "
                f"(the second from {source.describe()})"
            )
        skills.append(ResolvedSkill(bundle, tree))
    names = [s.bundle.name for s in skills]
    target = arm.target
    if target is None and len(names) == 1:
        target = names[0]
    elif target is None and names:
        raise InvocationError(
            f"arm {arm.id!r} has {len(names)} skills ({', '.join(names)}): name its target skill"
        )
    elif target is not None and target not in names:
        raise InvocationError(
            f"arm {arm.id!r}: target {target!r} is not one of its skills "
            f"({', '.join(names) or 'none'})"
        )
    context = tuple(tree for tree in (read_source(s) for s in arm.context) if tree.files)
    return ResolvedArm(arm, tuple(skills), context, target)


def resolve_arms(arms: Sequence[Arm]) -> tuple[ResolvedArm, ...]:
    """Resolve every arm and refuse two that would evaluate exactly the same thing."""
    resolved = tuple(resolve_arm(arm) for arm in arms)
    seen: dict[str, str] = {}
    for arm in resolved:
        twin = seen.setdefault(arm.fingerprint, arm.id)
        if twin != arm.id:
            raise InvocationError(
                f"arms {twin!r} and {arm.id!r} evaluate byte-identical skills, context and "
                "settings: there is nothing to compare"
            )
    return resolved
