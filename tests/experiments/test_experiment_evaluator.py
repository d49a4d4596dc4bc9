"""Evaluator directories an experiment declares (Skivolve's ``shared_verifier_dir``): every case
receives them beside its own, fingerprinted into identity, hidden from each arm's candidate and
read-only for checks; a name both declare is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sevro_core.testing import SevroProject, require_sandbox
from tests.core.test_evaluator_resources import dry_digests

CHECKS: list[tuple[str, str]] = [
    ("candidate-blind", "! grep -q s3cret leak.txt"),
    ("control-visible", "grep -q s3cret control.txt"),
    ("shared-read", 'grep -q s3cret "$SEVRO_EVALUATOR_SHARED/secret.txt"'),
    ("own-read", 'grep -q own "$SEVRO_EVALUATOR_OWN/own.txt"'),
    ("shared-read-only", '! touch "$SEVRO_EVALUATOR_SHARED/new" 2>/dev/null'),
]


def experiment(project: SevroProject, area: Path, case_evaluator: dict[str, str]) -> Path:
    """An experiment (two arms, no skill either way) sharing ``area/shared`` with its case."""
    shared = area / "shared"
    shared.mkdir(parents=True, exist_ok=True)
    (shared / "secret.txt").write_text("s3cret\n")
    own = area / "own"
    own.mkdir(exist_ok=True)
    (own / "own.txt").write_text("own\n")
    skill = project.skill("skills/notes", "notes", "Release notes.")
    case: dict[str, Any] = {
        "id": "c1",
        "prompt": "Do it.",
        "fixture": {"files": {"README.md": "x\n"}},
        "evaluator": case_evaluator,
        "checks": [
            {"id": i, "grader": "sevro.shell", "configuration": {"run": run}} for i, run in CHECKS
        ],
        "requiredEvidence": [],
    }
    document = {
        "format": "sevro.experiment.v1",
        "arms": {
            "baseline": {"skills": [], "target": None, "context": []},
            "candidate": {"skills": [str(skill)], "target": "notes", "context": []},
        },
        "evaluator": {"shared": "shared"},
        "cases": [case],
        "repetitions": 1,
    }
    path = area / "experiment.json"
    path.write_text(json.dumps(document))
    return path


def run(project: SevroProject, path: Path, area: Path) -> Any:
    plain = area / "plain"  # undeclared: the candidate can read it (the control)
    plain.mkdir(exist_ok=True)
    (plain / "secret.txt").write_text("s3cret\n")
    leak = (
        f"cat {(area / 'shared').resolve()}/secret.txt > leak.txt 2>&1;"
        f" cat {plain.resolve()}/secret.txt > control.txt 2>&1; true"
    )
    host = project.script(default=[[{"run": {"command": leak}}, {"reply": {"text": "ok"}}]])
    (area / "workspaces").mkdir(exist_ok=True)
    return project.run(path, "--host-config", host, "--workspace-root", area / "workspaces")


def test_every_case_gets_the_shared_directory_hidden_from_each_arm(
    sevro_project: SevroProject, tmp_path: Path
) -> None:
    require_sandbox()
    area = tmp_path / "area"
    area.mkdir()
    path = experiment(sevro_project, area, {"own": "own"})
    done = run(sevro_project, path, area)
    assert done.exit_code == 0, done.stdout + done.stderr
    trials = [t for case in done.json()["cases"] for t in case["trials"]]
    assert len(trials) == 2  # one per arm
    for trial in trials:
        document = json.loads(Path(trial["artifactPath"]).read_text())
        statuses = {c["id"]: c["status"] for c in document["evidence"]["checks"]}
        assert statuses == {i: "passed" for i, _ in CHECKS}, done.stdout
    assert not (area / "shared" / "new").exists()


def test_a_changed_shared_directory_changes_the_identity(
    sevro_project: SevroProject, tmp_path: Path
) -> None:
    area = tmp_path / "area"
    area.mkdir()
    path = experiment(sevro_project, area, {"own": "own"})
    first = dry_digests(sevro_project, path)
    assert dry_digests(sevro_project, path) == first, "the control: nothing changed, same identity"
    (area / "shared" / "secret.txt").write_text("other\n")
    changed = dry_digests(sevro_project, path)
    assert changed["checks"] != first["checks"] and changed["identity"] != first["identity"]
    assert changed["case"] == first["case"]


def test_a_name_both_declare_is_refused(sevro_project: SevroProject, tmp_path: Path) -> None:
    area = tmp_path / "area"
    area.mkdir()
    path = experiment(sevro_project, area, {"shared": "own"})
    done = sevro_project.run(path, "--dry")
    assert done.exit_code == 64
    assert "evaluator directory 'shared' is declared by both the experiment" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_missing_shared_directory_is_refused_with_its_pointer(
    sevro_project: SevroProject, tmp_path: Path
) -> None:
    area = tmp_path / "area"
    area.mkdir()
    path = experiment(sevro_project, area, {})
    document = json.loads(path.read_text())
    document["evaluator"] = {"shared": "nowhere"}
    path.write_text(json.dumps(document))
    done = sevro_project.run(path, "--dry")
    assert done.exit_code == 64
    assert "/evaluator/shared" in done.stderr and "does not exist" in done.stderr
