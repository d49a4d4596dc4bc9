"""Skill bundles: a directory holding ``SKILL.md`` and the resources it points at.

``SKILL.md`` opens with YAML front matter between ``---`` lines naming the skill (``name``) and
saying when to use it (``description``); the agent CLIs read exactly these two fields to decide
whether to offer the skill. The front matter is untrusted input: it is bounded in bytes and
nesting, parsed with PyYAML's safe loader (imported lazily so ``sevro --help`` stays fast), may
not use aliases, and the name must be a slug because it becomes a directory name in the trial's
workspace.
"""

from __future__ import annotations

import re
from typing import Any

from attrs import frozen

from sevro_core.errors import InvocationError
from sevro_core.experiments.sources import SourceTree
from sevro_core.limits import (
    MAX_SKILL_DESCRIPTION_LENGTH,
    MAX_SKILL_FILE_BYTES,
    MAX_SKILL_FRONT_MATTER_BYTES,
    MAX_SKILL_FRONT_MATTER_DEPTH,
    MAX_SKILL_NAME_LENGTH,
)

SKILL_FILE = "SKILL.md"
FRONT_MATTER_FENCE = "---"
SKILL_NAME_PATTERN = r"^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$"
"""Lowercase letters, digits and inner hyphens: safe as a directory name on every host."""
_SKILL_NAME_RE = re.compile(SKILL_NAME_PATTERN)


@frozen
class BundleFile:
    """One file of a bundle, as fingerprinted."""

    path: str
    sha256: str
    size: int


@frozen
class SkillBundle:
    """A validated skill: its declared name and description, and every file it ships."""

    name: str
    description: str
    files: tuple[BundleFile, ...]
    fingerprint: str


def load_bundle(tree: SourceTree) -> SkillBundle:
    """Validate ``tree`` as a skill bundle; :class:`InvocationError` naming what is wrong."""
    where = f"{tree.source.describe()}/{SKILL_FILE}"
    skill = tree.file(SKILL_FILE)
    if skill is None:
        raise InvocationError(
            f"source {tree.source.describe()} is not a skill bundle: it has no {SKILL_FILE}"
        )
    if skill.size > MAX_SKILL_FILE_BYTES:
        raise InvocationError(
            f"{SKILL_FILE} is larger than {MAX_SKILL_FILE_BYTES} bytes", source=where
        )
    front_matter = parse_front_matter(skill.data, where)
    name = _skill_name(front_matter.get("name"), where)
    description = _skill_description(front_matter.get("description"), where)
    files = tuple(BundleFile(entry.path, entry.sha256, entry.size) for entry in tree.files)
    return SkillBundle(name, description, files, tree.fingerprint)


def parse_front_matter(data: bytes, where: str) -> dict[str, Any]:
    """The YAML mapping between the opening and closing ``---`` lines of ``data``."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvocationError("is not UTF-8", source=where) from None
    lines = text.removeprefix("\ufeff").splitlines(keepends=True)
    if not lines or lines[0].rstrip("\r\n") != FRONT_MATTER_FENCE:
        raise InvocationError(
            "has no YAML front matter (it must start with a --- line)", source=where
        )
    closing = next(
        (i for i, line in enumerate(lines[1:], 1) if line.rstrip("\r\n") == FRONT_MATTER_FENCE),
        None,
    )
    if closing is None:
        raise InvocationError("front matter is never closed by a --- line", source=where)
    block = "".join(lines[1:closing])
    if len(block.encode("utf-8")) > MAX_SKILL_FRONT_MATTER_BYTES:
        raise InvocationError(
            f"front matter is larger than {MAX_SKILL_FRONT_MATTER_BYTES} bytes", source=where
        )
    value = _safe_yaml(block, where)
    if not isinstance(value, dict) or not all(isinstance(key, str) for key in value):
        raise InvocationError("front matter must be a mapping of names to values", source=where)
    return value


def _safe_yaml(block: str, where: str) -> object:
    """Parse with the safe loader after an event scan bounds nesting and refuses aliases.

    PyYAML builds nested values recursively and expands aliases by reference; scanning the
    event stream first (iterative) keeps hostile front matter from exhausting the stack.
    """
    import yaml

    try:
        depth = 0
        for event in yaml.parse(block, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent):
                raise InvocationError("front matter may not use YAML aliases", source=where)
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_SKILL_FRONT_MATTER_DEPTH:
                    raise InvocationError(
                        f"front matter nests deeper than {MAX_SKILL_FRONT_MATTER_DEPTH}",
                        source=where,
                    )
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
        return yaml.safe_load(block)
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or type(exc).__name__
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 2}" if mark is not None else ""
        raise InvocationError(
            f"front matter is not valid YAML: {problem}{at}", source=where
        ) from None


def _skill_name(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise InvocationError("front matter needs a string 'name'", source=where)
    if len(value) > MAX_SKILL_NAME_LENGTH or not _SKILL_NAME_RE.fullmatch(value):
        raise InvocationError(
            f"name {value[:80]!r} must be at most {MAX_SKILL_NAME_LENGTH} lowercase letters, "
            "digits and inner hyphens",
            source=where,
        )
    return value


def _skill_description(value: object, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvocationError("front matter needs a non-empty string 'description'", source=where)
    if len(value) > MAX_SKILL_DESCRIPTION_LENGTH:
        raise InvocationError(
            f"description is longer than {MAX_SKILL_DESCRIPTION_LENGTH} characters", source=where
        )
    return value
