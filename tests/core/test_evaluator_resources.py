"""Evaluator directories (``evaluator`` in a case): loaded strictly and bounded, fingerprinted
into identity, hidden from the candidate's commands and handed read-only to checks with the
final output and the workspace diff (docs/evaluator-resources.md)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from sevro_core.errors import InvocationError
from sevro_core.formats.canonical import hash_json
from sevro_core.models import Artifact
from sevro_core.run import checkinputs, evaluator
from sevro_core.run.checkinputs import check_resources
from sevro_core.run.loading import load_cases
from sevro_core.testing import SevroProject, require_sandbox
from tests.core import evaluator_probes

BASE: dict[str, Any] = {
    "id": "c1",
    "prompt": "Do it.",
    "fixture": {"files": {}},
    "checks": [],
    "requiredEvidence": [],
}


def layout(root: Path, declared: dict[str, str] | None = None) -> Path:
    """cases/case.json declaring ``declared`` (default: gold -> ../evaluators/gold)."""
    gold = root / "evaluators" / "gold"
    gold.mkdir(parents=True, exist_ok=True)
    (gold / "secret.txt").write_text("s3cret\n")
    (gold / "lib").mkdir(exist_ok=True)
    (gold / "lib" / "verify.sh").write_text("echo '[]'\n")
    case = root / "cases" / "case.json"
    case.parent.mkdir(parents=True, exist_ok=True)
    case.write_text(json.dumps({**BASE, "evaluator": declared or {"gold": "../evaluators/gold"}}))
    return case


def refusal(case: Path) -> InvocationError:
    with pytest.raises(InvocationError) as caught:
        load_cases([case])
    return caught.value


# ---- loading ---------------------------------------------------------------------------------


def test_a_declared_directory_is_read_canonicalised_and_fingerprinted(tmp_path: Path) -> None:
    path = layout(tmp_path)
    (case,) = load_cases([path])
    (gold,) = case.evaluator
    assert gold.name == "gold" and gold.path == (tmp_path / "evaluators" / "gold").resolve()
    assert (gold.entries, gold.bytes) == (3, len("s3cret\n") + len("echo '[]'\n"))
    assert gold.to_json() == {"name": "gold", "fingerprint": gold.fingerprint}
    (again,) = load_cases([path])[0].evaluator
    assert again.fingerprint == gold.fingerprint
    (tmp_path / "evaluators" / "gold" / "lib" / "verify.sh").write_text("echo '[1]'\n")
    (changed,) = load_cases([path])[0].evaluator
    assert changed.fingerprint != gold.fingerprint
    (tmp_path / "evaluators" / "gold" / "lib" / "verify.sh").chmod(0o755)
    (executable,) = load_cases([path])[0].evaluator
    assert executable.fingerprint != changed.fingerprint, "the mode is part of it"


def test_a_directory_that_changed_since_loading_is_detected(tmp_path: Path) -> None:
    (case,) = load_cases([layout(tmp_path)])
    assert evaluator.changed_since_loaded(case.evaluator) is None, "the control: unchanged"
    (tmp_path / "evaluators" / "gold" / "secret.txt").write_text("other\n")
    assert evaluator.changed_since_loaded(case.evaluator) == (
        "evaluator directory 'gold' changed since the case was loaded"
    )
    shutil.rmtree(tmp_path / "evaluators" / "gold")
    found = evaluator.changed_since_loaded(case.evaluator)
    assert found is not None and found.endswith("since the case was loaded: it does not exist")


def test_a_case_without_evaluator_has_none(tmp_path: Path) -> None:
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps(BASE))
    assert load_cases([plain])[0].evaluator == ()


def test_bad_declarations_are_refused_with_file_and_pointer(tmp_path: Path) -> None:
    case = layout(tmp_path)
    for declared, message in [
        ({"gold": "/etc"}, "must be relative to the case file"),
        ({"gold": "../missing"}, "does not exist"),
        ({"gold": "case.json"}, "is not a directory"),
    ]:
        case.write_text(json.dumps({**BASE, "evaluator": declared}))
        found = refusal(case)
        assert (found.source, found.pointer) == (str(case), "/evaluator/gold"), declared
        assert message in found.message
    (tmp_path / "linked").symlink_to(tmp_path / "evaluators" / "gold")
    case.write_text(json.dumps({**BASE, "evaluator": {"gold": "../linked"}}))
    assert "is a symbolic link" in refusal(case).message
    for bad_name in ("Gold", "1gold", "go-ld"):
        case.write_text(json.dumps({**BASE, "evaluator": {bad_name: "../evaluators/gold"}}))
        assert refusal(case).pointer is not None


def test_links_special_files_and_odd_names_inside_are_refused(tmp_path: Path) -> None:
    case = layout(tmp_path)
    gold = tmp_path / "evaluators" / "gold"
    (gold / "lib" / "escape").symlink_to("/etc/passwd")
    assert "holds a symbolic link 'lib/escape'" in refusal(case).message
    (gold / "lib" / "escape").unlink()
    os.mkfifo(gold / "pipe")
    assert "holds a special file 'pipe'" in refusal(case).message
    (gold / "pipe").unlink()
    (gold / "bad\nname").write_text("x")
    assert "not printable UTF-8" in refusal(case).message
    (gold / "bad\nname").unlink()
    assert load_cases([case])[0].evaluator, "the control: clean again, it loads"


def test_a_directory_beyond_its_bounds_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    case = layout(tmp_path)
    monkeypatch.setattr(evaluator, "MAX_EVALUATOR_ENTRIES", 2)
    assert "more than 2 entries" in refusal(case).message
    monkeypatch.setattr(evaluator, "MAX_EVALUATOR_ENTRIES", 3)
    assert load_cases([case])[0].evaluator
    monkeypatch.setattr(evaluator, "MAX_EVALUATOR_BYTES", 10)
    assert "more than 10 bytes" in refusal(case).message


def test_the_schema_bound_is_the_limit() -> None:
    from sevro_core.formats.schemas import load_schema
    from sevro_core.limits import MAX_EVALUATOR_DIRECTORIES

    schema = load_schema("case.v1")
    assert schema["properties"]["evaluator"]["maxProperties"] == MAX_EVALUATOR_DIRECTORIES


def test_a_directory_holding_what_checks_must_not_read_is_refused(
    sevro_project: SevroProject,
) -> None:
    """The project root (the case's own directory here) holds the results: refused, exit 64,
    before anything runs; a directory of its own is the control."""
    case = layout(sevro_project.root, {"gold": ".."})
    host = sevro_project.script(default=[[{"reply": {"text": "done"}}]])
    done = sevro_project.run(case, "--host-config", host)
    assert done.exit_code == 64, done.stdout + done.stderr
    assert "#/evaluator/gold: evaluator directory 'gold' holds" in done.stderr
    assert "which checks must not read" in done.stderr
    case.write_text(json.dumps({**BASE, "evaluator": {"gold": "../evaluators/gold"}}))
    assert sevro_project.run(case, "--dry", "--host-config", host).exit_code == 0


# ---- identity --------------------------------------------------------------------------------


def dry_digests(project: SevroProject, case: Path) -> dict[str, str]:
    host = project.script(default=[[{"reply": {"text": "done"}}]])
    done = project.run(case, "--dry", "--host-config", host)
    assert done.exit_code == 0, done.stdout + done.stderr
    (run,) = project.results.glob("*/run.json")
    digests: dict[str, str] = json.loads(run.read_text())["cases"][0]["digests"]
    shutil.rmtree(project.results)
    return digests


def test_a_changed_verifier_changes_the_identity(sevro_project: SevroProject) -> None:
    case = layout(sevro_project.root / "area")
    first = dry_digests(sevro_project, case)
    assert dry_digests(sevro_project, case) == first, "the control: nothing changed, same identity"
    (case.parent.parent / "evaluators" / "gold" / "secret.txt").write_text("other\n")
    changed = dry_digests(sevro_project, case)
    assert changed["checks"] != first["checks"] and changed["identity"] != first["identity"]
    assert changed["case"] == first["case"] and changed["fixture"] == first["fixture"]
    plain = sevro_project.write_json("plain.json", BASE)
    assert dry_digests(sevro_project, plain)["checks"] == hash_json([]), "no evaluator: unchanged"


# ---- what checks receive ---------------------------------------------------------------------


def test_check_inputs_are_private_files_named_by_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (case,) = load_cases([layout(tmp_path)])
    private = tmp_path / "private"
    private.mkdir()
    diff = Artifact("sevro.git.diff", b"diff --git a/x b/x\n")
    granted = check_resources(private, case.evaluator, "final", {1: "one", 2: None}, [diff])
    inputs = private / "check-inputs"
    env = dict(granted.environment)
    assert env == {
        "SEVRO_EVALUATOR_GOLD": str(case.evaluator[0].path),
        "SEVRO_FINAL_OUTPUT": str(inputs / "final_output"),
        "SEVRO_TURN_1_OUTPUT": str(inputs / "turn_1_output"),
        "SEVRO_WORKSPACE_DIFF": str(inputs / "workspace_diff"),
    }
    assert granted.read_only == (inputs, case.evaluator[0].path)
    assert Path(env["SEVRO_FINAL_OUTPUT"]).read_text() == "final"
    assert Path(env["SEVRO_WORKSPACE_DIFF"]).read_bytes() == diff.content
    assert oct(Path(env["SEVRO_FINAL_OUTPUT"]).stat().st_mode & 0o777) == "0o400"

    other = tmp_path / "other"
    other.mkdir()
    monkeypatch.setattr(checkinputs, "MAX_CHECK_INPUT_BYTES", 4)
    bounded = check_resources(other, (), "final", {}, [Artifact("sevro.files.diff", b"abc")])
    assert set(bounded.environment) == {"SEVRO_WORKSPACE_DIFF"}, "too long: left out, not cut"
    none = tmp_path / "none"
    none.mkdir()
    assert dict(check_resources(none, (), None, {}, []).environment) == {}


def test_the_candidate_cannot_see_what_checks_read(
    sevro_project: SevroProject, tmp_path: Path
) -> None:
    """A scripted candidate tries to read and list the evaluator directory (kept outside the
    project, beside the workspace root, where the run can read): it sees nothing, while an
    undeclared sibling directory stays readable (the control that this could fail), and the
    checks read the directory, the final output and the diff of a Git fixture."""
    require_sandbox()
    area = tmp_path / "area"
    case = layout(area)
    gold = (area / "evaluators" / "gold").resolve()
    plain = area / "evaluators" / "plain"
    plain.mkdir()
    (plain / "secret.txt").write_text("s3cret\n")
    steps = [
        {
            "run": {
                "command": f"cat {gold}/secret.txt > leak.txt 2>&1; ls -a {gold} > listing.txt"
                f" 2>&1; cat {plain.resolve()}/secret.txt > control.txt 2>&1;"
                " env > env.txt; echo changed > README.md; true"
            }
        },
        {"reply": {"text": "done"}},
    ]
    shell = [
        ("candidate-blind", "! grep -q s3cret leak.txt && ! grep -q secret listing.txt"),
        ("no-variable-for-candidate", "! grep -q SEVRO_EVALUATOR env.txt"),
        ("control-visible", "grep -q s3cret control.txt"),
        ("checks-read-it", 'grep -q s3cret "$SEVRO_EVALUATOR_GOLD/secret.txt"'),
        ("checks-read-only", '! touch "$SEVRO_EVALUATOR_GOLD/new" 2>/dev/null'),
        ("final-output", 'test "$(cat "$SEVRO_FINAL_OUTPUT")" = done'),
        ("turn-output", 'test "$(cat "$SEVRO_TURN_1_OUTPUT")" = done'),
        ("workspace-diff", 'grep -q "^+changed" "$SEVRO_WORKSPACE_DIFF"'),
    ]
    declared = {
        **BASE,
        "fixture": {
            "kind": "generated",
            "commits": [{"message": "m", "files": {"README.md": "x\n"}}],
        },
        "evaluator": {"gold": "../evaluators/gold"},
        "checks": [
            {"id": i, "grader": "sevro.shell", "configuration": {"run": run}} for i, run in shell
        ],
    }
    case.write_text(json.dumps(declared))
    host = sevro_project.script(default=[steps])
    (area / "workspaces").mkdir()
    done = sevro_project.run(case, "--host-config", host, "--workspace-root", area / "workspaces")
    (trial,) = done.json()["cases"][0]["trials"]
    document = json.loads(Path(trial["artifactPath"]).read_text())
    statuses = {c["id"]: (c["status"], c.get("detail")) for c in document["evidence"]["checks"]}
    assert statuses == {i: ("passed", None) for i, _ in shell}, done.stdout + done.stderr
    assert done.exit_code == 0
    assert not (gold / "new").exists()


def test_the_candidate_cannot_reach_it_through_dot_dot_or_a_link(
    sevro_project: SevroProject, tmp_path: Path
) -> None:
    """The probes the real-CLI tests send (tests/core/evaluator_probes.py) as scripted commands:
    none shows the marker, each read fails, while the checks of the same trial read it."""
    require_sandbox()
    case, gold, workspaces = evaluator_probes.evaluator_area(tmp_path / "area")
    commands = evaluator_probes.probes(gold)
    steps: list[dict[str, Any]] = [
        {"run": {"command": f"({command}) > probe-{n}.txt 2>&1; true"}}
        for n, command in enumerate(commands, start=1)
    ]
    steps.append({"reply": {"text": "done"}})
    declared = json.loads(case.read_text())
    declared["checks"] += evaluator_probes.blind_checks(len(commands))
    case.write_text(json.dumps(declared))
    host = sevro_project.script(default=[steps])
    done = sevro_project.run(case, "--host-config", host, "--workspace-root", workspaces)
    (trial,) = done.json()["cases"][0]["trials"]
    statuses = {c["id"]: c["status"] for c in trial["checks"]}
    assert statuses == dict.fromkeys([c["id"] for c in declared["checks"]], "passed"), statuses
    assert done.exit_code == 0, done.stdout + done.stderr


def test_a_verifier_script_in_an_undeclared_directory_is_refused_before_anything_runs(
    sevro_project: SevroProject,
) -> None:
    case = layout(sevro_project.root / "area")
    document = json.loads(case.read_text())
    verifier = {"grader": "sevro.verifier", "configuration": {"run": {"script": "other/v.py"}}}
    document["checks"] = [{"id": "v", **verifier}]
    case.write_text(json.dumps(document))
    host = sevro_project.script(default=[[{"reply": {"text": "done"}}]])
    done = sevro_project.run(case, "--host-config", host)
    assert done.exit_code == 64, done.stdout + done.stderr
    assert f"{case}#/checks/0/configuration/run/script" in done.stderr
    assert "evaluator directory 'other', which the case does not declare" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    document["checks"][0]["configuration"]["run"]["script"] = "gold/v.py"
    case.write_text(json.dumps(document))
    declared = sevro_project.run(case, "--host-config", host, "--dry")
    assert declared.exit_code == 0, declared.stdout + declared.stderr  # the control
