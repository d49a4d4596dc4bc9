"""skill-eval definitions (``schema_version: 1`` group and suite files), loaded strictly.

skill-eval's users already have these files; ``sevro run GROUP.json`` and ``sevro run
SUITE.json`` read them as they are. The rules are skill-eval's schema, checked before anything
runs: exact key sets, ids, exactly one of ``prompt``/``turns``, the two variants, target
indexes, unique expectation ids, comparison pairs, and every declared path contained in the
definition root lexically and canonically. Unlike skill-eval, kind-specific expectation fields
are checked here too (a bad check never costs a run). ``runtime`` is loaded (and its extension
bundles snapshotted) by :mod:`sevro_core.experiments.skillevalruntime`; only a host that honours
it runs the group. Every problem is one :class:`InvocationError` line naming the file and the
JSON pointer (exit 64).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from attrs import frozen

from sevro_core.errors import InvocationError, join_pointer
from sevro_core.experiments.skillevalchecks import check_fields
from sevro_core.experiments.skillevalruntime import RuntimeContext, load_runtime
from sevro_core.experiments.skillevalruntime import check_keys as _keys
from sevro_core.experiments.skillevalruntime import contained as _contained
from sevro_core.experiments.skillevalruntime import lexical as _lexical
from sevro_core.formats.jsonio import read_json_file
from sevro_core.limits import (
    MAX_CASE_FILE_BYTES,
    MAX_PROMPT_BYTES,
    MAX_SKILLEVAL_EXPECTATIONS,
    MAX_SKILLEVAL_SUITE_GROUPS,
    MAX_SKILLEVAL_TURNS,
)
from sevro_core.models import RuntimeProfile

SCHEMA_VERSION = 1
MAX_DEFINITION_BYTES = MAX_CASE_FILE_BYTES
MAX_SUITE_GROUPS = MAX_SKILLEVAL_SUITE_GROUPS
MAX_EXPECTATIONS = MAX_SKILLEVAL_EXPECTATIONS
MAX_TURNS = MAX_SKILLEVAL_TURNS
MAX_ID_LENGTH = 64
VARIANTS = ("baseline", "candidate")
TYPES = ("description", "body")
DESCRIPTION_TOOLS = frozenset({"read"})
BODY_TOOLS = frozenset({"read", "write", "edit"})
NATIVE_TOOLS = frozenset({"bash", "powershell", "grep", "find", "ls"})
_ID_RE = re.compile(r"^[a-z](?:[a-z0-9]|-(?=[a-z0-9]))*$")
_GROUP_KEYS = frozenset(
    {
        "schema_version",
        "kind",
        "id",
        "type",
        "input",
        "fixture",
        "tools",
        "variants",
        "expectations",
        "review_questions",
    }
)
_VARIANT_KEYS = frozenset({"source", "skills", "target", "context"})
_COMMON_KEYS = frozenset({"id", "kind", "variant", "comparison", "turn"})

EXPECTATION_FIELDS: Mapping[str, tuple[frozenset[str], frozenset[str], tuple[str, ...]]] = {
    # kind: (required fields, optional fields, expect values)
    "skill-read": (frozenset(), frozenset(), ("never", "on-turn", "by-turn", "not-before-turn")),
    "resource-read": (frozenset({"resource", "path"}), frozenset({"index"}), ("read", "not-read")),
    "path": (frozenset({"path"}), frozenset(), ("exists", "absent")),
    "changed-paths": (frozenset({"paths"}), frozenset(), ("equals", "excludes")),
    "file-text": (
        frozenset({"path", "value"}),
        frozenset(),
        ("contains", "not-contains", "equals"),
    ),
    "json": (
        frozenset({"path"}),
        frozenset({"pointer", "value"}),
        (
            "available",
            "missing",
            "valid",
            "malformed",
            "field-present",
            "field-absent",
            "field-equals",
        ),
    ),
    "response-text": (frozenset({"value"}), frozenset(), ("contains", "not-contains", "equals")),
    "tool-call": (
        frozenset({"tool"}),
        frozenset({"argumentContains", "argumentNotContains"}),
        ("called", "succeeded", "failed", "not-called"),
    ),
    "context-text": (
        frozenset({"value"}),
        frozenset({"surface", "request"}),
        ("contains", "not-contains", "equals"),
    ),
}
_CUSTOM_TOOL_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
_POINTER_KINDS = frozenset({"field-present", "field-absent", "field-equals"})


@frozen
class VariantSource:
    kind: str
    """``working-tree`` or ``git``."""
    ref: str | None


@frozen
class Variant:
    name: str
    source: VariantSource
    skills: tuple[str, ...]
    target: int | None
    context: tuple[str, ...]


@frozen
class Expectation:
    id: str
    kind: str
    variant: str
    comparison: str | None
    turn: int | None
    fields: Mapping[str, Any]
    """The kind-specific fields, ``expect`` included."""
    pointer: str

    @property
    def expect(self) -> str:
        return str(self.fields["expect"])


@frozen
class Group:
    path: Path
    pointer: str
    """Where the group came from: its file (a suite's member) or the direct definition."""
    id: str
    type: str
    turns: tuple[str, ...]
    uses_turns: bool
    """``input.turns`` (rather than ``input.prompt``)."""
    fixture: str | None
    tools: tuple[str, ...]
    variants: Mapping[str, Variant]
    expectations: tuple[Expectation, ...]
    review_questions: tuple[str, ...]
    model: str | None
    thinking: str | None
    runtime: RuntimeProfile | None = None
    """``runtime``, its bundles snapshotted; None: a plain host with no declared extensions."""


@frozen
class Definition:
    """A direct group (``suite`` None) or a suite and its groups, in suite order."""

    path: Path
    root: Path
    kind: str
    suite: str | None
    groups: tuple[Group, ...]


def is_definition(document: Any) -> bool:
    """A skill-eval file: a JSON object with ``schema_version`` and ``kind`` group or suite."""
    return (
        isinstance(document, dict)
        and "schema_version" in document
        and document.get("kind") in ("group", "suite")
    )


def load_definition(path: Path, root: Path, environ: Mapping[str, str] | None = None) -> Definition:
    """Read a group or suite file under the definition ``root``; exit 64 on the first fault.

    ``environ`` (default: this process's) is where a runtime's inherited variables must be set."""
    root = root.resolve()
    parent = RuntimeContext(os.environ if environ is None else environ)
    where = _contained_file(path, root, path, "")
    document = _read(where, path)
    if document.get("kind") == "suite":
        return _suite(document, where, path, root, parent)
    group = _group(document, where, path, root, parent)
    return Definition(where, root, "group", None, (group,))


def _read(path: Path, shown: Path) -> dict[str, Any]:
    document = read_json_file(path, MAX_DEFINITION_BYTES, what="skill-eval definition")
    if not isinstance(document, dict):
        raise InvocationError("a skill-eval definition holds one JSON object", source=shown)
    version = document.get("schema_version")
    if type(version) is not int or version != SCHEMA_VERSION:
        raise InvocationError(
            f"schema_version must be {SCHEMA_VERSION}, not {str(version)[:40]}",
            source=shown,
            pointer="/schema_version",
        )
    if document.get("kind") not in ("group", "suite"):
        raise InvocationError("kind must be group or suite", source=shown, pointer="/kind")
    return document


def _suite(
    document: dict[str, Any], path: Path, shown: Path, root: Path, context: RuntimeContext
) -> Definition:
    _keys(document, frozenset({"schema_version", "kind", "id", "groups"}), frozenset(), shown, "")
    suite_id = _id(document["id"], shown, "/id")
    references = document["groups"]
    if not isinstance(references, list) or not references:
        raise InvocationError("groups is a non-empty array", source=shown, pointer="/groups")
    if len(references) > MAX_SUITE_GROUPS:
        raise InvocationError(
            f"more than {MAX_SUITE_GROUPS} groups", source=shown, pointer="/groups"
        )
    groups: list[Group] = []
    seen_files: dict[Path, int] = {}
    seen_ids: dict[str, int] = {}
    for index, reference in enumerate(references):
        pointer = join_pointer("/groups", index)
        if not isinstance(reference, str):
            raise InvocationError("a group reference is a string", source=shown, pointer=pointer)
        _lexical(reference, shown, pointer)
        member = _contained_file(path.parent / reference, root, shown, pointer)
        if member in seen_files:
            raise InvocationError(
                f"group {reference!r} is listed twice (also /groups/{seen_files[member]})",
                source=shown,
                pointer=pointer,
            )
        seen_files[member] = index
        member_document = _read(member, member)
        if member_document.get("kind") != "group":
            raise InvocationError(
                "a suite's member must be a group definition", source=member, pointer="/kind"
            )
        group = _group(member_document, member, member, root, context)
        if group.id in seen_ids:
            raise InvocationError(
                f"duplicate group id {group.id!r} (also /groups/{seen_ids[group.id]})",
                source=shown,
                pointer=pointer,
            )
        seen_ids[group.id] = index
        groups.append(group)
    return Definition(path, root, "suite", suite_id, tuple(groups))


def _group(
    document: dict[str, Any], path: Path, shown: Path, root: Path, context: RuntimeContext
) -> Group:
    base = ""
    _keys(document, _GROUP_KEYS, frozenset({"model", "runtime"}), shown, base)
    group_id = _id(document["id"], shown, join_pointer(base, "id"))
    kind = document["type"]
    if kind not in TYPES:
        raise InvocationError(
            "type must be description or body", source=shown, pointer=join_pointer(base, "type")
        )
    turns, uses_turns = _input(document["input"], shown, join_pointer(base, "input"))
    fixture = document["fixture"]
    if fixture is not None:
        fixture = _path_string(fixture, shown, join_pointer(base, "fixture"))
        _contained(root / fixture, root, shown, join_pointer(base, "fixture"), must_exist=True)
    variants = _variants(document["variants"], root, shown, join_pointer(base, "variants"))
    model, thinking = _model(document.get("model"), shown, join_pointer(base, "model"))
    runtime = (
        load_runtime(document["runtime"], root, shown, "/runtime", context)
        if "runtime" in document
        else None
    )
    return Group(
        path=path,
        pointer=base,
        id=group_id,
        type=kind,
        turns=turns,
        uses_turns=uses_turns,
        fixture=fixture,
        tools=_tools(document["tools"], kind, runtime, shown, join_pointer(base, "tools")),
        variants=variants,
        expectations=_expectations(
            document["expectations"],
            len(turns),
            variants,
            shown,
            join_pointer(base, "expectations"),
        ),
        review_questions=_strings(
            document["review_questions"], shown, join_pointer(base, "review_questions")
        ),
        model=model,
        thinking=thinking,
        runtime=runtime,
    )


def _id(value: Any, shown: Path, pointer: str) -> str:
    if not isinstance(value, str) or len(value) > MAX_ID_LENGTH or not _ID_RE.fullmatch(value):
        raise InvocationError(
            f"an id starts with a lowercase letter and has lowercase letters, digits or single "
            f"hyphens, at most {MAX_ID_LENGTH} characters (not {str(value)[:80]!r})",
            source=shown,
            pointer=pointer,
        )
    return value


def _input(value: Any, shown: Path, pointer: str) -> tuple[tuple[str, ...], bool]:
    if not isinstance(value, dict):
        raise InvocationError("input must be a JSON object", source=shown, pointer=pointer)
    present = [key for key in ("prompt", "turns") if key in value]
    unknown = [key for key in value if key not in ("prompt", "turns")]
    if unknown:
        raise InvocationError(
            f"unknown field {unknown[0][:80]!r}",
            source=shown,
            pointer=join_pointer(pointer, unknown[0]),
        )
    if len(present) != 1:
        raise InvocationError(
            "input holds exactly one of prompt and turns", source=shown, pointer=pointer
        )
    if present[0] == "prompt":
        return (_prompt(value["prompt"], shown, join_pointer(pointer, "prompt")),), False
    turns = value["turns"]
    if not isinstance(turns, list) or not turns:
        raise InvocationError(
            "turns is a non-empty array of prompts", source=shown, pointer=f"{pointer}/turns"
        )
    if len(turns) > MAX_TURNS:
        raise InvocationError(
            f"more than {MAX_TURNS} turns", source=shown, pointer=f"{pointer}/turns"
        )
    return (
        tuple(_prompt(t, shown, join_pointer(pointer, "turns", i)) for i, t in enumerate(turns)),
        True,
    )


def _prompt(value: Any, shown: Path, pointer: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvocationError("a prompt is a non-blank string", source=shown, pointer=pointer)
    if len(value.encode("utf-8", "surrogatepass")) > MAX_PROMPT_BYTES:
        raise InvocationError(
            f"longer than {MAX_PROMPT_BYTES} bytes", source=shown, pointer=pointer
        )
    return value


def _tools(
    value: Any, kind: str, runtime: RuntimeProfile | None, shown: Path, pointer: str
) -> tuple[str, ...]:
    """skill-eval's tool rules: custom tools only in body groups whose runtime declares at
    least one extension bundle (the bundle is what defines them)."""
    tools = _strings(value, shown, pointer, unique=True)
    allowed = DESCRIPTION_TOOLS if kind == "description" else BODY_TOOLS
    bundles = runtime is not None and bool(runtime.extensions)
    for index, tool in enumerate(tools):
        if tool in NATIVE_TOOLS:
            reason = f"native tool {tool!r} is unsupported (skill-eval allows read, write, edit)"
        elif tool not in allowed and kind == "description":
            reason = f"a description group allows no tools or only read, not {tool[:80]!r}"
        elif tool not in allowed and not bundles:
            reason = f"custom tool {tool[:80]!r} needs a runtime that declares an extension bundle"
        elif tool not in allowed and not _CUSTOM_TOOL_RE.fullmatch(tool):
            reason = f"custom tool name {tool[:80]!r} is not [A-Za-z_][A-Za-z0-9_-]* (64 at most)"
        else:
            continue
        raise InvocationError(reason, source=shown, pointer=join_pointer(pointer, index))
    return tools


def _strings(value: Any, shown: Path, pointer: str, *, unique: bool = False) -> tuple[str, ...]:
    if not isinstance(value, list) or len(value) > 1024:
        raise InvocationError(
            "must be an array of at most 1024 strings", source=shown, pointer=pointer
        )
    seen: dict[str, int] = {}
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise InvocationError(
                "must be a string", source=shown, pointer=join_pointer(pointer, index)
            )
        if unique and item in seen:
            raise InvocationError(
                f"duplicate {item[:80]!r} (also {join_pointer(pointer, seen[item])})",
                source=shown,
                pointer=join_pointer(pointer, index),
            )
        seen.setdefault(item, index)
    return tuple(value)


def _model(value: Any, shown: Path, pointer: str) -> tuple[str | None, str | None]:
    if value is None:
        return None, None
    _keys(value, frozenset({"model"}), frozenset({"thinking"}), shown, pointer)
    model, thinking = value["model"], value.get("thinking")
    if not isinstance(model, str) or not model.strip() or len(model) > 256:
        raise InvocationError(
            "model.model names the provider/model", source=shown, pointer=f"{pointer}/model"
        )
    if thinking is not None and (not isinstance(thinking, str) or not thinking.strip()):
        raise InvocationError(
            "model.thinking is a non-blank string", source=shown, pointer=f"{pointer}/thinking"
        )
    return model, thinking


def _variants(value: Any, root: Path, shown: Path, pointer: str) -> dict[str, Variant]:
    _keys(value, frozenset(VARIANTS), frozenset(), shown, pointer)
    return {
        name: _variant(name, value[name], root, shown, f"{pointer}/{name}") for name in VARIANTS
    }


def _variant(name: str, value: Any, root: Path, shown: Path, pointer: str) -> Variant:
    _keys(value, _VARIANT_KEYS, frozenset(), shown, pointer)
    source = _source(value["source"], shown, f"{pointer}/source")
    skills = _strings(value["skills"], shown, f"{pointer}/skills", unique=True)
    context = _strings(value["context"], shown, f"{pointer}/context", unique=True)
    for field, paths in (("skills", skills), ("context", context)):
        for index, item in enumerate(paths):
            where = join_pointer(pointer, field, index)
            _path_string(item, shown, where)
            if source.kind == "working-tree":
                _contained(root / item, root, shown, where, must_exist=True)
    target = value["target"]
    if target is None:
        if name == "candidate":
            raise InvocationError(
                "the candidate's target cannot be null", source=shown, pointer=f"{pointer}/target"
            )
    elif type(target) is not int or not 0 <= target < len(skills):
        raise InvocationError(
            f"target is null or a zero-based index into skills (0 to {len(skills) - 1})"
            if skills
            else "target must be null when skills is empty",
            source=shown,
            pointer=f"{pointer}/target",
        )
    return Variant(name, source, skills, target, context)


def _source(value: Any, shown: Path, pointer: str) -> VariantSource:
    if isinstance(value, dict) and value.get("kind") == "git":
        _keys(value, frozenset({"kind", "ref"}), frozenset(), shown, pointer)
        ref = value["ref"]
        if not isinstance(ref, str) or not ref.strip() or len(ref) > 256:
            raise InvocationError(
                "a Git source names a non-blank ref", source=shown, pointer=f"{pointer}/ref"
            )
        return VariantSource("git", ref)
    if isinstance(value, dict) and value.get("kind") == "working-tree":
        _keys(value, frozenset({"kind"}), frozenset(), shown, pointer)
        return VariantSource("working-tree", None)
    raise InvocationError(
        'source is {"kind": "working-tree"} or {"kind": "git", "ref": REF}',
        source=shown,
        pointer=pointer,
    )


def _expectations(
    value: Any, turns: int, variants: Mapping[str, Variant], shown: Path, pointer: str
) -> tuple[Expectation, ...]:
    if not isinstance(value, list) or len(value) > MAX_EXPECTATIONS:
        raise InvocationError(
            f"expectations is an array of at most {MAX_EXPECTATIONS}", source=shown, pointer=pointer
        )
    out: list[Expectation] = []
    seen: dict[str, int] = {}
    for index, item in enumerate(value):
        expectation = _expectation(item, turns, variants, shown, join_pointer(pointer, index))
        if expectation.id in seen:
            raise InvocationError(
                f"duplicate expectation id {expectation.id!r} "
                f"(also {pointer}/{seen[expectation.id]})",
                source=shown,
                pointer=f"{pointer}/{index}/id",
            )
        seen[expectation.id] = index
        out.append(expectation)
    _check_comparisons(out, shown)
    return tuple(out)


def _expectation(
    item: Any, turns: int, variants: Mapping[str, Variant], shown: Path, pointer: str
) -> Expectation:
    if not isinstance(item, dict):
        raise InvocationError("an expectation is a JSON object", source=shown, pointer=pointer)
    kind = item.get("kind")
    if not isinstance(kind, str) or kind not in EXPECTATION_FIELDS:
        raise InvocationError(
            f"kind must be one of {', '.join(EXPECTATION_FIELDS)}",
            source=shown,
            pointer=f"{pointer}/kind",
        )
    required, optional, expects = EXPECTATION_FIELDS[kind]
    _keys(
        item,
        required | {"id", "kind", "variant", "expect"},
        optional | {"comparison", "turn"},
        shown,
        pointer,
    )
    expectation_id = _id(item["id"], shown, f"{pointer}/id")
    if item["variant"] not in VARIANTS:
        raise InvocationError(
            "variant is baseline or candidate", source=shown, pointer=f"{pointer}/variant"
        )
    if item["expect"] not in expects:
        raise InvocationError(
            f"expect for {kind} is one of {', '.join(expects)}",
            source=shown,
            pointer=f"{pointer}/expect",
        )
    comparison = item.get("comparison")
    if comparison is not None:
        _id(comparison, shown, f"{pointer}/comparison")
    turn = _turn(item, kind, turns, shown, pointer)
    fields = {k: v for k, v in item.items() if k not in _COMMON_KEYS}
    if kind == "skill-read" and turn is not None:
        fields["turn"] = turn  # the timing turn of a read, not the turn whose state is graded
    check_fields(kind, fields, variants[item["variant"]], shown, pointer)
    return Expectation(expectation_id, kind, item["variant"], comparison, turn, fields, pointer)


def _turn(item: Mapping[str, Any], kind: str, turns: int, shown: Path, pointer: str) -> int | None:
    turn = item.get("turn")
    if kind == "skill-read":
        if item["expect"] == "never" and turn is not None:
            raise InvocationError(
                "expect never takes no turn", source=shown, pointer=f"{pointer}/turn"
            )
        if item["expect"] != "never" and turn is None:
            raise InvocationError(
                f"expect {item['expect']} needs a turn", source=shown, pointer=pointer
            )
    if turn is None:
        return None
    if type(turn) is not int or not 1 <= turn <= turns:
        raise InvocationError(
            f"turn is a one-based turn number from 1 to {turns}",
            source=shown,
            pointer=f"{pointer}/turn",
        )
    return turn


def _check_comparisons(expectations: Sequence[Expectation], shown: Path) -> None:
    """A comparison id is shared by exactly one baseline and one candidate expectation of the
    same kind and predicate (every field but id, variant and comparison equal)."""
    by_id: dict[str, list[Expectation]] = {}
    for expectation in expectations:
        if expectation.comparison is not None:
            by_id.setdefault(expectation.comparison, []).append(expectation)
    for comparison, members in by_id.items():
        pointer = f"{members[-1].pointer}/comparison"
        if len(members) != 2 or {m.variant for m in members} != set(VARIANTS):
            raise InvocationError(
                f"comparison {comparison!r} must be shared by exactly one baseline and one "
                f"candidate expectation ({len(members)} found)",
                source=shown,
                pointer=pointer,
            )
        first, second = members
        if (first.kind, first.turn, dict(first.fields)) != (
            second.kind,
            second.turn,
            dict(second.fields),
        ):
            raise InvocationError(
                f"comparison {comparison!r} pairs expectations that differ "
                f"({first.id!r} and {second.id!r} must have the same kind and predicate)",
                source=shown,
                pointer=pointer,
            )


def _path_string(value: Any, shown: Path, pointer: str) -> str:
    if not isinstance(value, str):
        raise InvocationError("a path is a string", source=shown, pointer=pointer)
    _lexical(value, shown, pointer)
    return value


def _contained_file(path: Path, root: Path, shown: Path, pointer: str) -> Path:
    """A definition file inside ``root``: lexically (``..`` folded) and once symlinks resolve."""
    absolute = path if path.is_absolute() else Path.cwd() / path
    lexical = Path(os.path.normpath(absolute))
    if lexical != root and root not in lexical.parents:
        raise InvocationError(
            f"definition {path} is outside the definition root {root} (the current directory)",
            source=shown,
            pointer=pointer or None,
        )
    resolved = _contained(absolute, root, shown, pointer, must_exist=True)
    if not resolved.is_file():
        raise InvocationError(
            f"{path} is not a regular file", source=shown, pointer=pointer or None
        )
    return resolved
