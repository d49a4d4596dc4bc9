"""``sevro run`` / ``sevro validate`` on skill-eval definitions, through the real CLI.

The end-to-end runs need check-level ``arm`` and ``turn`` (the coordinator's contract for issue
15): until that lands, the generated cases are refused by the case loader and those tests fail.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from sevro_core.testing import SevroProject, require_sandbox
from tests.e2e.helpers import assert_valid_evidence, load
from tests.skilleval import seed

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "skill-eval"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return seed.seed_repository(tmp_path / "repo").resolve()


def sevro(root: Path, *args: str | Path) -> Any:
    return SevroProject(root).sevro(*args, cwd=root)


def run_dirs(results: Path) -> list[Path]:
    return [p for p in results.iterdir() if p.name != ".sevro-state"] if results.exists() else []


@pytest.mark.parametrize(
    ("document", "args", "expected"),
    [
        ({**seed.body_group(), "runtime": {"host": "piflow"}}, (),
         "#/runtime/host: sevro has no piflow host"),
        ({**seed.body_group(), "schema_version": 2}, (), "#/schema_version: schema_version"),
        ({**seed.body_group(), "expectations": [{"id": "x", "kind": "context-text",
          "variant": "candidate", "value": "v", "expect": "contains", "surface": "tools"}]}, (),
         "#/expectations/0/surface: surface is system-prompt or provider-context"),
        (seed.body_group(), ("--group", "1"), "--group selects a group of a suite"),
        (seed.body_group(), ("--variant", "both"), "--variant must be baseline or candidate"),
        (seed.body_group(), ("--baseline", "none"), "--skill and --baseline"),
    ],
)  # fmt: skip
def test_bad_definition_is_one_line_exit_64_and_nothing_runs(
    repo: Path, document: dict[str, Any], args: tuple[str, ...], expected: str
) -> None:
    path = seed.write_json(repo / "groups" / "bad.json", document)
    results = repo.parent / "results"
    result = sevro(repo, "run", path, *args, "--results-root", results)
    assert result.exit_code == 64, result.stderr
    lines = [line for line in result.stderr.splitlines() if not line.startswith("sevro: note:")]
    assert len(lines) == 1, result.stderr
    assert expected in lines[0]
    assert run_dirs(results) == []


def test_group_and_variant_flags_need_a_definition(repo: Path, tmp_path: Path) -> None:
    case = SevroProject(repo).case("cases/plain.json")
    result = sevro(repo, "run", case, "--variant", "candidate", "--results-root", tmp_path / "r")
    assert result.exit_code == 64
    assert "--group and --variant select from a skill-eval definition" in result.stderr


def test_validate_reads_a_definition(repo: Path) -> None:
    result = sevro(repo, "validate", "groups/common.json")
    assert result.exit_code == 0, result.stderr
    assert "experiment valid: 2 arm(s), 1 comparison(s)" in result.stdout
    assert "tools read are not enforced by a host without host profiles" in result.stderr


# ---- end to end on the scripted host (needs the check-level arm/turn contract) --------------


def _run(root: Path, results: Path, *args: str) -> dict[str, Any]:
    require_sandbox()
    result = sevro(root, "run", *args, "--host-config", "host.json", "--results-root", results,
                   "--json")  # fmt: skip
    assert result.exit_code in (0, 1), result.stderr
    document = json.loads(result.stdout)
    run: dict[str, Any] = assert_valid_evidence(document)
    run["_evidence"] = document["evidencePath"]
    return run


def test_example_body_group_turns_fail_to_pass(tmp_path: Path) -> None:
    root = tmp_path / "example"
    shutil.copytree(EXAMPLE, root)
    run = _run(root, tmp_path / "r", "suite.json", "--group", "2", "--trials", "2")
    rows = {r["comparison"]: r for r in run["statistics"]["checkTransitions"]}
    assert rows["status-complete"]["transitions"]["fail-to-pass"] == 2
    assert rows["result-exists"]["transitions"]["pass-to-pass"] == 2
    groups = run["experiment"]["skillEval"]["groups"]
    assert [g["status"] for g in groups] == ["not-selected", "selected"]
    report = sevro(root, "report", Path(run["_evidence"]).parent)
    assert report.exit_code == 0, report.stderr
    assert "- group natural-activation: not-selected" in report.stdout
    assert "status-complete (retained-artifact-behavior): 0 pass-to-pass, 2 fail-to-pass" in (
        report.stdout
    )
    assert "review (retained-artifact-behavior): Did the second turn" in report.stdout


def test_example_description_group_reads_on_turn_two(tmp_path: Path) -> None:
    root = tmp_path / "example"
    shutil.copytree(EXAMPLE, root)
    run = _run(root, tmp_path / "r", "suite.json", "--group", "natural-activation",
               "--trials", "1")  # fmt: skip
    rows = {r["comparison"]: r for r in run["statistics"]["checkTransitions"]}
    assert rows["target-read-by-two"]["transitions"]["pass-to-pass"] == 1
    assert rows["quiet-on-turn-one"]["transitions"]["pass-to-pass"] == 1


def test_negative_control_a_script_that_never_reads_fails(tmp_path: Path) -> None:
    root = tmp_path / "example"
    shutil.copytree(EXAMPLE, root)
    host = json.loads((root / "host.json").read_text())
    host["cases"]["natural-activation"]["turns"][1] = [{"reply": {"text": "no skill"}}]
    (root / "host.json").write_text(json.dumps(host))
    run = _run(root, tmp_path / "r", "suite.json", "--group", "1", "--trials", "1")
    rows = {r["comparison"]: r for r in run["statistics"]["checkTransitions"]}
    assert rows["target-read-by-two"]["transitions"]["fail-to-fail"] == 1


def test_variant_selection_runs_one_arm(tmp_path: Path) -> None:
    root = tmp_path / "example"
    shutil.copytree(EXAMPLE, root)
    run = _run(root, tmp_path / "r", "suite.json", "--group", "2", "--variant", "candidate",
               "--trials", "1")  # fmt: skip
    assert [a["id"] for a in run["arms"]] == ["candidate"]
    group = run["experiment"]["skillEval"]["groups"][1]
    assert group["variants"] == {"baseline": "not-selected", "candidate": "selected"}
    assert run["statistics"]["checkTransitions"] == []


def _scripted(root: Path, cases: dict[str, Any]) -> None:
    seed.write_json(root / "host.json", {"format": "sevro.scripted-host.v1", "cases": cases})


READ_TARGET = {"read": {"path": ".agents/skills/target/SKILL.md"}}


def test_seed_description_group_runs(repo: Path, tmp_path: Path) -> None:
    _scripted(repo, {"natural-activation": {"turns": [
        [{"reply": {"text": "ok"}}], [READ_TARGET, {"reply": {"text": "done"}}]]}})  # fmt: skip
    run = _run(repo, tmp_path / "r", "groups/natural-activation.json", "--trials", "1")
    (row,) = run["statistics"]["checkTransitions"]
    assert row["transitions"]["pass-to-pass"] == 1
    arms = {a["id"]: a for a in run["arms"]}
    assert arms["baseline"]["skills"][0]["source"] == "git:before-description-change:skills/target"


def test_seed_common_group_runs(repo: Path, tmp_path: Path) -> None:
    _scripted(repo, {"one-behavioral-question": {"turns": [[{"reply": {"text": "ok"}}]]}})
    run = _run(repo, tmp_path / "r", "groups/common.json", "--trials", "1")
    assert {a["id"] for a in run["arms"]} == {"baseline", "candidate"}


BODY_TURNS = [
    [READ_TARGET, {"reply": {"text": "ready"}}],
    [
        {"write": {"path": "result.json", "content": '{"status": "complete"}\n'}},
        {"reply": {"text": "done"}},
    ],
]


def test_seed_body_group_runs_as_written(repo: Path, tmp_path: Path) -> None:
    """Every expectation of the seed's body group, changed-paths included (the scripted host
    reports sevro.files-changed like the agent CLIs)."""
    _scripted(repo, {"retained-artifact-behavior": {"turns": BODY_TURNS}})
    run = _run(repo, tmp_path / "r", "groups/body-behavior.json", "--trials", "1")
    (row,) = run["statistics"]["checkTransitions"]
    assert row["transitions"]["pass-to-pass"] == 1
    trials = {t["arm"]: t for t in run["trials"]}
    assert set(trials) == {"baseline", "candidate"}
    candidate = load(tmp_path / "r" / run["runId"] / trials["candidate"]["path"])
    statuses = {c["id"]: c["status"] for c in candidate["evidence"]["checks"]}
    assert statuses["candidate-changes"] == "passed", statuses


def test_seed_body_group_changed_paths_catches_a_stray_file(repo: Path, tmp_path: Path) -> None:
    """Negative control: an agent that also leaves notes.md behind fails candidate-changes."""
    stray = [BODY_TURNS[0], [{"write": {"path": "notes.md", "content": "x\n"}}, *BODY_TURNS[1]]]
    _scripted(repo, {"retained-artifact-behavior": {"turns": stray}})
    run = _run(repo, tmp_path / "r", "groups/body-behavior.json", "--trials", "1")
    trials = {t["arm"]: t for t in run["trials"]}
    candidate = load(tmp_path / "r" / run["runId"] / trials["candidate"]["path"])
    statuses = {c["id"]: c["status"] for c in candidate["evidence"]["checks"]}
    assert statuses["candidate-changes"] == "failed", statuses
    assert statuses["candidate-result"] == "passed", statuses


def _three_turn_group(root: Path) -> Path:
    """A body group over three turns with a check of every turn-scoped kind the scripted host
    serves; the baseline's steps say draft, the candidate's complete."""
    group = seed.body_group()
    group["id"] = "three-turns"
    group["input"] = {"turns": ["Read the skill.", "Prepare.", "Prepare."]}
    candidate = [
        {"kind": "skill-read", "expect": "on-turn", "turn": 1},
        {"kind": "response-text", "expect": "contains", "value": "ready", "turn": 1},
        {"kind": "response-text", "expect": "equals", "value": "done"},
        {"kind": "path", "path": "result.json", "expect": "absent", "turn": 2},
        {"kind": "file-text", "path": "result.json", "expect": "contains", "value": "complete"},
        {"kind": "json", "path": "result.json", "expect": "valid"},
    ]
    group["expectations"] = [
        {"id": f"{variant}-{index}", "variant": variant, "comparison": f"c-{index}", **spec}
        for index, spec in enumerate(candidate)
        for variant in ("baseline", "candidate")
    ]
    return seed.write_json(root / "groups" / "three.json", group)


def test_three_turns_grade_each_turn_and_transitions_follow(repo: Path, tmp_path: Path) -> None:
    path = _three_turn_group(repo)
    write = {
        "run": {
            "command": "if grep -q 'status complete' .agents/skills/target/SKILL.md; "
            'then s=complete; else s=draft; fi; printf \'{"status": "%s"}\\n\' $s > result.json'
        }
    }
    turns = [
        [READ_TARGET, {"reply": {"text": "ready"}}],
        [{"reply": {"text": "preparing"}}],
        [write, {"reply": {"text": "done"}}],
    ]
    _scripted(repo, {"three-turns": {"turns": turns}})
    run = _run(repo, tmp_path / "r", str(path.relative_to(repo)), "--trials", "1")
    rows = {r["comparison"]: r["pairs"][0] for r in run["statistics"]["checkTransitions"]}
    passes = {"repetition": 1, "baseline": "pass", "candidate": "pass"}
    assert rows["c-0"] == rows["c-1"] == rows["c-2"] == rows["c-3"] == rows["c-5"] == passes
    # the baseline's body (before-body-change) does not say "status complete"
    assert rows["c-4"] == {"repetition": 1, "baseline": "fail", "candidate": "pass"}


def test_three_turns_negative_control(repo: Path, tmp_path: Path) -> None:
    """Reading on turn 2, replying otherwise and writing early fail the turn-scoped checks."""
    path = _three_turn_group(repo)
    early = {"write": {"path": "result.json", "content": "not json"}}
    turns = [
        [{"reply": {"text": "hello"}}],
        [READ_TARGET, early, {"reply": {"text": "preparing"}}],
        [{"reply": {"text": "finished"}}],
    ]
    _scripted(repo, {"three-turns": {"turns": turns}})
    run = _run(repo, tmp_path / "r", str(path.relative_to(repo)), "--trials", "1")
    rows = {r["comparison"]: r["pairs"][0] for r in run["statistics"]["checkTransitions"]}
    fails = {"repetition": 1, "baseline": "fail", "candidate": "fail"}
    for comparison in ("c-0", "c-1", "c-2", "c-3", "c-4", "c-5"):
        assert rows[comparison] == fails, comparison


def test_negative_control_an_agent_ignoring_the_steps_never_turns(tmp_path: Path) -> None:
    """The example's body group with an agent that writes draft whatever the skill says: the
    status comparison stays fail-to-fail."""
    root = tmp_path / "example"
    shutil.copytree(EXAMPLE, root)
    host = json.loads((root / "host.json").read_text())
    write = {"write": {"path": "result.json", "content": '{"status": "draft"}\n'}}
    host["cases"]["retained-artifact-behavior"]["turns"][1][0] = write
    (root / "host.json").write_text(json.dumps(host))
    run = _run(root, tmp_path / "r", "suite.json", "--group", "2", "--trials", "2")
    rows = {r["comparison"]: r for r in run["statistics"]["checkTransitions"]}
    assert rows["status-complete"]["transitions"]["fail-to-fail"] == 2
    assert rows["result-exists"]["transitions"]["pass-to-pass"] == 2


def test_the_seed_suite_runs_both_groups_in_one_run(repo: Path, tmp_path: Path) -> None:
    """The seed's suite (its body group without changed-paths, which the scripted host cannot
    serve): each group's trials mount that group's variants, one run, one pair of arms."""
    group = seed.body_group()
    group["expectations"] = [e for e in group["expectations"] if e["kind"] != "changed-paths"]
    seed.write_json(repo / "groups" / "body-behavior.json", group)
    description_turns = [[{"reply": {"text": "ok"}}], [READ_TARGET, {"reply": {"text": "done"}}]]
    _scripted(repo, {"natural-activation": {"turns": description_turns},
                     "retained-artifact-behavior": {"turns": BODY_TURNS}})  # fmt: skip
    run = _run(repo, tmp_path / "r", "suite.json", "--trials", "1")
    rows = {r["comparison"]: r for r in run["statistics"]["checkTransitions"]}
    assert rows["target-read-by-two"]["transitions"]["pass-to-pass"] == 1
    assert rows["result-exists"]["transitions"]["pass-to-pass"] == 1
    arms = {a["id"]: a for a in run["arms"]}
    cases = {c["caseId"]: c for c in arms["baseline"]["cases"]}
    assert [s["name"] for s in cases["retained-artifact-behavior"]["skills"]] == [
        "support", "target"
    ]  # fmt: skip
    assert cases["natural-activation"]["skills"][0]["source"] == (
        "git:before-description-change:skills/target"
    )
    root = Path(run["_evidence"]).parent
    for trial in run["trials"]:
        document = json.loads((root / trial["path"]).read_text())
        skills = next(
            o["data"] for o in document["evidence"]["observations"] if o["id"] == "sevro.skills"
        )
        offered = sorted(o["name"] for o in skills["offered"])
        expected = ["support", "target"] if trial["caseId"] != "natural-activation" else ["target"]
        assert offered == expected, trial
        assert skills["target"] == "target"


def test_the_example_suite_runs_whole(tmp_path: Path) -> None:
    root = tmp_path / "example"
    shutil.copytree(EXAMPLE, root)
    run = _run(root, tmp_path / "r", "suite.json", "--trials", "1")
    rows = {r["comparison"]: r["transitions"] for r in run["statistics"]["checkTransitions"]}
    assert rows["status-complete"]["fail-to-pass"] == 1
    assert rows["target-read-by-two"]["pass-to-pass"] == 1


def test_report_json_carries_the_definition_and_validates(tmp_path: Path) -> None:
    from sevro_core.formats.schemas import validate_input

    root = tmp_path / "example"
    shutil.copytree(EXAMPLE, root)
    run = _run(root, tmp_path / "r", "suite.json", "--trials", "1")
    report = sevro(root, "report", "--json", Path(run["_evidence"]).parent)
    assert report.exit_code == 0, report.stderr
    document = json.loads(report.stdout)
    validate_input("report.v1", document, source="report")
    (experiment,) = document["experiments"]
    assert experiment["skillEval"]["suite"] == "release-skill"
    assert len(experiment["statistics"]["checkTransitions"]) == 4
