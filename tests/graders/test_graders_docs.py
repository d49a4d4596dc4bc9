"""docs/graders.md stays true: its examples (and expectations.md's) compile, it names every key,
grader and bound."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from sevro_core.formats.schemas import describe_first_error, validator
from sevro_graders import jsondoc, jsregex, plugin, shell_grader, verifier_grader
from sevro_judges import plugin as judges_plugin

DOC = Path(__file__).resolve().parents[2] / "docs" / "graders.md"
EXPECTATIONS = DOC.with_name("expectations.md")
JSON_BLOCK = re.compile(r"^```json\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def graders() -> dict[str, Any]:
    """The built-in graders documented here: sevro-graders' and sevro-judges' sevro.semantic."""
    found: list[Any] = []
    plugin.sevro_register_graders(found.append)
    judges_plugin.sevro_register_graders(found.append)
    return {grader.id: grader for grader in found}


def example_cases() -> list[dict[str, Any]]:
    texts = [doc.read_text("utf-8") for doc in (DOC, EXPECTATIONS)]
    blocks = [json.loads(body) for text in texts for body in JSON_BLOCK.findall(text)]
    return [block for block in blocks if isinstance(block, dict) and "checks" in block]


def test_there_is_an_example_for_every_grader() -> None:
    used = {check["grader"] for case in example_cases() for check in case["checks"]}
    assert used == set(graders())


@pytest.mark.parametrize("case", example_cases(), ids=lambda case: case["id"])
def test_examples_are_valid_cases_whose_checks_compile(case: dict[str, Any]) -> None:
    assert describe_first_error(validator("case.v1").iter_errors(case)) is None
    available = graders()
    for check in case["checks"]:
        available[check["grader"]].compile(check["configuration"])


@pytest.mark.parametrize(
    "name",
    ["regex", "json", "schema", "output", "shell", "verifier", "git-head", "skill-activation"],
)
def test_every_configuration_key_is_documented(name: str) -> None:
    text = DOC.read_text("utf-8")
    schema_file = resources.files("sevro_graders").joinpath("schemas", f"{name}.v1.schema.json")
    for key in json.loads(schema_file.read_text("utf-8"))["properties"]:
        assert f"| `{key}` |" in text, key


def test_bounds_are_documented_with_their_values() -> None:
    text = " ".join(DOC.read_text("utf-8").split())
    assert f"longer than {jsregex.MAX_PATTERN_LENGTH} characters (`MAX_PATTERN_LENGTH`)" in text
    assert f"deeper than {jsregex.MAX_GROUP_DEPTH} levels (`MAX_GROUP_DEPTH`)" in text
    assert f"deeper than {jsondoc.MAX_DOCUMENT_DEPTH} levels (`MAX_DOCUMENT_DEPTH`)" in text


def test_shell_bounds_match_the_schema_and_the_docs() -> None:
    text = " ".join(DOC.read_text("utf-8").split())
    schema = json.loads(
        resources.files("sevro_graders").joinpath("schemas", "shell.v1.schema.json").read_text()
    )["properties"]
    assert schema["run"]["maxLength"] == shell_grader.MAX_SHELL_RUN_CHARS
    assert schema["timeoutMs"]["maximum"] == shell_grader.MAX_SHELL_TIMEOUT_MS
    assert f"at most {shell_grader.MAX_SHELL_RUN_CHARS} characters" in text
    assert f"integer 1\N{EN DASH}{shell_grader.MAX_SHELL_TIMEOUT_MS}" in text
    assert f"(default {shell_grader.DEFAULT_SHELL_TIMEOUT_MS})" in text
    assert f"at most {shell_grader.MAX_SHELL_STDOUT_BYTES} bytes (`MAX_SHELL_STDOUT_BYTES`)" in text


def test_verifier_bounds_match_the_schema_and_the_docs() -> None:
    text = " ".join(DOC.read_text("utf-8").split())
    schema = json.loads(
        resources.files("sevro_graders").joinpath("schemas", "verifier.v1.schema.json").read_text()
    )["properties"]
    assert schema["timeoutMs"]["maximum"] == verifier_grader.MAX_VERIFIER_TIMEOUT_MS
    assert schema["critical"]["maxItems"] == verifier_grader.MAX_VERIFIER_ASSERTIONS
    assert f"integer 1\N{EN DASH}{verifier_grader.MAX_VERIFIER_TIMEOUT_MS}" in text
    assert f"(default {verifier_grader.DEFAULT_VERIFIER_TIMEOUT_MS})" in text
    stdout = verifier_grader.MAX_VERIFIER_STDOUT_BYTES
    assert f"at most {stdout} bytes (`MAX_VERIFIER_STDOUT_BYTES`)" in text
    assert f"at most {verifier_grader.MAX_VERIFIER_ASSERTIONS} assertions" in text
    assert f"cut to {verifier_grader.MAX_ASSERTION_DETAIL_CHARS} characters" in text
