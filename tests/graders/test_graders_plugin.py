"""The plugin: four output graders, sevro.shell and sevro.git-head, registered through ``sevro``."""

from __future__ import annotations

import json
from importlib import metadata, resources
from typing import Any

import pluggy
import pytest
from jsonschema import Draft202012Validator

from sevro_core.plugin import hookspecs
from sevro_core.plugin.protocols import ID_PATTERN, Grader, Plugin
from sevro_graders import plugin

OUTPUT = ["sevro.regex", "sevro.json", "sevro.schema", "sevro.output"]
WORKSPACE = ["sevro.path", "sevro.file-text", "sevro.json-file"]
EVIDENCE = ["sevro.tool-call", "sevro.changed-paths"]
EXPECTED = [
    *OUTPUT,
    "sevro.shell",
    "sevro.git-head",
    "sevro.skill-activation",
    *WORKSPACE,
    *EVIDENCE,
    "sevro.response-text",
    "sevro.resource-read",
    "sevro.verifier",
    "sevro.context-text",
]
SCHEMAS = [
    *("regex", "json", "schema", "output", "shell", "git-head", "skill-activation"),
    *("path", "file-text", "json-file"),
    *("tool-call", "changed-paths"),
    "response-text",
    "resource-read",
    "verifier",
    "context-text",
]


def registered() -> list[Grader]:
    found: list[Grader] = []
    plugin.sevro_register_graders(found.append)
    return found


def registered_as(grader_id: str) -> Grader:
    return next(grader for grader in registered() if grader.id == grader_id)


def test_registers_the_four_output_graders_and_the_shell_grader() -> None:
    graders = registered()
    assert [g.id for g in graders] == EXPECTED
    for grader in graders[: len(OUTPUT) + 1]:
        assert isinstance(grader, Plugin)
        assert grader.version == "1.0.0"
        assert grader.capabilities == frozenset()
        assert callable(grader.compile)
        if grader.id in OUTPUT:
            assert grader.requires == frozenset({"sevro.observation.final-message"})
            assert grader.stage == 10
        else:
            assert grader.requires == frozenset({"sevro.sandbox"})
            assert grader.stage == 20


def test_git_head_needs_a_git_fixture_and_grades_at_stage_30() -> None:
    grader = registered_as("sevro.git-head")
    assert isinstance(grader, Plugin)
    assert (grader.id, grader.version, grader.stage) == ("sevro.git-head", "1.0.0", 30)
    assert grader.requires == frozenset({"sevro.fixture.git"})
    assert grader.capabilities == frozenset()


def test_skill_activation_needs_the_skills_observation() -> None:
    grader = registered_as("sevro.skill-activation")
    assert isinstance(grader, Plugin)
    assert (grader.id, grader.version, grader.stage) == ("sevro.skill-activation", "1.0.0", 10)
    assert grader.requires == frozenset({"sevro.skills"})
    assert grader.capabilities == frozenset()


@pytest.mark.parametrize("grader_id", WORKSPACE)
def test_workspace_graders_need_no_observation_and_grade_beside_shell(grader_id: str) -> None:
    grader = registered_as(grader_id)
    assert isinstance(grader, Plugin)
    assert (grader.version, grader.stage) == ("1.0.0", 20)
    assert grader.requires == frozenset()
    assert grader.capabilities == frozenset()


def test_tool_call_needs_the_tool_calls_observation() -> None:
    grader = registered_as("sevro.tool-call")
    assert isinstance(grader, Plugin)
    assert (grader.version, grader.stage) == ("1.0.0", 10)
    assert grader.requires == frozenset({"sevro.tool-calls"})


def test_resource_read_needs_the_file_reads_observation() -> None:
    grader = registered_as("sevro.resource-read")
    assert isinstance(grader, Plugin)
    assert (grader.version, grader.stage) == ("1.0.0", 10)
    assert grader.requires == frozenset({"sevro.file-reads"})


def test_ids_are_namespaced() -> None:
    import re

    assert all(re.match(ID_PATTERN, grader_id) for grader_id in EXPECTED)


def test_hook_runs_through_pluggy() -> None:
    manager = pluggy.PluginManager(hookspecs.PROJECT)
    manager.add_hookspecs(hookspecs)
    manager.register(plugin, name="sevro-graders:output_graders")
    found: list[Any] = []
    manager.hook.sevro_register_graders(register=found.append)
    assert [g.id for g in found] == EXPECTED


def test_entry_point_is_declared() -> None:
    points = metadata.entry_points(group="sevro", name="output_graders")
    assert [p.value for p in points] == ["sevro_graders.plugin"]


@pytest.mark.parametrize("name", SCHEMAS)
def test_configuration_schemas_ship_in_the_package(name: str) -> None:
    text = resources.files("sevro_graders").joinpath("schemas", f"{name}.v1.schema.json")
    schema = json.loads(text.read_text("utf-8"))
    Draft202012Validator.check_schema(schema)
    assert schema["$id"] == f"urn:sevro:schema:{name}.v1"
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert all("description" in prop for prop in schema["properties"].values())
