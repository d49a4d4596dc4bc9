"""skill-eval expectations as sevro checks: one built-in grader and configuration per kind.

The same function checks an expectation's kind-specific fields at load (with placeholder skill
names) and builds the check once the variant's skills are read (with their declared names), so
what is validated is exactly what runs. Fields sevro cannot grade honestly are refused by the
loader (:mod:`sevro_core.experiments.skilleval`), never dropped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from sevro_core.errors import InvocationError
from sevro_core.formats.jsonio import JsonValue
from sevro_core.limits import MAX_CONTEXT_TEXT_VALUE_CHARS


class Variant(Protocol):
    """What a check needs of a skill-eval variant (``skilleval.Variant``)."""

    @property
    def skills(self) -> tuple[str, ...]: ...

    @property
    def context(self) -> tuple[str, ...]: ...

    @property
    def target(self) -> int | None: ...


SKILL_READ = {
    "never": "not-read",
    "on-turn": "read-on-turn",
    "by-turn": "read-by-turn",
    "not-before-turn": "not-before-turn",
}
TOOL_CALL = {
    "called": "made",
    "not-called": "not-made",
    "succeeded": "succeeded",
    "failed": "failed",
}
JSON_STATES = {
    "valid": "available",
    "malformed": "malformed",
    "missing": "missing",
    "field-present": "present",
    "field-absent": "absent",
    "field-equals": "equals",
}
FILE_TEXT = {"contains": "contains", "not-contains": "notContains", "equals": "equals"}
"""skill-eval's text predicates as the keys of sevro.file-text and sevro.response-text."""
_GLOB_CHARACTERS = frozenset("*?[]{}")


def check_fields(
    kind: str, fields: Mapping[str, Any], variant: Variant, shown: Path, pointer: str
) -> None:
    """Refuse bad kind-specific fields at load (skill names are not known yet)."""
    to_check(
        kind, fields, variant, [f"skill-{i}" for i in range(len(variant.skills))], shown, pointer
    )


def to_check(
    kind: str,
    fields: Mapping[str, Any],
    variant: Variant,
    skill_names: Sequence[str],
    shown: Path,
    pointer: str,
) -> tuple[str, dict[str, JsonValue]]:
    """The sevro grader and configuration for one expectation (without its id, arm and turn)."""
    expect = str(fields["expect"])

    def refuse(message: str, field: str) -> InvocationError:
        return InvocationError(message, source=shown, pointer=f"{pointer}/{field}")

    if kind == "skill-read":
        if variant.target is None:
            raise refuse("skill-read needs the variant's target, which is null", "variant")
        return "sevro.skill-activation", {
            "expect": SKILL_READ[expect],
            "skill": skill_names[variant.target],
            **({"turn": fields["turn"]} if "turn" in fields else {}),
        }
    if kind == "resource-read":
        return "sevro.resource-read", _resource(fields, variant, skill_names, refuse)
    if kind == "path":
        return "sevro.path", {"path": _path(fields["path"], refuse, "path"), "expect": expect}
    if kind == "changed-paths":
        return "sevro.changed-paths", {
            "equal" if expect == "equals" else "exclude": _literal_paths(fields["paths"], refuse)
        }
    if kind == "file-text":
        value = fields["value"]
        if not isinstance(value, str) or (expect != "equals" and not value):
            raise refuse("value is a string (non-empty for contains and not-contains)", "value")
        return "sevro.file-text", {
            "path": _path(fields["path"], refuse, "path"),
            FILE_TEXT[expect]: value,
        }
    if kind == "json":
        return _json(fields, expect, refuse)
    if kind == "response-text":
        value = fields["value"]
        if not isinstance(value, str) or (expect != "equals" and not value):
            raise refuse("value is a string (non-empty for contains and not-contains)", "value")
        return "sevro.response-text", {FILE_TEXT[expect]: value}
    if kind == "context-text":
        return "sevro.context-text", _context_text(fields, expect, refuse)
    tool = fields["tool"]
    if not isinstance(tool, str) or not tool or len(tool) > 256:
        raise refuse("tool is a non-empty tool name", "tool")
    config: dict[str, JsonValue] = {"tool": tool, "expect": TOOL_CALL[expect]}
    text: dict[str, JsonValue] = {}
    for field, key in (("argumentContains", "contains"), ("argumentNotContains", "notContains")):
        values = fields.get(field)
        if values is None:
            continue
        if not (
            isinstance(values, list) and values and all(isinstance(v, str) and v for v in values)
        ):
            raise refuse(f"{field} is a non-empty array of non-empty strings", field)
        text[key] = list(values)
    if text:
        config["arguments"] = {"text": text}
    return "sevro.tool-call", config


def _context_text(fields: Mapping[str, Any], expect: str, refuse: Any) -> dict[str, JsonValue]:
    """skill-eval's ``context-text``: ``surface`` defaults to the system prompt; ``request``
    (``first``, ``last`` or a positive number, default ``last``) only selects among the model
    requests of the provider context, so sevro refuses it with the system prompt."""
    value = fields["value"]
    if (
        not isinstance(value, str)
        or (expect != "equals" and not value)
        or len(value) > MAX_CONTEXT_TEXT_VALUE_CHARS
    ):
        raise refuse(
            "value is a string (non-empty for contains and not-contains, at most "
            f"{MAX_CONTEXT_TEXT_VALUE_CHARS} characters)",
            "value",
        )
    surface = fields.get("surface", "system-prompt")
    if surface not in ("system-prompt", "provider-context"):
        raise refuse("surface is system-prompt or provider-context", "surface")
    config: dict[str, JsonValue] = {"surface": surface}
    if "request" in fields:
        request = fields["request"]
        if surface != "provider-context":
            raise refuse("request selects a provider-context request only", "request")
        if request not in ("first", "last") and not (type(request) is int and request >= 1):
            raise refuse("request is first, last or a positive request number", "request")
        config["request"] = request
    config[FILE_TEXT[expect]] = value
    return config


def _resource(
    fields: Mapping[str, Any], variant: Variant, skill_names: Sequence[str], refuse: Any
) -> dict[str, JsonValue]:
    resource, index = fields["resource"], fields.get("index")
    if resource not in ("skill", "workspace", "context"):
        raise refuse("resource is skill, workspace or context", "resource")
    config: dict[str, JsonValue] = {"resource": resource}
    if resource == "workspace":
        if "index" in fields:
            raise refuse("a workspace resource takes no index", "index")
    else:
        items = variant.skills if resource == "skill" else variant.context
        if type(index) is not int or not 0 <= index < len(items):
            raise refuse(
                f"index selects one of the variant's {len(items)} declared {resource} item(s)",
                "index",
            )
        if resource == "skill":
            config["skill"] = skill_names[index]
    config["path"] = _path(fields["path"], refuse, "path")
    config["expect"] = fields["expect"]
    return config


def _json(fields: Mapping[str, Any], expect: str, refuse: Any) -> tuple[str, dict[str, JsonValue]]:
    path = _path(fields["path"], refuse, "path")
    needs_pointer = expect.startswith("field-")
    if needs_pointer != ("pointer" in fields):
        raise refuse(
            f"expect {expect} {'needs' if needs_pointer else 'takes no'} pointer", "pointer"
        )
    if (expect == "field-equals") != ("value" in fields):
        raise refuse(
            f"expect {expect} {'needs' if expect == 'field-equals' else 'takes no'} value", "value"
        )
    if expect == "available":
        # skill-eval's available: the file is there, whatever it holds (valid: it parses).
        return "sevro.path", {"path": path, "expect": "exists", "kind": "file"}
    config: dict[str, JsonValue] = {"path": path, "expect": JSON_STATES[expect]}
    if needs_pointer:
        pointer = fields["pointer"]
        if (
            not isinstance(pointer, str)
            or (pointer and not pointer.startswith("/"))
            or re.search("~(?![01])", pointer)
        ):
            raise refuse(
                "a JSON Pointer is '' or begins with '/'; '~' escapes only 0 and 1", "pointer"
            )
        config["pointer"] = pointer
    if expect == "field-equals":
        config["value"] = fields["value"]
    return "sevro.json-file", config


def _path(value: Any, refuse: Any, field: str) -> str:
    if (
        not isinstance(value, str)
        or not value
        or len(value) > 1024
        or value.startswith("/")
        or "\\" in value
        or "\x00" in value
        or any(part in ("", ".", "..") for part in value.split("/"))
    ):
        raise refuse("a workspace path is relative, slash-separated, without '.' or '..'", field)
    return value


def _literal_paths(value: Any, refuse: Any) -> list[JsonValue]:
    if not isinstance(value, list) or not value or len(value) > 256:
        raise refuse("paths is a non-empty array of at most 256 workspace paths", "paths")
    paths: list[JsonValue] = []
    for index, item in enumerate(value):
        path = _path(item, refuse, f"paths/{index}")
        if _GLOB_CHARACTERS & set(path):
            raise refuse(
                "a changed path with * ? [ ] { } cannot be matched literally", f"paths/{index}"
            )
        if path in paths:
            raise refuse(f"duplicate path {path!r}", f"paths/{index}")
        paths.append(path)
    return paths
