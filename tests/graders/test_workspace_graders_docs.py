"""docs/expectations.md names every key and the bound of the workspace graders."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

from sevro_core import limits

DOC = Path(__file__).resolve().parents[2] / "docs" / "expectations.md"


@pytest.mark.parametrize("name", ["path", "file-text", "json-file", "resource-read"])
def test_every_configuration_key_and_value_is_documented(name: str) -> None:
    text = DOC.read_text("utf-8")
    assert f"## sevro.{name}\n" in text
    schema_file = resources.files("sevro_graders").joinpath("schemas", f"{name}.v1.schema.json")
    properties = json.loads(schema_file.read_text("utf-8"))["properties"]
    for key, spec in properties.items():
        assert f"| `{key}` |" in text, key
        for value in spec.get("enum", ()):
            assert f'"{value}"' in text, (key, value)


def test_the_file_bound_is_documented_with_its_value() -> None:
    text = DOC.read_text("utf-8")
    assert limits.MAX_CHECKED_FILE_BYTES == 8 * 1024 * 1024
    assert "`MAX_CHECKED_FILE_BYTES` (8 MiB" in text
    assert f"larger than {limits.MAX_CHECKED_FILE_BYTES} bytes" in text
