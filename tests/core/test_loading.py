from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sevro_core.errors import InvocationError
from sevro_core.run.loading import load_cases

BASE: dict[str, Any] = {
    "id": "c1",
    "prompt": "Do it.",
    "fixture": {"files": {}},
    "checks": [],
    "requiredEvidence": [],
}


def write(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value))
    return path


def refusal(paths: list[Path]) -> InvocationError:
    with pytest.raises(InvocationError) as info:
        load_cases(paths)
    return info.value


def test_single_array_and_directory(tmp_path: Path) -> None:
    one = write(tmp_path / "one.json", BASE)
    many = write(
        tmp_path / "many.json", [dict(BASE, id="a"), dict(BASE, id="b", followUpPrompt="More.")]
    )
    folder = tmp_path / "dir"
    folder.mkdir()
    write(folder / "2.json", dict(BASE, id="z"))
    write(folder / "1.json", dict(BASE, id="y"))
    (folder / "notes.txt").write_text("ignored")
    cases = load_cases([one, many, folder])
    assert [c.id for c in cases] == ["c1", "a", "b", "y", "z"]
    assert cases[2].follow_up_prompt == "More."
    assert cases[1].pointer == "/0" and cases[2].pointer == "/1"
    assert cases[3].source.endswith("1.json")


@pytest.mark.parametrize(
    ("change", "pointer", "fragment"),
    [
        ({"extra": 1}, "/extra", "unknown key 'extra'"),
        ({"prompt": "   "}, "/prompt", "does not match"),
        ({"prompt": ""}, "/prompt", ""),
        ({"id": "../x"}, "/id", "does not match"),
        ({"id": "x" * 129}, "/id", "longer than 128"),
        ({"checks": [{"id": "a", "grader": "Bad", "configuration": {}}]}, "/checks/0/grader", ""),
        (
            {"checks": [{"id": "a", "grader": "sevro.regex"}]},
            "/checks/0",
            "'configuration' is required",
        ),
        (
            {"checks": [{"id": "a", "grader": "sevro.regex", "configuration": {}, "x": 1}]},
            "/checks/0/x",
            "unknown key",
        ),
        (
            {
                "checks": [
                    {"id": "a", "grader": "sevro.regex", "configuration": {}},
                    {"id": "a", "grader": "sevro.regex", "configuration": {}},
                ]
            },
            "/checks/1/id",
            "duplicate check id 'a'",
        ),
        ({"requiredEvidence": ["sevro.commands", "sevro.commands"]}, "/requiredEvidence", ""),
        ({"requiredEvidence": ["NotNamespaced"]}, "/requiredEvidence/0", ""),
        ({"fixture": []}, "/fixture", "type object"),
        ({"followUpPrompt": 3}, "/followUpPrompt", "type string"),
    ],
)
def test_invalid_cases_name_file_and_pointer(
    tmp_path: Path, change: dict[str, Any], pointer: str, fragment: str
) -> None:
    path = write(tmp_path / "bad.json", [BASE | {"id": "ok"}, BASE | change])
    error = refusal([path])
    assert error.source == str(path)
    assert error.pointer == "/1" + pointer
    assert fragment in error.message
    assert "\n" not in error.one_line()


def test_missing_required_keys(tmp_path: Path) -> None:
    case = dict(BASE)
    del case["requiredEvidence"]
    error = refusal([write(tmp_path / "c.json", case)])
    assert error.pointer == "" and "'requiredEvidence' is required" in error.message


def test_duplicate_case_ids_across_files(tmp_path: Path) -> None:
    a = write(tmp_path / "a.json", BASE)
    b = write(tmp_path / "b.json", BASE)
    error = refusal([a, b])
    assert error.source == str(b) and error.pointer == "/id"
    assert f"first defined at {a}" in error.message


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("[]", "case array is empty"),
        ("3", "one case object or an array"),
        ("[3]", "a case must be a JSON object"),
    ],
)
def test_document_shapes(tmp_path: Path, content: str, fragment: str) -> None:
    path = tmp_path / "c.json"
    path.write_text(content)
    assert fragment in refusal([path]).message


def test_directory_rules(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "no *.json" in refusal([empty]).message
    assert "does not exist" in refusal([tmp_path / "missing.json"]).message
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "a.json").symlink_to(write(tmp_path / "target.json", BASE))
    assert "must not be symlinks" in refusal([linked]).message
    assert "no case file" in refusal([]).message


def test_prompt_byte_bound(tmp_path: Path) -> None:
    big = write(tmp_path / "c.json", BASE | {"prompt": "é" * 600_000})
    error = refusal([big])
    assert error.pointer == "/prompt" and "bytes" in error.message
