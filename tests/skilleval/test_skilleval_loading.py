"""skill-eval definitions: every seed example loads and maps; every bad file is one exit-64 line."""

from __future__ import annotations

import copy
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sevro_core.errors import InvocationError
from sevro_core.experiments.skilleval import load_definition
from sevro_core.experiments.skillevalmapping import Selection, SkillEvalRun, skilleval_run
from tests.skilleval import seed


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return seed.seed_repository(tmp_path_factory.mktemp("seed") / "repo").resolve()


def mapped(
    repo: Path, relative: str, selection: Selection | None = None, **kw: Any
) -> SkillEvalRun:
    definition = load_definition(repo / relative, repo)
    return skilleval_run(
        definition, selection or Selection(), kw.get("trials"), kw.get("route", False)
    )


def checks(run: SkillEvalRun, case: int = 0) -> dict[str, Any]:
    return {c["id"]: c for c in run.cases[case][0]["checks"]}


def test_description_group_maps_onto_two_arms_and_a_turn_scoped_read(repo: Path) -> None:
    run = mapped(repo, "groups/natural-activation.json")
    document = run.cases[0][0]
    assert document["id"] == "natural-activation"
    assert document["turns"] == seed.description_group()["input"]["turns"]
    assert "prompt" not in document
    assert document["fixture"] == {"files": {}}
    assert checks(run)["baseline-read-by-two"] == {
        "id": "baseline-read-by-two",
        "grader": "sevro.skill-activation",
        "configuration": {"expect": "read-by-turn", "skill": "target", "turn": 2},
        "arm": "baseline",
    }
    baseline, candidate = run.design.arms
    assert (baseline.id, candidate.id) == ("baseline", "candidate")
    assert (
        baseline.skills[0].tree.source.describe() == "git:before-description-change:skills/target"
    )
    assert baseline.skills[0].tree.revision is not None
    assert candidate.skills[0].bundle.description == seed.NEW_DESCRIPTION
    assert baseline.skills[0].bundle.description == seed.OLD_DESCRIPTION
    assert [(c.control, c.treatment) for c in run.design.comparisons] == [("baseline", "candidate")]
    origin = run.design.to_json()["skillEval"]
    assert origin["groups"][0]["comparisons"] == [
        {"id": "target-read-by-two", "baseline": "baseline-read-by-two",
         "candidate": "candidate-read-by-two"}
    ]  # fmt: skip


def test_body_group_maps_fixture_context_targets_and_turns(repo: Path) -> None:
    run = mapped(repo, "groups/body-behavior.json")
    document = run.cases[0][0]
    assert document["fixture"] == {"files": {"TASK.md": "Write result.json.\n"}}
    found = checks(run)
    assert found["baseline-result"] == {
        "id": "baseline-result",
        "grader": "sevro.path",
        "configuration": {"path": "result.json", "expect": "exists"},
        "arm": "baseline",
        "turn": 2,
    }
    assert found["candidate-status"]["grader"] == "sevro.json-file"
    assert found["candidate-status"]["configuration"] == {
        "path": "result.json", "expect": "equals", "pointer": "/status", "value": "complete"
    }  # fmt: skip
    assert found["candidate-changes"]["configuration"] == {"equal": ["result.json"]}
    for arm in run.design.arms:
        assert arm.target == "target"
        assert [s.bundle.name for s in arm.skills] == ["support", "target"]
        assert len(arm.context) == 1
    assert run.design.arms[0].skills[1].bundle.description == seed.OLD_DESCRIPTION
    assert "Revert the last release" in run.design.arms[0].skills[1].tree.files[0].data.decode()
    origin = run.design.to_json()["skillEval"]["groups"][0]
    assert origin["reviewQuestions"] == seed.body_group()["review_questions"]
    assert origin["tools"] == ["read", "write", "edit"]
    assert any("not enforced" in note for note in run.notes)


def test_common_group_model_becomes_the_arms_route_unless_given(repo: Path) -> None:
    run = mapped(repo, "groups/common.json")
    assert [(a.arm.model, a.arm.effort) for a in run.design.arms] == [
        ("openai-codex/gpt-5.6-sol", "low")
    ] * 2
    assert run.design.arms[0].skills == ()
    run = mapped(repo, "groups/common.json", route=True)
    assert [(a.arm.model, a.arm.effort) for a in run.design.arms] == [(None, None)] * 2


def test_json_states_example_maps_every_state(repo: Path, tmp_path: Path) -> None:
    group = seed.body_group()
    group["expectations"] = copy.deepcopy(seed.JSON_STATES)
    seed.write_json(repo / "groups" / "json-states.json", group)
    found = checks(mapped(repo, "groups/json-states.json"))
    assert found["file-missing"]["configuration"] == {"path": "missing.json", "expect": "missing"}
    assert found["file-malformed"]["configuration"]["expect"] == "malformed"
    assert found["field-absent"]["configuration"] == {
        "path": "result.json", "expect": "absent", "pointer": "/optional"
    }  # fmt: skip
    assert found["field-null"]["configuration"]["value"] is None


@pytest.mark.parametrize(
    ("expectation", "grader", "configuration"),
    [
        ({"kind": "skill-read", "expect": "never"}, "sevro.skill-activation",
         {"expect": "not-read", "skill": "target"}),
        ({"kind": "skill-read", "expect": "on-turn", "turn": 1}, "sevro.skill-activation",
         {"expect": "read-on-turn", "skill": "target", "turn": 1}),
        ({"kind": "skill-read", "expect": "not-before-turn", "turn": 2}, "sevro.skill-activation",
         {"expect": "not-before-turn", "skill": "target", "turn": 2}),
        ({"kind": "resource-read", "resource": "skill", "index": 0, "path": "SKILL.md",
          "expect": "read"}, "sevro.resource-read",
         {"resource": "skill", "skill": "support", "path": "SKILL.md", "expect": "read"}),
        ({"kind": "resource-read", "resource": "workspace", "path": "TASK.md",
          "expect": "not-read"}, "sevro.resource-read",
         {"resource": "workspace", "path": "TASK.md", "expect": "not-read"}),
        ({"kind": "changed-paths", "expect": "excludes", "paths": ["TASK.md"]},
         "sevro.changed-paths", {"exclude": ["TASK.md"]}),
        ({"kind": "file-text", "path": "a.md", "value": "x", "expect": "not-contains"},
         "sevro.file-text", {"path": "a.md", "notContains": "x"}),
        ({"kind": "file-text", "path": "a.md", "value": "", "expect": "equals"},
         "sevro.file-text", {"path": "a.md", "equals": ""}),
        ({"kind": "json", "path": "r.json", "expect": "available"}, "sevro.path",
         {"path": "r.json", "expect": "exists", "kind": "file"}),
        ({"kind": "json", "path": "r.json", "expect": "valid"}, "sevro.json-file",
         {"path": "r.json", "expect": "available"}),
        ({"kind": "json", "path": "r.json", "expect": "field-present", "pointer": ""},
         "sevro.json-file", {"path": "r.json", "expect": "present", "pointer": ""}),
        ({"kind": "response-text", "value": "done", "expect": "contains"},
         "sevro.response-text", {"contains": "done"}),
        ({"kind": "response-text", "value": "x", "expect": "not-contains", "turn": 1},
         "sevro.response-text", {"notContains": "x"}),
        ({"kind": "response-text", "value": "", "expect": "equals"},
         "sevro.response-text", {"equals": ""}),
        ({"kind": "tool-call", "tool": "Read", "expect": "called"}, "sevro.tool-call",
         {"tool": "Read", "expect": "made"}),
        ({"kind": "tool-call", "tool": "Bash", "expect": "not-called"}, "sevro.tool-call",
         {"tool": "Bash", "expect": "not-made"}),
        ({"kind": "tool-call", "tool": "Edit", "expect": "failed"}, "sevro.tool-call",
         {"tool": "Edit", "expect": "failed"}),
        ({"kind": "tool-call", "tool": "Bash", "expect": "called",
          "argumentContains": ["pytest", "-q"], "argumentNotContains": ["--lf"]},
         "sevro.tool-call", {"tool": "Bash", "expect": "made", "arguments": {
             "text": {"contains": ["pytest", "-q"], "notContains": ["--lf"]}}}),
        ({"kind": "tool-call", "tool": "Bash", "expect": "not-called",
          "argumentContains": ["rm -rf"]},
         "sevro.tool-call", {"tool": "Bash", "expect": "not-made", "arguments": {
             "text": {"contains": ["rm -rf"]}}}),
    ],
)  # fmt: skip
def test_every_kind_maps_onto_its_grader(
    repo: Path, expectation: dict[str, Any], grader: str, configuration: dict[str, Any]
) -> None:
    group = seed.body_group()
    group["expectations"] = [{"id": "e", "variant": "candidate", **expectation}]
    seed.write_json(repo / "groups" / "kind.json", group)
    check = checks(mapped(repo, "groups/kind.json"))["e"]
    assert (check["grader"], check["configuration"], check["arm"]) == (
        grader,
        configuration,
        "candidate",
    )
    assert ("turn" in check) == ("turn" in expectation and expectation["kind"] != "skill-read")


def test_suite_groups_with_different_variants_share_two_arms(repo: Path) -> None:
    """The seed's suite: each group's case mounts that group's variants (case overrides)."""
    run = mapped(repo, "suite.json")
    assert [d["id"] for d, _, _ in run.cases] == [
        "natural-activation",
        "retained-artifact-behavior",
    ]
    baseline, candidate = run.design.arms
    for arm in (baseline, candidate):
        assert [case for case, _ in arm.case_overrides] == [d["id"] for d, _, _ in run.cases]
        body = arm.for_case("retained-artifact-behavior")
        assert [s.bundle.name for s in body.skills] == ["support", "target"]
        assert len(body.context) == 1
        description = arm.for_case("natural-activation")
        assert [s.bundle.name for s in description.skills] == ["target"]
        assert description.context == ()
        assert arm.to_json()["cases"][1]["caseId"] == "retained-artifact-behavior"
    described = baseline.for_case("natural-activation").skills[0].tree.source.describe()
    assert described == "git:before-description-change:skills/target"
    assert baseline.fingerprint != candidate.fingerprint
    single = mapped(repo, "groups/body-behavior.json").design.arms[0]
    assert single.case_overrides == () and "cases" not in single.evaluated


def test_groups_with_different_models_need_a_selection(repo: Path) -> None:
    seed.write_json(repo / "groups" / "modelled.json", {**seed.body_group(), "id": "modelled",
                    "model": {"model": "m"}})  # fmt: skip
    seed.write_json(repo / "model-suite.json", {**seed.SUITE, "groups": [
        "groups/body-behavior.json", "groups/modelled.json"]})  # fmt: skip
    with pytest.raises(InvocationError, match="declare different models"):
        mapped(repo, "model-suite.json")
    assert len(mapped(repo, "model-suite.json", route=True).cases) == 2


def test_suite_selection_by_id_or_position(repo: Path) -> None:
    for selector in ("2", "retained-artifact-behavior"):
        run = mapped(repo, "suite.json", Selection(group=selector))
        assert [d["id"] for d, _, _ in run.cases] == ["retained-artifact-behavior"]
        assert run.design.arms[0].case_overrides == ()
        groups = run.design.to_json()["skillEval"]["groups"]
        assert [(g["id"], g["position"], g["status"]) for g in groups] == [
            ("natural-activation", 1, "not-selected"),
            ("retained-artifact-behavior", 2, "selected"),
        ]
        assert groups[0]["variants"] == {"baseline": "not-selected", "candidate": "not-selected"}


def test_suite_of_groups_sharing_variants_is_one_run(repo: Path) -> None:
    other = seed.body_group()
    other["id"] = "second-body"
    seed.write_json(repo / "groups" / "second.json", other)
    seed.write_json(
        repo / "shared-suite.json",
        {**seed.SUITE, "groups": ["groups/body-behavior.json", "groups/second.json"]},
    )
    run = mapped(repo, "shared-suite.json")
    assert [d["id"] for d, _, _ in run.cases] == ["retained-artifact-behavior", "second-body"]
    assert run.design.to_json()["skillEval"]["suite"] == "workflow-core"


def test_variant_selection_keeps_one_arm_and_its_checks(repo: Path) -> None:
    run = mapped(repo, "groups/body-behavior.json", Selection(variant="candidate"))
    assert [a.id for a in run.design.arms] == ["candidate"]
    assert run.design.comparisons == ()
    assert set(checks(run)) == {"candidate-result", "candidate-status", "candidate-changes"}
    group = run.design.to_json()["skillEval"]["groups"][0]
    assert group["variants"] == {"baseline": "not-selected", "candidate": "selected"}


@pytest.mark.parametrize(
    ("selection", "message"),
    [
        (Selection(group="3"), "the suite has groups 1 to 2"),
        (Selection(group="0"), "the suite has groups 1 to 2"),
        (Selection(group="nope"), "no such group"),
    ],
)
def test_bad_group_selection(repo: Path, selection: Selection, message: str) -> None:
    with pytest.raises(InvocationError, match=message):
        mapped(repo, "suite.json", selection)


def test_group_selection_on_a_direct_group_is_refused(repo: Path) -> None:
    with pytest.raises(InvocationError, match="direct group definition"):
        mapped(repo, "groups/body-behavior.json", Selection(group="1"))


# ---- bad definitions: one line naming the file and the pointer ----------------------------

Edit = Callable[[dict[str, Any]], None]


def _set(pointer: str, value: Any) -> Edit:
    def edit(document: dict[str, Any]) -> None:
        *parents, last = pointer.strip("/").split("/")
        node: Any = document
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return edit


def _drop(key: str) -> Edit:
    return lambda document: document.pop(key)


def _expectation(**fields: Any) -> Edit:
    def edit(document: dict[str, Any]) -> None:
        document["expectations"] = [{"id": "e", "variant": "candidate", **fields}]

    return edit


def _no_target_baseline(document: dict[str, Any]) -> None:
    document["variants"]["baseline"].update(skills=[], target=None)
    document["expectations"] = [
        {"id": "e", "variant": "baseline", "kind": "skill-read", "expect": "never"}
    ]


BAD: list[tuple[str, Edit, str, str]] = [
    ("version", _set("/schema_version", 2), "/schema_version", "schema_version must be 1"),
    ("version-bool", _set("/schema_version", True), "/schema_version", "schema_version"),
    ("unknown", _set("/extra", 1), "/extra", "unknown field 'extra'"),
    ("missing", _drop("tools"), "", "missing field 'tools'"),
    ("id-upper", _set("/id", "Bad"), "/id", "lowercase"),
    ("id-double-hyphen", _set("/id", "a--b"), "/id", "single"),
    ("id-trailing-hyphen", _set("/id", "a-"), "/id", "single"),
    ("id-long", _set("/id", "a" * 65), "/id", "at most 64"),
    ("type", _set("/type", "other"), "/type", "description or body"),
    ("both-inputs", _set("/input", {"prompt": "a", "turns": ["b"]}), "/input", "exactly one"),
    ("no-input", _set("/input", {}), "/input", "exactly one"),
    ("empty-turns", _set("/input", {"turns": []}), "/input/turns", "non-empty"),
    ("blank-turn", _set("/input", {"turns": ["a", " "]}), "/input/turns/1", "non-blank"),
    ("blank-prompt", _set("/input", {"prompt": ""}), "/input/prompt", "non-blank"),
    ("too-many-turns", _set("/input", {"turns": ["t"] * 65}), "/input/turns", "more than 64"),
    ("too-many-expectations", _set("/expectations", [{}] * 129), "/expectations",
     "at most 128"),
    ("fixture-absolute", _set("/fixture", "/etc"), "/fixture", "relative"),
    ("fixture-dotdot", _set("/fixture", "../x"), "/fixture", "relative"),
    ("fixture-missing", _set("/fixture", "fixtures/none"), "/fixture", "does not exist"),
    ("fixture-symlink-out", _set("/fixture", "escape"), "/fixture", "outside the definition root"),
    ("tools-dup", _set("/tools", ["read", "read"]), "/tools/1", "duplicate"),
    ("tools-native", _set("/tools", ["bash"]), "/tools/0", "native tool 'bash'"),
    ("tools-custom", _set("/tools", ["probe"]), "/tools/0",
     "needs a runtime that declares an extension bundle"),
    ("variants-extra", _set("/variants/third", {}), "/variants/third", "unknown field"),
    ("variant-key", _set("/variants/baseline/extra", 1), "/variants/baseline/extra", "unknown"),
    ("source", _set("/variants/baseline/source", {"kind": "svn"}), "/variants/baseline/source",
     "working-tree"),
    ("source-ref", _set("/variants/baseline/source", {"kind": "git", "ref": ""}),
     "/variants/baseline/source/ref", "non-blank ref"),
    ("target-null", _set("/variants/candidate/target", None), "/variants/candidate/target",
     "cannot be null"),
    ("target-range", _set("/variants/candidate/target", 2), "/variants/candidate/target",
     "zero-based index"),
    ("target-bool", _set("/variants/candidate/target", True), "/variants/candidate/target",
     "zero-based index"),
    ("skills-dup", _set("/variants/candidate/skills", ["skills/target", "skills/target"]),
     "/variants/candidate/skills/1", "duplicate"),
    ("skill-missing", _set("/variants/candidate/skills/0", "skills/none"),
     "/variants/candidate/skills/0", "does not exist"),
    ("context-out", _set("/variants/candidate/context/0", "../outside.md"),
     "/variants/candidate/context/0", "relative"),
    ("review", _set("/review_questions", [1]), "/review_questions/0", "string"),
    ("model", _set("/model", {"model": ""}), "/model/model", "provider/model"),
    ("runtime-piflow", _set("/runtime", {"host": "piflow"}), "/runtime/host",
     "sevro has no piflow host"),
    ("context-text-request", _expectation(kind="context-text", value="x", expect="contains",
                                          request=1),
     "/expectations/0/request", "provider-context request only"),
    ("argument-filter", _expectation(kind="tool-call", tool="Read", expect="called",
                                     argumentContains=["x", ""]),
     "/expectations/0/argumentContains", "argumentContains is a non-empty array"),
    ("argument-filter-type", _expectation(kind="tool-call", tool="Read", expect="called",
                                          argumentNotContains="x"),
     "/expectations/0/argumentNotContains", "argumentNotContains is a non-empty array"),
    ("kind", _expectation(kind="vibes", expect="x"), "/expectations/0/kind", "kind must be"),
    ("expect", _expectation(kind="path", path="a", expect="there"), "/expectations/0/expect",
     "exists, absent"),
    ("variant", _set("/expectations/0/variant", "both"), "/expectations/0/variant",
     "baseline or candidate"),
    ("dup-id", _set("/expectations/1/id", "baseline-result"), "/expectations/1/id",
     "duplicate expectation id"),
    ("turn-range", _set("/expectations/0/turn", 3), "/expectations/0/turn", "from 1 to 2"),
    ("turn-zero", _set("/expectations/0/turn", 0), "/expectations/0/turn", "from 1 to 2"),
    ("comparison-one", _set("/expectations/2/comparison", "lonely"),
     "/expectations/2/comparison", "exactly one baseline and one candidate"),
    ("comparison-same-variant", _set("/expectations/0/variant", "candidate"),
     "/expectations/1/comparison", "exactly one baseline and one candidate"),
    ("comparison-differs", _set("/expectations/1/path", "other.json"),
     "/expectations/1/comparison", "differ"),
    ("skill-read-never-turn", _expectation(kind="skill-read", expect="never", turn=1),
     "/expectations/0/turn", "never takes no turn"),
    ("skill-read-no-turn", _expectation(kind="skill-read", expect="by-turn"),
     "/expectations/0", "needs a turn"),
    ("json-pointer", _expectation(kind="json", path="r.json", expect="field-equals", value=1),
     "/expectations/0/pointer", "needs pointer"),
    ("json-value", _expectation(kind="json", path="r.json", expect="missing", value=1),
     "/expectations/0/value", "takes no value"),
    ("json-bad-pointer", _expectation(kind="json", path="r.json", expect="field-present",
                                      pointer="x"),
     "/expectations/0/pointer", "JSON Pointer"),
    ("json-bad-escape", _expectation(kind="json", path="r.json", expect="field-absent",
                                     pointer="/a~2b"),
     "/expectations/0/pointer", "escapes only 0 and 1"),
    ("skill-read-no-target", _no_target_baseline, "/expectations/0/variant",
     "target, which is null"),
    ("changed-glob", _expectation(kind="changed-paths", expect="equals", paths=["*.md"]),
     "/expectations/0/paths/0", "literally"),
    ("changed-empty", _expectation(kind="changed-paths", expect="equals", paths=[]),
     "/expectations/0/paths", "non-empty"),
    ("path-escape", _expectation(kind="path", path="../x", expect="exists"),
     "/expectations/0/path", "relative"),
    ("resource-index", _expectation(kind="resource-read", resource="skill", index=5,
                                    path="SKILL.md", expect="read"),
     "/expectations/0/index", "declared skill"),
    ("resource-workspace-index", _expectation(kind="resource-read", resource="workspace",
                                              index=0, path="a", expect="read"),
     "/expectations/0/index", "no index"),
    ("file-text-empty", _expectation(kind="file-text", path="a", value="", expect="contains"),
     "/expectations/0/value", "non-empty"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("edit", "pointer", "message"), [b[1:] for b in BAD], ids=[b[0] for b in BAD]
)
def test_bad_group_is_one_line_naming_file_and_pointer(
    repo: Path, edit: Edit, pointer: str, message: str
) -> None:
    (repo / "escape").unlink(missing_ok=True)
    (repo / "escape").symlink_to("/tmp")
    group = seed.body_group()
    edit(group)
    path = seed.write_json(repo / "groups" / "bad.json", group)
    with pytest.raises(InvocationError) as caught:
        mapped(repo, "groups/bad.json")
    assert caught.value.source == str(path)
    assert caught.value.pointer == pointer
    assert message in caught.value.message
    assert "\n" not in caught.value.one_line()


def test_description_group_refuses_a_body_change(repo: Path) -> None:
    group = seed.description_group()
    group["variants"]["baseline"]["source"]["ref"] = "before-body-change"
    seed.write_json(repo / "groups" / "not-description-only.json", group)
    with pytest.raises(
        InvocationError,
        match=r"differ only in the front matter description, but the SKILL\.md body differs",
    ):
        mapped(repo, "groups/not-description-only.json")


def test_description_group_refuses_a_resource_change(repo: Path, tmp_path: Path) -> None:
    (repo / "skills" / "target" / "notes.md").write_text("new resource\n")
    try:
        with pytest.raises(InvocationError, match="their files differ"):
            mapped(repo, "groups/natural-activation.json")
    finally:
        (repo / "skills" / "target" / "notes.md").unlink()


@pytest.mark.parametrize(
    ("suite", "pointer", "message"),
    [
        ({"groups": []}, "/groups", "non-empty"),
        ({"groups": ["groups/body-behavior.json"] * 2}, "/groups/1", "listed twice"),
        ({"groups": ["../outside.json"]}, "/groups/0", "relative"),
        ({"groups": ["groups/none.json"]}, "/groups/0", "does not exist"),
        ({"groups": ["suite.json"]}, "/kind", "must be a group"),
        ({"groups": ["groups/body-behavior.json", "groups/copy.json"]}, "/groups/1",
         "duplicate group id"),
        ({"extra": 1}, "/extra", "unknown field"),
        ({"id": "Bad"}, "/id", "lowercase"),
    ],
)  # fmt: skip
def test_bad_suite(repo: Path, suite: dict[str, Any], pointer: str, message: str) -> None:
    seed.write_json(repo / "groups" / "copy.json", seed.body_group())
    path = seed.write_json(repo / "bad-suite.json", {**seed.SUITE, **suite})
    with pytest.raises(InvocationError) as caught:
        mapped(repo, "bad-suite.json")
    assert caught.value.pointer == pointer
    assert message in caught.value.message
    assert caught.value.source in (str(path), str(repo / "suite.json"))


def test_definition_outside_the_root_is_refused(repo: Path, tmp_path: Path) -> None:
    outside = seed.write_json(tmp_path / "elsewhere" / "group.json", seed.body_group())
    with pytest.raises(InvocationError, match="outside the definition root"):
        load_definition(outside, repo)


def test_description_rule_holds_whatever_variant_is_selected(repo: Path) -> None:
    group = seed.description_group()
    group["variants"]["baseline"]["source"]["ref"] = "before-body-change"
    seed.write_json(repo / "groups" / "not-description-only.json", group)
    with pytest.raises(InvocationError, match="body differs"):
        mapped(repo, "groups/not-description-only.json", Selection(variant="candidate"))


def test_a_fixture_file_is_snapshotted_under_its_name(repo: Path) -> None:
    group = seed.body_group()
    group["fixture"] = "fixtures/task/TASK.md"
    seed.write_json(repo / "groups" / "file-fixture.json", group)
    (document, _, _), *_ = mapped(repo, "groups/file-fixture.json").cases
    assert document["fixture"] == {"files": {"TASK.md": "Write result.json.\n"}}


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda d: (d / "link").symlink_to("TASK.md"), "symbolic link"),
        (lambda d: (d / "blob.bin").write_bytes(b"\xff\xfe"), "is not UTF-8 text"),
    ],
)
def test_a_fixture_sevro_cannot_snapshot_is_refused(
    repo: Path, tmp_path: Path, setup: Callable[[Path], Any], message: str
) -> None:
    fixture = repo / "fixtures" / "odd"
    shutil.rmtree(fixture, ignore_errors=True)
    fixture.mkdir(parents=True)
    (fixture / "TASK.md").write_text("x\n")
    setup(fixture)
    group = seed.body_group()
    group["fixture"] = "fixtures/odd"
    path = seed.write_json(repo / "groups" / "odd.json", group)
    with pytest.raises(InvocationError) as caught:
        mapped(repo, "groups/odd.json")
    assert (caught.value.source, caught.value.pointer) == (str(path), "/fixture")
    assert message in caught.value.message


def test_variant_selection_of_a_heterogeneous_suite_keeps_each_groups_environment(
    repo: Path,
) -> None:
    run = mapped(repo, "suite.json", Selection(variant="candidate"))
    (candidate,) = run.design.arms
    assert candidate.id == "candidate"
    assert [c for c, _ in candidate.case_overrides] == [
        "natural-activation",
        "retained-artifact-behavior",
    ]
    assert [s.bundle.name for s in candidate.for_case("retained-artifact-behavior").skills] == [
        "support",
        "target",
    ]
    assert all(c["arm"] == "candidate" for d, _, _ in run.cases for c in d["checks"])
