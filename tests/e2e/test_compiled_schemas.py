"""The compiled validators decide exactly what jsonschema decides, on real and mutated evidence.

sevro's hot schemas are checked by fastjsonschema (draft-07 code generated from the 2020-12
schemas); a disagreement would let a document through that the published schema refuses.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sevro_core.formats.schemas import FAST_SCHEMAS, fast_validator, load_schema, validator
from sevro_core.testing import SevroProject
from tests.e2e.helpers import regex_check

REPLACEMENTS: tuple[Any, ...] = (None, "x", -1, 1.5, True, [], {}, "sevro.x-y", "0" * 64)
DRAFT_2020_ONLY = {"prefixItems", "unevaluatedProperties", "unevaluatedItems", "dependentRequired",
                   "dependentSchemas", "$anchor", "$dynamicRef", "$dynamicAnchor", "minContains",
                   "maxContains"}  # fmt: skip


def _mutations(value: Any) -> Iterator[Any]:
    """Copies of ``value`` with one change each: removed, retyped or added members."""
    paths: list[list[str | int]] = []

    def walk(node: Any, path: list[str | int]) -> None:
        paths.append(path)
        if isinstance(node, dict):
            for key, item in node.items():
                walk(item, [*path, key])
        elif isinstance(node, list):
            for index, item in enumerate(node):
                walk(item, [*path, index])

    walk(value, [])
    for path in paths:
        if not path:
            continue
        for replacement in (*REPLACEMENTS, "delete"):
            mutated = copy.deepcopy(value)
            parent = mutated
            for part in path[:-1]:
                parent = parent[part]
            if replacement == "delete":
                del parent[path[-1]]
            else:
                parent[path[-1]] = copy.deepcopy(replacement)
            yield mutated
        mutated = copy.deepcopy(value)
        target = mutated
        for part in path:
            target = target[part]
        if isinstance(target, dict):
            target["unknownKey"] = 1
            yield mutated
        elif isinstance(target, list) and target:
            target.append(copy.deepcopy(target[0]))
            yield mutated


def _agree(name: str, document: Any) -> tuple[int, int]:
    from fastjsonschema import JsonSchemaException

    slow = validator(name)
    fast = fast_validator(name)
    accepted = refused = 0
    for mutated in [document, *_mutations(document)]:
        try:
            fast(mutated)
            fast_ok = True
        except JsonSchemaException:
            fast_ok = False
        assert fast_ok == slow.is_valid(mutated), json.dumps(mutated)[:2000]
        accepted += fast_ok
        refused += not fast_ok
    return accepted, refused


def test_hot_schemas_use_no_keyword_the_translation_does_not_handle() -> None:
    def keywords(node: Any) -> Iterator[str]:
        if isinstance(node, dict):
            yield from node
            for value in node.values():
                yield from keywords(value)
        elif isinstance(node, list):
            for value in node:
                yield from keywords(value)

    for name in FAST_SCHEMAS:
        used = set(keywords(load_schema(name))) & DRAFT_2020_ONLY
        assert used <= {"prefixItems"}, (name, used)


@pytest.fixture(scope="module")
def evidence(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    project = SevroProject(tmp_path_factory.mktemp("compiled"))
    case = project.case(checks=[regex_check("r", "^ok$")])
    host = project.script(default=[[{"reply": {"text": "ok"}}]])
    result = project.run(case, "--host-config", host, "--trials", "2").json()
    run_dir = Path(result["evidencePath"]).parent
    run = json.loads((run_dir / "run.json").read_text())
    trial = json.loads((run_dir / run["trials"][0]["path"]).read_text())
    return {"cli-result.v1": result, "run-evidence.v1": run, "trial-evidence.v1": trial}


@pytest.mark.parametrize("name", ["cli-result.v1", "run-evidence.v1", "trial-evidence.v1"])
def test_compiled_and_reference_validators_agree(name: str, evidence: dict[str, Any]) -> None:
    accepted, refused = _agree(name, evidence[name])
    assert accepted >= 1 and refused >= 50, "the mutations must exercise both outcomes"


def test_prefix_items_hold_in_the_compiled_validator(evidence: dict[str, Any]) -> None:
    from fastjsonschema import JsonSchemaException

    trial = copy.deepcopy(evidence["trial-evidence.v1"])
    observations = trial["evidence"]["observations"]
    observations[0], observations[-1] = observations[-1], observations[0]
    assert not validator("trial-evidence.v1").is_valid(trial)
    with pytest.raises(JsonSchemaException):
        fast_validator("trial-evidence.v1")(trial)
