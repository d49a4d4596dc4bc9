"""Experiment files: strict loading, one line with file and JSON pointer per bad file."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from sevro_core.errors import InvocationError
from sevro_core.experiments.bundles import SKILL_NAME_PATTERN
from sevro_core.experiments.loading import (
    MAX_EXPERIMENT_FILE_BYTES,
    Arm,
    Comparison,
    Experiment,
    InlineCase,
    load_experiment,
)
from sevro_core.experiments.sources import DirectorySource, GitSource, NoSource
from sevro_core.formats.schemas import load_schema
from sevro_core.limits import MAX_CASES_PER_RUN, MAX_SKILL_NAME_LENGTH, MAX_TRIALS

ROOT = Path(__file__).resolve().parents[2]
CASE = {
    "id": "basic-graded",
    "prompt": "Return ready.",
    "fixture": {"files": {"README.md": "fixture\n"}},
    "checks": [{"id": "ready", "grader": "sevro.regex", "configuration": {"pattern": "^ready$"}}],
    "requiredEvidence": [],
}


def minimal() -> dict[str, Any]:
    return {
        "format": "sevro.experiment.v1",
        "arms": {
            "baseline": {"skills": [], "target": None, "context": []},
            "candidate": {"skills": ["skill"], "target": "release-notes", "context": []},
        },
        "cases": ["cases"],
    }


def write(tmp_path: Path, document: Any) -> Path:
    (tmp_path / "cases").mkdir(exist_ok=True)
    (tmp_path / "cases" / "one.json").write_text(json.dumps(CASE))
    path = tmp_path / "experiment.json"
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    return path


def tree(root: Path) -> list[tuple[str, int]]:
    """Every entry under ``root`` with its modification time: proof nothing was written."""
    return sorted((str(p.relative_to(root)), p.lstat().st_mtime_ns) for p in root.rglob("*"))


def refusal(tmp_path: Path, document: Any) -> InvocationError:
    path = write(tmp_path, document)
    before = tree(tmp_path)
    with pytest.raises(InvocationError) as caught:
        load_experiment(path)
    assert tree(tmp_path) == before, "loading a refused file wrote something"
    error = caught.value
    assert error.exit_code == 64
    assert "\n" not in error.one_line()
    assert error.source == str(path)
    return error


def test_minimal_file_yields_typed_values_and_defaults(tmp_path: Path) -> None:
    path = write(tmp_path, minimal())
    experiment = load_experiment(path)
    assert experiment == Experiment(
        source=path,
        arms=(
            Arm("baseline", (), None, ()),
            Arm("candidate", (DirectorySource(tmp_path.resolve() / "skill"),), "release-notes", ()),
        ),
        cases=((tmp_path / "cases").resolve(),),
        repetitions=5,
        comparisons=(Comparison("baseline", "candidate"),),
    )


def test_full_file(tmp_path: Path) -> None:
    document = minimal()
    document["arms"]["other-arm"] = {
        "skills": ["git:main:skills/x", "none"],
        "target": "x",
        "context": ["docs/AGENTS.md", "none"],
        "host": "sevro.codex",
        "model": "gpt-5-codex",
        "effort": "high",
    }
    document["cases"] = ["cases/one.json", "./cases/../cases", CASE]
    document["repetitions"] = MAX_TRIALS
    document["comparisons"] = [
        {"control": "baseline", "treatment": "candidate"},
        {"control": "baseline", "treatment": "other-arm"},
        {"control": "candidate", "treatment": "baseline"},
    ]
    experiment = load_experiment(write(tmp_path, document))
    other = experiment.arm("other-arm")
    assert other.skills == (GitSource(tmp_path.resolve(), "main", "skills/x"), NoSource())
    assert other.context == (DirectorySource(tmp_path.resolve() / "docs/AGENTS.md"), NoSource())
    assert (other.host, other.model, other.effort) == ("sevro.codex", "gpt-5-codex", "high")
    cases = (tmp_path / "cases").resolve()
    assert experiment.cases == (cases / "one.json", cases, InlineCase(CASE, "/cases/2"))
    assert experiment.repetitions == MAX_TRIALS
    assert [(c.control, c.treatment) for c in experiment.comparisons] == [
        ("baseline", "candidate"),
        ("baseline", "other-arm"),
        ("candidate", "baseline"),
    ]


def test_schema_bounds_follow_the_limits() -> None:
    schema = load_schema("experiment.v1")
    assert schema["properties"]["repetitions"]["maximum"] == MAX_TRIALS
    assert schema["$defs"]["arm"]["properties"]["target"]["pattern"] == SKILL_NAME_PATTERN
    assert schema["$defs"]["slug"]["pattern"] == SKILL_NAME_PATTERN
    assert schema["$defs"]["slug"]["maxLength"] == MAX_SKILL_NAME_LENGTH
    assert schema["properties"]["cases"]["maxItems"] == MAX_CASES_PER_RUN


def edit(change: Any) -> dict[str, Any]:
    document = minimal()
    change(document)
    return document


def _set(path: str, value: Any) -> Any:
    def change(document: dict[str, Any]) -> None:
        *parents, last = path.split("/")
        target = document
        for part in parents:
            target = target[int(part) if part.isdigit() else part]
        if value is _DELETE:
            del target[last]
        else:
            target[last] = value

    return change


_DELETE = object()

BAD: list[tuple[str, Any, str, str]] = [
    ("unknown top-level key", edit(_set("arm", {})), "/arm", "unknown key 'arm'"),
    (
        "unknown arm key",
        edit(_set("arms/baseline/skill", [])),
        "/arms/baseline/skill",
        "unknown key 'skill'",
    ),
    ("missing arms", edit(_set("arms", _DELETE)), "", "'arms' is required"),
    ("wrong format", edit(_set("format", "sevro.experiment.v2")), "/format", "was expected"),
    (
        "one arm",
        edit(_set("arms", {"baseline": {"skills": [], "target": None, "context": []}})),
        "/arms",
        "an experiment compares at least 2 arms, found 1",
    ),
    (
        "bad arm id",
        edit(_set("arms/Candidate", {"skills": [], "target": None, "context": []})),
        "/arms/Candidate",
        "arm id 'Candidate' must be",
    ),
    (
        "unknown comparison arm",
        edit(_set("comparisons", [{"control": "baseline", "treatment": "candidat"}])),
        "/comparisons/0/treatment",
        "no arm 'candidat' (arms: baseline, candidate)",
    ),
    (
        "control is treatment",
        edit(_set("comparisons", [{"control": "baseline", "treatment": "baseline"}])),
        "/comparisons/0/treatment",
        "an arm cannot be compared with itself",
    ),
    (
        "duplicate comparison",
        edit(_set("comparisons", [{"control": "baseline", "treatment": "candidate"}] * 2)),
        "/comparisons/1",
        "duplicate comparison (also /comparisons/0)",
    ),
    (
        "no default comparison",
        edit(
            _set(
                "arms",
                {
                    "a": {"skills": [], "target": None, "context": []},
                    "b": {"skills": [], "target": None, "context": []},
                },
            )
        ),
        "",
        "comparisons is required unless arms 'baseline' and 'candidate' both exist",
    ),
    ("repetitions 0", edit(_set("repetitions", 0)), "/repetitions", "less than the minimum"),
    (
        "repetitions too large",
        edit(_set("repetitions", MAX_TRIALS + 1)),
        "/repetitions",
        "greater than the maximum",
    ),
    (
        "repetitions not an integer",
        edit(_set("repetitions", 2.5)),
        "/repetitions",
        "must be of type integer, not number",
    ),
    (
        "repetitions a string",
        edit(_set("repetitions", "5")),
        "/repetitions",
        "must be of type integer, not string",
    ),
    (
        "bad git source",
        edit(_set("arms/candidate/skills", ["git:-rf:skills"])),
        "/arms/candidate/skills/0",
        "names no valid Git ref",
    ),
    (
        "git source without a path",
        edit(_set("arms/candidate/context", ["git:main"])),
        "/arms/candidate/context/0",
        "must be git:<ref>:<path>",
    ),
    (
        "target without skills",
        edit(_set("arms/baseline/target", "release-notes")),
        "/arms/baseline/target",
        "target must be null",
    ),
    (
        "target not a skill name",
        edit(_set("arms/candidate/target", "Release Notes")),
        "/arms/candidate/target",
        "does not match",
    ),
    (
        "missing case path",
        edit(_set("cases", ["cases", "missing.json"])),
        "/cases/1",
        "case path 'missing.json' does not exist",
    ),
    (
        "bad inline case",
        edit(_set("cases", [{**CASE, "checks": "none"}])),
        "/cases/0/checks",
        "must be of type array, not string",
    ),
    (
        "case path with a NUL byte",
        edit(_set("cases", ["cases", "a\x00b"])),
        "/cases/1",
        "case path contains a NUL byte",
    ),
    (
        "case path to a device",
        edit(_set("cases", ["/dev/null"])),
        "/cases/0",
        "case path '/dev/null' is neither a regular file nor a directory",
    ),
    (
        "source with a NUL byte",
        edit(_set("arms/candidate/context", ["none", "a\x00b"])),
        "/arms/candidate/context/1",
        "source contains a NUL byte",
    ),
    ("no cases", edit(_set("cases", [])), "/cases", "should be non-empty"),
    (
        "bad comparison key",
        edit(_set("comparisons", [{"control": "baseline", "treatment": "candidate", "x": 1}])),
        "/comparisons/0/x",
        "unknown key 'x'",
    ),
]


@pytest.mark.parametrize(
    ("document", "pointer", "message"),
    [pytest.param(d, p, m, id=name) for name, d, p, m in BAD],
)
def test_bad_file_is_refused_with_pointer(
    tmp_path: Path, document: dict[str, Any], pointer: str, message: str
) -> None:
    error = refusal(tmp_path, document)
    assert error.pointer == pointer, error.one_line()
    assert message in error.message, error.one_line()


def test_not_json(tmp_path: Path) -> None:
    error = refusal(tmp_path, '{"format": "sevro.experiment.v1",')
    assert "JSON" in error.one_line() or "json" in error.one_line()


def test_not_an_object(tmp_path: Path) -> None:
    error = refusal(tmp_path, "[]")
    assert error.message == "an experiment file holds one JSON object"


def test_duplicate_json_key(tmp_path: Path) -> None:
    text = json.dumps(minimal())[:-1] + ', "repetitions": 2, "repetitions": 3}'
    error = refusal(tmp_path, text)
    assert error.pointer == "/repetitions"
    assert "duplicate key 'repetitions'" in error.message


def test_oversized_file(tmp_path: Path) -> None:
    text = json.dumps(minimal())[:-1] + ', "x": "' + "a" * MAX_EXPERIMENT_FILE_BYTES + '"}'
    error = refusal(tmp_path, text)
    assert str(MAX_EXPERIMENT_FILE_BYTES) in error.message or "MiB" in error.message


def test_documented_example_loads(tmp_path: Path) -> None:
    page = (ROOT / "docs" / "experiments.md").read_text()
    section = page.split("## Experiment files", 1)[1].split("\n## ", 1)[0]
    example = re.search(r"```json\n(.*?)```", section, re.DOTALL)
    assert example is not None
    (tmp_path / "cases").mkdir()
    experiment = load_experiment(write(tmp_path, example.group(1)))
    assert [arm.id for arm in experiment.arms] == ["baseline", "candidate"]
    assert experiment.arm("candidate").target == "release-notes"
    assert experiment.comparisons == (Comparison("baseline", "candidate"),)


def _places(value: Any, prefix: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    places = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            places += _places(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            places += _places(item, (*prefix, index))
    return places


def test_mutated_files_load_or_are_refused_in_one_line(tmp_path: Path) -> None:
    """Any value anywhere: the loader returns an experiment or one line, never a traceback."""
    import copy
    import random

    full = minimal()
    full["cases"] = ["cases", CASE]
    full["comparisons"] = [{"control": "baseline", "treatment": "candidate"}]
    full["arms"]["candidate"]["context"] = ["git:main:AGENTS.md"]
    values: list[Any] = [None, 0, -1, 1.5, "", "x", "git:", "git:a:", "none", [], {}, [1], True]
    places = _places(full)
    chance = random.Random(14)
    outcomes = {"loaded": 0, "refused": 0}
    for _ in range(200):
        document = copy.deepcopy(full)
        for _ in range(chance.randint(1, 3)):
            *parents, last = chance.choice(places)
            target: Any = document
            try:
                for part in parents:
                    target = target[part]
                target[last] = copy.deepcopy(chance.choice(values))
            except (KeyError, IndexError, TypeError):
                continue  # an earlier mutation removed this place
        path = write(tmp_path, document)
        try:
            load_experiment(path)
            outcomes["loaded"] += 1
        except InvocationError as error:
            assert "\n" not in error.one_line()
            outcomes["refused"] += 1
    assert outcomes["loaded"] > 0 and outcomes["refused"] > 0, outcomes
