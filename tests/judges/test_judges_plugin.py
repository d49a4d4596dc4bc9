"""The sevro-judges distribution registers ``sevro.semantic`` through entry point ``judges`` and
ships its configuration schema."""

from __future__ import annotations

import json
from importlib import metadata, resources
from typing import Any

import pluggy
from jsonschema import Draft202012Validator

from sevro_core import limits
from sevro_core.plugin import hookspecs
from sevro_core.plugin.manager import load_plugins
from sevro_core.plugin.protocols import Plugin
from sevro_judges import plugin


def test_the_semantic_grader_registers_through_pluggy() -> None:
    manager = pluggy.PluginManager(hookspecs.PROJECT)
    manager.add_hookspecs(hookspecs)
    manager.register(plugin, name="sevro-judges:judges")
    found: list[Any] = []
    manager.hook.sevro_register_graders(register=found.append)
    assert [grader.id for grader in found] == ["sevro.semantic"]
    assert isinstance(found[0], Plugin)


def test_entry_point_is_declared() -> None:
    points = metadata.entry_points(group="sevro", name="judges")
    assert [p.value for p in points] == ["sevro_judges.plugin"]


def test_the_installed_registry_has_the_semantic_grader() -> None:
    registry = load_plugins(environ={})
    grader = registry.grader("sevro.semantic")
    assert grader is not None and grader.stage == 40


def test_the_configuration_schema_ships_in_the_package() -> None:
    text = resources.files("sevro_judges").joinpath("schemas", "semantic.v1.schema.json")
    schema = json.loads(text.read_text("utf-8"))
    Draft202012Validator.check_schema(schema)
    assert schema["$id"] == "urn:sevro:schema:semantic.v1"
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert set(schema["properties"]) == {"proposition", "artifactPath", "reference"}
    assert all("description" in prop for prop in schema["properties"].values())
    described = schema["properties"]["proposition"]["description"]
    assert f"at most {limits.MAX_SEMANTIC_PROPOSITION_BYTES} bytes" in described
    described = schema["properties"]["artifactPath"]["description"]
    assert f"at most {limits.MAX_SEMANTIC_ARTIFACT_BYTES} bytes" in described
