"""Item 5's read controls and ``sevro.resource-read`` end to end on the scripted host: ``run``
steps are real commands in the trial's sandbox, recorded in ``sevro.file-reads``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sevro_core.testing import SevroProject, require_sandbox
from tests.core.read_controls import BODY, NOTES, check_controls, controls
from tests.e2e.helpers import load

AGENTS = ".agents/skills/greet"


def resource(check_id: str, **configuration: Any) -> dict[str, Any]:
    return {"id": check_id, "grader": "sevro.resource-read", "configuration": configuration}


def run_commands(project: SevroProject, commands: list[str], checks: list[dict[str, Any]]) -> Any:
    case = project.case(
        fixture={
            "files": {
                f"{AGENTS}/SKILL.md": BODY,
                f"{AGENTS}/references/tone.md": "Be kind.\n",
                "notes.md": NOTES,
                "AGENTS.md": "Be brief.\n",
            }
        },
        checks=checks,
        requiredEvidence=["sevro.file-reads"],
    )
    steps = [{"run": {"command": c}} for c in commands]
    host = project.script(default=[[*steps, {"reply": {"text": "ok"}}]])
    return project.run(case, "--host-config", host)


def checks_of(done: Any) -> dict[str, str]:
    trial = done.json()["cases"][0]["trials"][0]
    return {c["id"]: c["status"] for c in trial["checks"]}


def test_every_control_is_classified_as_the_issue_says(sevro_project: SevroProject) -> None:
    require_sandbox()
    commands = [c for c, _ in controls(".agents/skills")]
    read = [resource("skill", resource="skill", expect="read")]
    done = run_commands(sevro_project, commands, read)
    assert done.exit_code == 0, done.stdout + done.stderr
    document = load(done.json()["cases"][0]["trials"][0]["artifactPath"])
    check_controls(document, ".agents/skills")
    skills = next(o for o in document["evidence"]["observations"] if o["id"] == "sevro.skills")
    assert skills["data"]["read"] == ["greet"]


def test_resource_reads_pass_and_fail_end_to_end(sevro_project: SevroProject) -> None:
    require_sandbox()
    checks = [
        resource("skill-read", resource="skill", expect="read"),
        resource("tone-read", resource="skill", path="references/tone.md", expect="read"),
        resource("notes-untouched", resource="workspace", path="notes.md", expect="not-read"),
        resource("context-read", resource="context", expect="read"),
    ]
    positive = run_commands(
        sevro_project,
        [f"cat -n {AGENTS}/SKILL.md", f"cd {AGENTS} && cat references/tone.md", "cat AGENTS.md"],
        checks,
    )
    assert positive.exit_code == 0, positive.stdout + positive.stderr
    assert set(checks_of(positive).values()) == {"passed"}
    negative = run_commands(
        sevro_project,
        [f"sed -n '1,2p' {AGENTS}/SKILL.md", f"ls {AGENTS}/references", "grep -c x notes.md"],
        checks,
    )
    assert negative.exit_code == 1, negative.stdout + negative.stderr
    assert checks_of(negative) == {
        "skill-read": "failed",
        "tone-read": "failed",
        "notes-untouched": "failed",
        "context-read": "failed",
    }


def test_an_unresolvable_read_makes_not_read_unavailable(sevro_project: SevroProject) -> None:
    require_sandbox()
    checks = [resource("untouched", resource="skill", expect="not-read")]
    done = run_commands(sevro_project, ['F=$(ls -d .agents/skills/*); cat "$F/SKILL.md"'], checks)
    assert checks_of(done) == {"untouched": "unavailable"}, done.stdout


def test_a_host_without_file_reads_is_refused_before_any_trial(
    sevro_project: SevroProject,
) -> None:
    from tests.e2e.test_scripted_skills import MUTE_HOST

    plugin = sevro_project.root / "mute.py"
    plugin.write_text(MUTE_HOST)
    check = resource("notes", resource="workspace", path="notes.md", expect="not-read")
    case = sevro_project.case(checks=[check])
    done = sevro_project.run(case, "--host", "acme.host.mute", "--plugin", plugin)
    assert done.exit_code == 64, done.stdout + done.stderr
    assert "#/checks/0/grader: grader sevro.resource-read needs sevro.file-reads" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not sevro_project.results.exists() or not any(sevro_project.results.rglob("trial-*"))


def test_the_arms_context_read_is_graded_in_an_experiment(sevro_project: SevroProject) -> None:
    """The candidate arm's context is mounted as AGENTS.md and read; the baseline has none."""
    require_sandbox()
    project = sevro_project
    (project.root / "context").mkdir()
    (project.root / "context" / "house.md").write_text("Always be brief.\n")
    project.case(
        "cases/context.json",
        id="context",
        checks=[resource("context-read", resource="context", expect="read")],
    )
    project.write_json(
        "experiment.json",
        {
            "format": "sevro.experiment.v1",
            "arms": {
                "baseline": {"skills": [], "target": None, "context": []},
                "candidate": {"skills": [], "target": None, "context": ["context"]},
            },
            "cases": ["cases/context.json"],
            "repetitions": 1,
        },
    )
    project.script(default=[[{"run": {"command": "cat AGENTS.md"}}, {"reply": {"text": "ok"}}]])
    done = project.run("experiment.json", "--host-config", "host.json")
    assert done.exit_code == 1, done.stdout + done.stderr  # the baseline arm fails
    run = load(Path(done.json()["evidencePath"]))
    statuses = {}
    for ref in run["trials"]:
        document = load(Path(done.json()["evidencePath"]).parent / ref["path"])
        statuses[document["arm"]] = {c["id"]: c["status"] for c in document["evidence"]["checks"]}
    assert statuses == {
        "baseline": {"context-read": "failed"},
        "candidate": {"context-read": "passed"},
    }


def test_a_turn_scoped_check_counts_reads_up_to_its_turn(sevro_project: SevroProject) -> None:
    require_sandbox()
    notes = {"resource": "workspace", "path": "notes.md"}
    case = sevro_project.write_json(
        "case.json",
        {
            "id": "example",
            "turns": ["Look around.", "Now read the notes."],
            "fixture": {"files": {"notes.md": NOTES}},
            "checks": [
                {**resource("untouched-1", **notes, expect="not-read"), "turn": 1},
                {**resource("read-2", **notes, expect="read"), "turn": 2},
                resource("untouched", **notes, expect="not-read"),
            ],
            "requiredEvidence": [],
        },
    )
    host = sevro_project.script(
        default=[
            [{"run": {"command": "ls"}}, {"reply": {"text": "looked"}}],
            [{"run": {"command": "cat notes.md"}}, {"reply": {"text": "read"}}],
        ]
    )
    done = sevro_project.run(case, "--host-config", host)
    assert done.exit_code == 1, done.stdout + done.stderr
    assert checks_of(done) == {"untouched-1": "passed", "read-2": "passed", "untouched": "failed"}
