"""The published request and response schemas: well-formed, linked from docs, and strict."""

from __future__ import annotations

import copy
import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from sevro_core.api import validator
from sevro_extensions.envelope import METHOD_PROTOCOLS, schema_name

ROOT = Path(__file__).resolve().parents[2]
PACKAGED = resources.files("sevro_extensions").joinpath("schemas")
ID = "0b1c3a43-64a4-4b55-9b57-2f0d2b8c1e6e"

CASE = {
    "id": "greets",
    "prompt": "Write hello.txt.",
    "fixture": {"kind": "inline", "files": {}},
    "checks": [{"id": "answer", "grader": "acme.answer", "configuration": {}}],
    "requiredEvidence": ["sevro.observation.final-message"],
    "extensionData": {"acme.case": {"word": "hello"}},
}
PARAMS: dict[str, Any] = {
    "describe": {
        "protocols": ["sevro.extension.v1"],
        "engineCapabilities": ["sevro.host.exec"],
        "hostCapabilities": [],
    },
    "resolve": {
        "projectRoot": "file:///project",
        "selectors": {"caseIds": ["greets"]},
        "configuration": {},
        "host": {"id": "codex", "model": "m", "effort": "low", "capabilities": []},
    },
    "prepare": {
        "case": CASE,
        "host": {"id": "codex", "capabilities": ["sevro.codex.repository-invocation"]},
        "condition": "passive",
        "configuration": {"token": "secret"},
    },
    "evaluate": {
        "caseId": "greets",
        "execution": {"status": "failed", "errorCode": "sevro.host.timeout"},
        "observations": [
            {
                "id": "sevro.observation.final-message",
                "source": "codex",
                "completeness": "complete",
                "data": {"text": "hi"},
            }
        ],
        "builtinChecks": [{"id": "answer", "status": "unavailable", "evidenceRefs": []}],
        "artifacts": [{"id": "diff", "path": "file:///tmp/diff", "sha256": "a" * 64}],
        "extensionData": {},
        "selectedTaskVerdictPolicy": "acme.strict",
        "configuration": {},
    },
}
RESULTS: dict[str, Any] = {
    "describe": {
        "extension": {"id": "acme.skills", "version": "1"},
        "protocols": ["sevro.extension.v1"],
        "requiredCapabilities": [],
        "optionalCapabilities": ["sevro.codex.skill-reads"],
        "graders": ["acme.skills.selected"],
        "taskVerdictPolicies": [],
    },
    "resolve": {"cases": [CASE]},
    "prepare": {
        "artifacts": [
            {
                "id": "skill",
                "relativePath": ".agents/skills/x/SKILL.md",
                "sha256": "b" * 64,
                "contentBase64": "aGVsbG8=",
                "gitExclude": True,
                "executable": False,
            },
            {
                "id": "big",
                "relativePath": "data/big.bin",
                "sha256": "c" * 64,
                "sourceRef": "fixture-data",
            },
        ],
        "requestedInstrumentation": [{"id": "sevro.codex.skill-reads", "configuration": {}}],
        "extensionData": {"acme.prepared": {}},
        "fixtureSetup": {"command": ["/usr/bin/make", "setup"], "environment": {"MODE": "ci"}},
        "codexRepositorySkillInvocation": {"skillName": "x"},
    },
    "evaluate": {
        "checks": [
            {
                "id": "acme.skills.selected",
                "status": "passed",
                "evidenceRefs": ["sevro.observation.final-message"],
            }
        ],
        "metrics": [{"id": "acme.skills.reads", "value": None, "unit": "count"}],
        "domainOutcomes": [
            {"id": "acme.skills.outcome", "status": "failed", "evidenceRefs": [], "data": {}}
        ],
        "taskVerdictRecommendation": "not_assessed",
    },
}


def _request(method: str) -> dict[str, Any]:
    return {
        "protocol": METHOD_PROTOCOLS[method],
        "id": ID,
        "method": method,
        "params": copy.deepcopy(PARAMS[method]),
    }


def _response(method: str) -> dict[str, Any]:
    return {
        "protocol": METHOD_PROTOCOLS[method],
        "id": ID,
        "method": method,
        "result": copy.deepcopy(RESULTS[method]),
    }


def _valid(method: str, direction: str, document: Any) -> bool:
    return bool(validator(schema_name(method, direction), "sevro_extensions").is_valid(document))


def test_every_packaged_schema_is_a_valid_2020_12_schema_linked_from_docs() -> None:
    names = sorted(entry.name for entry in PACKAGED.iterdir() if entry.name.endswith(".json"))
    assert len(names) == 1 + 2 * len(METHOD_PROTOCOLS)
    for name in names:
        schema = json.loads(PACKAGED.joinpath(name).read_text("utf-8"))
        Draft202012Validator.check_schema(schema)
        assert schema["$id"] == f"urn:sevro:schema:{name.removesuffix('.schema.json')}"
        link = ROOT / "docs" / "schemas" / name
        assert link.is_symlink() and link.resolve() == Path(str(PACKAGED.joinpath(name)))


@pytest.mark.parametrize("method", sorted(METHOD_PROTOCOLS))
def test_well_formed_requests_and_responses_validate(method: str) -> None:
    assert _valid(method, "request", _request(method))
    assert _valid(method, "response", _response(method))
    error = {
        "protocol": METHOD_PROTOCOLS[method],
        "id": ID,
        "method": method,
        "error": {"code": "acme.not-ready", "message": "later"},
    }
    assert _valid(method, "response", error)


def _set(document: dict[str, Any], pointer: str, value: Any) -> dict[str, Any]:
    """A copy of ``document`` with ``pointer`` set to ``value`` (``...`` deletes it)."""
    changed = copy.deepcopy(document)
    *parents, last = pointer.strip("/").split("/")
    target: Any = changed
    for part in parents:
        target = target[int(part)] if isinstance(target, list) else target[part]
    if value is ...:
        del target[last]
    elif isinstance(target, list):
        target[int(last)] = value
    else:
        target[last] = value
    return changed


BROKEN_REQUESTS = [
    ("describe", "/protocol", "sevro.extension.v1"),
    ("describe", "/params/protocols", []),
    ("describe", "/params/engineCapabilities", ["Not.Namespaced"]),
    ("describe", "/params/extra", 1),
    ("resolve", "/params/projectRoot", "/project"),
    ("resolve", "/params/selectors/caseIds", ["a", "a"]),
    ("resolve", "/params/configuration", ...),
    ("prepare", "/params/condition", "sometimes"),
    ("prepare", "/params/case/extensionData", {"NotNamespaced": 1}),
    ("evaluate", "/params/execution/status", "done"),
    ("evaluate", "/params/observations/0/completeness", "mostly"),
    ("evaluate", "/params/artifacts/0/sha256", "A" * 64),
    ("evaluate", "/id", ""),
    ("evaluate", "/method", "prepare"),
]


@pytest.mark.parametrize(("method", "pointer", "value"), BROKEN_REQUESTS)
def test_broken_requests_are_refused(method: str, pointer: str, value: Any) -> None:
    assert not _valid(method, "request", _set(_request(method), pointer, value))


BROKEN_RESPONSES = [
    ("describe", "/protocol", "sevro.extension.v1"),
    ("describe", "/result/extension/version", "v" * 129),
    ("describe", "/result/protocols", ["sevro.extension.v0"]),
    ("describe", "/result/graders", ["acme.x", "acme.x"]),
    ("describe", "/result/taskVerdictPolicies", ...),
    ("resolve", "/result/cases/0/prompt", ""),
    ("resolve", "/result/cases/0/checks/0/grader", "answer"),
    ("prepare", "/result/artifacts/0/contentBase64", "aGVsbG8"),
    ("prepare", "/result/artifacts/1/contentBase64", "aGVsbG8="),
    ("prepare", "/result/artifacts/1/sourceRef", ...),
    ("prepare", "/result/fixtureSetup/command", []),
    ("prepare", "/result/fixtureSetup/environment", {"PATH": "/evil"}),
    ("prepare", "/result/fixtureSetup/environment", {"lower": "x"}),
    ("prepare", "/result/codexRepositorySkillInvocation/skillName", ".."),
    (
        "prepare",
        "/result/codexMarketplace",
        {"artifactRoot": "m", "marketplaceName": "Bad", "pluginNames": ["p"]},
    ),
    ("evaluate", "/result/checks/0/evidenceRefs", []),
    ("evaluate", "/result/checks/0/detail", "d" * 4097),
    ("evaluate", "/result/checks/0/id", "selected"),
    ("evaluate", "/result/metrics/0/value", "7"),
    ("evaluate", "/result/domainOutcomes/0/status", "passed"),
    ("evaluate", "/result/taskVerdictRecommendation", "pass"),
    ("evaluate", "/result/score", 1),
]


@pytest.mark.parametrize(("method", "pointer", "value"), BROKEN_RESPONSES)
def test_broken_responses_are_refused(method: str, pointer: str, value: Any) -> None:
    assert not _valid(method, "response", _set(_response(method), pointer, value))


@pytest.mark.parametrize("method", sorted(METHOD_PROTOCOLS))
def test_a_response_needs_exactly_one_of_result_and_error(method: str) -> None:
    error = {"code": "acme.not-ready", "message": "later"}
    both = {**_response(method), "error": error}
    neither = {key: value for key, value in _response(method).items() if key != "result"}
    assert not _valid(method, "response", both)
    assert not _valid(method, "response", neither)
    assert not _valid(method, "response", {**neither, "error": {**error, "message": ""}})
    assert not _valid(method, "response", {**neither, "error": {**error, "message": "m" * 4097}})
