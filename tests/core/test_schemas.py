from __future__ import annotations

import json
from importlib import resources

import pytest
from jsonschema import Draft202012Validator

PACKAGES = ("sevro_core", "sevro_graders")


@pytest.mark.parametrize("package", PACKAGES)
def test_published_schemas_are_valid_draft_2020_12(package: str) -> None:
    folder = resources.files(package).joinpath("schemas")
    names = [e.name for e in folder.iterdir() if e.name.endswith(".schema.json")]
    assert names
    for name in names:
        schema = json.loads(folder.joinpath(name).read_text("utf-8"))
        Draft202012Validator.check_schema(schema)
        assert schema["$id"] == f"urn:sevro:schema:{name.removesuffix('.schema.json')}"


def test_schema_bounds_are_the_named_limits() -> None:
    from sevro_core import limits
    from sevro_core.formats.schemas import load_schema

    case = load_schema("case.v1")
    assert case["properties"]["checks"]["maxItems"] == limits.MAX_CHECKS_PER_CASE
    assert case["properties"]["requiredEvidence"]["maxItems"] == limits.MAX_REQUIRED_EVIDENCE
    assert case["$defs"]["localId"]["maxLength"] == limits.MAX_CASE_ID_LENGTH
    assert case["$defs"]["prompt"]["maxLength"] == limits.MAX_PROMPT_BYTES
    inline = load_schema("fixture-inline.v1")
    files = inline["properties"]["files"]
    assert files["maxProperties"] == limits.MAX_FIXTURE_FILES
    assert files["propertyNames"]["maxLength"] == limits.MAX_FIXTURE_PATH_LENGTH
    host = load_schema("scripted-host.v1")
    assert host["$defs"]["turn"]["maxItems"] == limits.MAX_SCRIPTED_STEPS_PER_TURN
    steps = host["$defs"]["step"]["properties"]
    assert steps["sleep"]["properties"]["ms"]["maximum"] == limits.MAX_SCRIPTED_SLEEP_MS
    assert (
        steps["run"]["properties"]["timeoutMs"]["maximum"] == limits.MAX_SCRIPTED_COMMAND_TIMEOUT_MS
    )
    assert steps["reply"]["properties"]["text"]["maxLength"] == limits.MAX_FINAL_MESSAGE_BYTES


def test_trial_evidence_bounds_hold_host_and_fixture_evidence() -> None:
    from sevro_core import limits
    from sevro_core.formats.schemas import load_schema

    evidence = load_schema("trial-evidence.v1")["$defs"]["evidence"]["properties"]
    assert evidence["observations"]["maxItems"] == (
        1
        + limits.MAX_OBSERVATIONS
        + limits.MAX_FIXTURE_OBSERVATIONS
        + limits.MAX_OBSERVATIONS_PER_CHECK * limits.MAX_CHECKS_PER_CASE
    )
    assert evidence["artifactRefs"]["maxItems"] == (
        limits.MAX_ARTIFACTS + limits.MAX_FIXTURE_ARTIFACTS + 2 * limits.MAX_JUDGE_CALLS_PER_TRIAL
    )
    for name in ("fixture-generated.v1", "fixture-repository.v1"):
        assert load_schema(name)["$id"] == f"urn:sevro:schema:{name}"
    generated = load_schema("fixture-generated.v1")
    assert generated["properties"]["commits"]["maxItems"] == limits.MAX_GENERATED_COMMITS
    defs = generated["$defs"]
    assert defs["commit"]["properties"]["message"]["maxLength"] == limits.MAX_COMMIT_MESSAGE_BYTES
    assert defs["files"]["maxProperties"] == limits.MAX_GIT_FIXTURE_FILES
    assert defs["files"]["propertyNames"]["maxLength"] == limits.MAX_FIXTURE_PATH_LENGTH
    assert defs["bin"]["maxProperties"] == limits.MAX_FIXTURE_TOOLS
    assert defs["hooks"]["maxProperties"] == limits.MAX_FIXTURE_HOOKS
    for kind in ("bin", "hooks"):
        names = defs[kind]["propertyNames"]
        assert names["maxLength"] == limits.MAX_FIXTURE_TOOL_NAME_LENGTH
