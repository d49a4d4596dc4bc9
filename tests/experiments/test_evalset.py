"""skill-creator ``evals/evals.json``: recognised, loaded strictly with its input files, one case
per eval with a ``sevro.semantic`` check per expectation, run as the skill against ``none``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from sevro_core.errors import InvocationError
from sevro_core.experiments.evalset import eval_case, is_eval_set, load_eval_set, skill_root_of
from sevro_core.limits import (
    MAX_CHECKS_PER_CASE,
    MAX_EVAL_EXPECTATION_BYTES,
    MAX_EVAL_INPUT_FILE_BYTES,
    MAX_EVAL_SET_EVALS,
    MAX_PROMPT_BYTES,
)
from sevro_core.run.evalset import checked_eval_set, eval_set_file, load_eval_experiment
from sevro_core.run.loading import load_case

NAME = "changelog"
INPUT = "# Changelog\n\n## [Unreleased]\n"
GOOD: dict[str, Any] = {
    "skill_name": NAME,
    "evals": [
        {
            "id": 1,
            "prompt": "Record the timeout fix in CHANGELOG.md",
            "expected_output": "A line under Fixed.",
            "files": ["evals/files/CHANGELOG.md"],
            "expectations": ["The reply names the Fixed section", "The reply is short"],
        },
        {"id": 7, "prompt": "Start a changelog", "expectations": ["A changelog was created"]},
    ],
}


def make_skill(root: Path, document: Any = GOOD, name: str = NAME) -> Path:
    """A skill directory with SKILL.md, evals/evals.json and one input file; the evals file."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "SKILL.md").write_text(f"---\nname: {name}\ndescription: Log changes.\n---\nSteps.\n")
    files = root / "evals" / "files"
    files.mkdir(parents=True, exist_ok=True)
    (files / "CHANGELOG.md").write_text(INPUT)
    path = root / "evals" / "evals.json"
    path.write_text(json.dumps(document))
    return path


def load(path: Path, document: Any) -> Any:
    return load_eval_set(document, path, skill_root_of(path))


def refusal(path: Path, document: Any) -> str:
    with pytest.raises(InvocationError) as refused:
        load(path, document)
    line = refused.value.one_line()
    assert "\n" not in line
    return line


def test_each_eval_becomes_a_case_with_its_files_and_one_semantic_check_per_expectation(
    tmp_path: Path,
) -> None:
    path = make_skill(tmp_path / NAME)
    first, second = load(path, GOOD).evals
    assert (first.case_id, second.case_id) == ("eval-1", "eval-7")
    assert first.expected_output == "A line under Fixed." and second.expected_output is None
    case = load_case(eval_case(first), source=path, pointer=first.pointer)
    assert case.id == "eval-1" and case.prompt == GOOD["evals"][0]["prompt"]
    assert case.fixture == {"files": {"CHANGELOG.md": INPUT}}
    assert [(c.id, c.grader, c.configuration) for c in case.checks] == [
        ("expectation-1", "sevro.semantic", {"proposition": "The reply names the Fixed section"}),
        ("expectation-2", "sevro.semantic", {"proposition": "The reply is short"}),
    ]
    assert case.required_evidence == ()
    other = load_case(eval_case(second), source=path, pointer=second.pointer)
    assert other.fixture == {"files": {}} and len(other.checks) == 1


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        (GOOD, True),
        ({"evals": []}, True),
        ({"skill_name": "x"}, True),
        ({"id": "a", "prompt": "x", "evals": []}, False),
        ({"format": "sevro.experiment.v1"}, False),
        ([{"query": "x", "should_trigger": True}], False),
    ],
)
def test_recognised_by_its_shape(document: Any, expected: bool) -> None:
    assert is_eval_set(document) is expected


def test_a_skill_directory_or_its_evals_file_is_recognised(tmp_path: Path) -> None:
    path = make_skill(tmp_path / NAME)
    assert eval_set_file([tmp_path / NAME]) == path
    assert eval_set_file([path]) == path
    assert eval_set_file([tmp_path]) is None  # no SKILL.md there
    assert eval_set_file([path, path]) is None
    (tmp_path / "case.json").write_text(json.dumps({"id": "a", "prompt": "x"}))
    assert eval_set_file([tmp_path / "case.json"]) is None


def one(**changes: Any) -> dict[str, Any]:
    item = {**GOOD["evals"][0], **changes}
    return {"skill_name": NAME, "evals": [{k: v for k, v in item.items() if v is not None}]}


BAD: list[tuple[Any, str]] = [
    ([GOOD], "a skill-creator eval set is a JSON object"),
    ({**GOOD, "version": 2}, "#/version: unknown key 'version'"),
    ({"evals": GOOD["evals"]}, "#/skill_name: skill_name must be the skill's name"),
    ({**GOOD, "skill_name": " "}, "#/skill_name: skill_name must be the skill's name"),
    ({**GOOD, "evals": []}, "#/evals: evals must be a non-empty array"),
    ({**GOOD, "evals": {}}, "#/evals: evals must be a non-empty array"),
    (
        {**GOOD, "evals": [GOOD["evals"][1]] * (MAX_EVAL_SET_EVALS + 1)},
        f"#/evals: more than {MAX_EVAL_SET_EVALS} evals in one set",
    ),
    ({**GOOD, "evals": ["x"]}, '#/evals/0: an eval is an object {"id", "prompt"'),
    (one(name="x"), "#/evals/0/name: unknown key 'name' (an eval has id, prompt"),
    (one(assertions=["x"]), "#/evals/0/assertions: 'assertions' is called 'expectations'"),
    (one(id=None), "#/evals/0: missing 'id'"),
    (one(prompt=None), "#/evals/0: missing 'prompt'"),
    (one(expectations=None), "#/evals/0: missing 'expectations'"),
    (one(id="1"), "#/evals/0/id: id must be an integer"),
    (one(id=True), "#/evals/0/id: id must be an integer"),
    (one(id=-1), "#/evals/0/id: id must be an integer"),
    (one(id=1.5), "#/evals/0/id: id must be an integer"),
    (
        {**GOOD, "evals": [GOOD["evals"][0], {**GOOD["evals"][1], "id": 1}]},
        "#/evals/1/id: duplicate id 1 (also /evals/0)",
    ),
    (one(prompt="  "), "#/evals/0/prompt: prompt must be a non-blank string"),
    (one(prompt=3), "#/evals/0/prompt: prompt must be a non-blank string"),
    (
        one(prompt="x" * (MAX_PROMPT_BYTES + 1)),
        f"#/evals/0/prompt: prompt longer than {MAX_PROMPT_BYTES} bytes",
    ),
    (one(expected_output=["x"]), "#/evals/0/expected_output: expected_output must be a non-"),
    (one(expectations=[]), "#/evals/0/expectations: expectations must be a non-empty array"),
    (one(expectations="x"), "#/evals/0/expectations: expectations must be a non-empty array"),
    (one(expectations=["a", " "]), "#/evals/0/expectations/1: an expectation must be a non-"),
    (one(expectations=["a", 1]), "#/evals/0/expectations/1: an expectation must be a non-"),
    (
        one(expectations=["a", "b", "a"]),
        "#/evals/0/expectations/2: duplicate expectation (also /evals/0/expectations/0)",
    ),
    (
        one(expectations=["x" * (MAX_EVAL_EXPECTATION_BYTES + 1)]),
        f"#/evals/0/expectations/0: expectation longer than {MAX_EVAL_EXPECTATION_BYTES} bytes",
    ),
    (
        one(expectations=[f"e{i}" for i in range(MAX_CHECKS_PER_CASE + 1)]),
        f"#/evals/0/expectations: more than {MAX_CHECKS_PER_CASE} expectations",
    ),
    (one(files="evals/files/CHANGELOG.md"), "#/evals/0/files: files must be an array"),
    (one(files=[1]), "#/evals/0/files/0: an input file is a non-blank relative path"),
    (one(files=["evals\\files\\x"]), "#/evals/0/files/0: an input file is a non-blank"),
    (one(files=["/etc/passwd"]), "#/evals/0/files/0: input file '/etc/passwd' must stay inside"),
    (one(files=["../outside.txt"]), "#/evals/0/files/0: input file '../outside.txt' must stay"),
    (
        one(files=["evals/../../outside.txt"]),
        "#/evals/0/files/0: input file 'evals/../../outside.txt' must stay inside",
    ),
    (one(files=["evals/files/missing.md"]), "#/evals/0/files/0: input file 'evals/files/missing"),
    (
        one(files=["evals/files/CHANGELOG.md", "evals/files/CHANGELOG.md"]),
        "#/evals/0/files/1: two input files named 'CHANGELOG.md' (also /evals/0/files/0)",
    ),
    (one(files=["evals/files"]), "#/evals/0/files/0: input file 'evals/files' is not a regular"),
    (
        one(files=["SKILL.md/x"]),
        "#/evals/0/files/0: input file 'SKILL.md/x': a parent is not a directory",
    ),
]


@pytest.mark.parametrize(("document", "message"), BAD)
def test_bad_sets_are_one_line_naming_the_file_and_pointer(
    tmp_path: Path, document: Any, message: str
) -> None:
    path = make_skill(tmp_path / NAME)
    line = refusal(path, document)
    assert line.startswith(f"{path}"), line
    assert message in line, line


def test_good_controls_for_the_refusals_load(tmp_path: Path) -> None:
    """The refusals above are for what they name: the nearest good values load."""
    path = make_skill(tmp_path / NAME)
    (tmp_path / NAME / "notes.txt").write_text("top-level input\n")
    documents = [
        one(id=0),
        one(expected_output=None),
        one(expected_output=""),  # skill-creator's drafts leave it empty
        one(files=None),
        one(files=[]),
        one(files=["./evals/files/CHANGELOG.md", "notes.txt"]),
        one(prompt="x" * MAX_PROMPT_BYTES),
        one(expectations=["x" * MAX_EVAL_EXPECTATION_BYTES]),
        one(expectations=[f"e{i}" for i in range(MAX_CHECKS_PER_CASE)]),
        {**GOOD, "evals": [{**GOOD["evals"][1], "id": i} for i in range(MAX_EVAL_SET_EVALS)]},
    ]
    for document in documents:
        assert load(path, document).evals


def test_input_files_through_symlinks_are_refused_even_inside_the_skill(tmp_path: Path) -> None:
    path = make_skill(tmp_path / NAME)
    outside = tmp_path / "secret.txt"
    outside.write_text("secret\n")
    files = tmp_path / NAME / "evals" / "files"
    os.symlink(outside, files / "out.txt")
    os.symlink(files / "CHANGELOG.md", files / "in.txt")
    os.symlink(files, tmp_path / NAME / "linked")
    for link in ("evals/files/out.txt", "evals/files/in.txt", "linked/CHANGELOG.md"):
        line = refusal(path, one(files=[link]))
        assert "symbolic link" in line, line
        assert "secret" not in line


def test_input_files_that_are_too_large_or_not_text_are_refused(tmp_path: Path) -> None:
    path = make_skill(tmp_path / NAME)
    files = tmp_path / NAME / "evals" / "files"
    (files / "big.txt").write_bytes(b"x" * (MAX_EVAL_INPUT_FILE_BYTES + 1))
    (files / "edge.txt").write_bytes(b"x" * MAX_EVAL_INPUT_FILE_BYTES)
    (files / "sample.pdf").write_bytes(b"%PDF-1.7\n\xff\xfe\x00")
    assert f"larger than {MAX_EVAL_INPUT_FILE_BYTES} bytes" in refusal(
        path, one(files=["evals/files/big.txt"])
    )
    assert "is not UTF-8 text" in refusal(path, one(files=["evals/files/sample.pdf"]))
    assert load(path, one(files=["evals/files/edge.txt"])).evals[0].files[0][0] == "edge.txt"


def test_an_evals_file_outside_a_skills_evals_directory_is_refused(tmp_path: Path) -> None:
    stray = tmp_path / "evals.json"
    stray.write_text(json.dumps(GOOD))
    with pytest.raises(InvocationError, match=r"SKILL_DIR/evals/evals\.json"):
        skill_root_of(stray)
    assert skill_root_of(make_skill(tmp_path / NAME)) == (tmp_path / NAME).absolute()


def test_skill_name_must_be_the_skills_own_name(tmp_path: Path) -> None:
    path = make_skill(tmp_path / NAME, name="release-notes")
    with pytest.raises(InvocationError) as refused:
        checked_eval_set(path)
    assert refused.value.one_line() == (
        f"{path}#/skill_name: skill_name 'changelog' is not the skill's name 'release-notes' "
        "(its SKILL.md)"
    )
    assert checked_eval_set(make_skill(tmp_path / "good")).skill_name == NAME


def flags(**given: Any) -> SimpleNamespace:
    values = {"skill": None, "baseline": None, "trials": None, "semantic_host": "scripted"}
    return SimpleNamespace(**{**values, **given})


def test_the_experiment_is_the_skill_without_its_evals_against_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = make_skill(tmp_path / NAME)
    design, cases = load_eval_experiment(path, flags(trials=2))
    assert [arm.id for arm in design.arms] == ["baseline", "candidate"]
    baseline, candidate = design.arms
    assert baseline.skills == () and baseline.target is None
    (skill,) = candidate.skills
    assert skill.bundle.name == NAME and candidate.target == NAME
    assert [f.path for f in skill.tree.files] == ["SKILL.md"]  # the answers are not mounted
    assert [(c.control, c.treatment) for c in design.comparisons] == [("baseline", "candidate")]
    assert design.repetitions == 2
    assert [c.id for c in cases] == ["eval-1", "eval-7"]
    assert [c.expected_output for c in cases] == ["A line under Fixed.", None]
    assert cases[0].source == str(path) and cases[0].pointer == "/evals/0"


def test_an_older_copy_can_be_the_baseline_and_never_mounts_its_evals_either(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = make_skill(tmp_path / NAME)
    old = tmp_path / "old"
    make_skill(old, {**GOOD, "evals": [GOOD["evals"][1]]})
    (old / "SKILL.md").write_text("---\nname: changelog\ndescription: Older.\n---\nOld.\n")
    design, _ = load_eval_experiment(path, flags(baseline=str(old)))
    baseline, _candidate = design.arms
    (skill,) = baseline.skills
    assert [f.path for f in skill.tree.files] == ["SKILL.md"] and baseline.target == NAME
    same = tmp_path / "same"
    make_skill(same, {**GOOD, "evals": [GOOD["evals"][1]]})  # differs only in its evals
    with pytest.raises(InvocationError, match="byte-identical"):
        load_eval_experiment(path, flags(baseline=str(same)))


def test_the_run_needs_a_semantic_judge_and_no_skill_flag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = make_skill(tmp_path / NAME)
    with pytest.raises(InvocationError) as refused:
        load_eval_experiment(path, flags(semantic_host=None))
    line = refused.value.one_line()
    assert "sevro.semantic" in line and "--semantic-host" in line, line
    with pytest.raises(InvocationError, match="--skill"):
        load_eval_experiment(path, flags(skill=[tmp_path / NAME]))


def test_the_case_identity_covers_the_input_files_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Input files are read at load time into the inline fixture, so an edit to one changes the
    fixture digest (and the case's identity); the expected output does not enter it."""
    from sevro_core.formats.canonical import hash_json

    monkeypatch.chdir(tmp_path)
    path = make_skill(tmp_path / NAME)

    def digests() -> list[str]:
        _, cases = load_eval_experiment(path, flags())
        return [hash_json(dict(c.fixture)) + hash_json(c.declaration()) for c in cases]

    before = digests()
    assert before == digests()
    (tmp_path / NAME / "evals" / "files" / "CHANGELOG.md").write_text(INPUT + "\n- x\n")
    after = digests()
    assert after[0] != before[0] and after[1] == before[1]
    changed = {**GOOD, "evals": [{**GOOD["evals"][0], "expected_output": "Else."}]}
    path.write_text(json.dumps(changed))
    assert digests()[0] == after[0]
