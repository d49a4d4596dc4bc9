"""N turns on the scripted host: ``turns`` continue one session, each settled turn's workspace
and reply are kept, and a check with ``turn`` grades what was true after that turn, never the
final state in its place. Bad turn and arm declarations are refused at load, nothing run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sevro_core import limits
from sevro_core.testing import SevroProject, require_sandbox
from tests.e2e.helpers import assert_valid_evidence, trial_evidence


def check(check_id: str, grader: str, turn: int | None = None, **config: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"id": check_id, "grader": f"sevro.{grader}", "configuration": config}
    if turn is not None:
        out["turn"] = turn
    return out


def turns_case(
    project: SevroProject, turns: list[str], checks: list[dict[str, Any]], **files: str
) -> Path:
    return project.write_json(
        "case.json",
        {
            "id": "turns",
            "turns": turns,
            "fixture": {"files": {"notes.txt": "zero", **files}},
            "checks": checks,
            "requiredEvidence": [],
        },
    )


def write(path: str, content: str) -> dict[str, Any]:
    return {"write": {"path": path, "content": content}}


def say(text: str) -> dict[str, Any]:
    return {"reply": {"text": text}}


THREE_TURNS = [
    [write("notes.txt", "one"), say("first: {{sevro.prompt}}")],
    [write("notes.txt", "two"), say("second")],
    [write("result.json", '{"status": "complete"}'), say("third")],
]

POSITIVE = [
    check("t1-notes", "file-text", 1, path="notes.txt", equals="one"),
    check("t2-notes", "file-text", 2, path="notes.txt", equals="two"),
    check("t1-no-result", "path", 1, path="result.json", expect="absent"),
    check("t2-no-result", "path", 2, path="result.json", expect="absent"),
    check(
        "t3-result",
        "json-file",
        3,
        path="result.json",
        expect="equals",
        pointer="/status",
        value="complete",
    ),
    check("final-result", "path", path="result.json", expect="exists"),
    check("t1-reply", "response-text", 1, equals="first: Start."),
    check("t2-reply", "response-text", 2, contains="second", notContains="first"),
    check("final-reply", "response-text", equals="third"),
]

NEGATIVE = [
    check("t1-final-notes", "file-text", 1, path="notes.txt", equals="two"),
    check("t1-result", "path", 1, path="result.json", expect="exists"),
    check("t2-reply-is-last", "response-text", 2, equals="third"),
    check("final-reply-is-first", "response-text", matches="^first"),
]


def test_each_turn_is_graded_on_what_it_left(sevro_project: SevroProject) -> None:
    """Repeated turn texts are allowed; the snapshot of turn 1 is not the final workspace."""
    case = turns_case(sevro_project, ["Start.", "Again.", "Again."], POSITIVE + NEGATIVE)
    host = sevro_project.script(default=THREE_TURNS)
    done = sevro_project.run(case, "--host-config", host)
    evidence = trial_evidence(done.json())
    found = {c["id"]: c["status"] for c in evidence["checks"]}
    assert found == {c["id"]: "passed" for c in POSITIVE} | {c["id"]: "failed" for c in NEGATIVE}
    assert done.exit_code == 1, done.stdout + done.stderr
    details = {c["id"]: c.get("detail") for c in evidence["checks"]}
    assert details["t1-final-notes"] == "after turn 1: 'notes.txt' does not equal the expected text"
    assert details["t2-reply-is-last"] == "after turn 2: the reply does not equal the expected text"
    assert evidence["turnsCompleted"] == 3
    (turns,) = [o for o in evidence["observations"] if o["id"] == "sevro.observation.turns"]
    assert [(t["turn"], t["reply"], t.get("workspace")) for t in turns["data"]["turns"]] == [
        (1, "first: Start.", "complete"),
        (2, "second", "complete"),
        (3, "third", None),  # the last turn's state is the final workspace: nothing copied
    ]
    assert_valid_evidence(done.json())


def test_turn_scoped_evidence_holds_only_the_turns_up_to_it(sevro_project: SevroProject) -> None:
    """A skill read on turn 2 is not read by turn 1: host evidence is cut at the check's turn."""
    skill = ".agents/skills/notes/SKILL.md"
    read = {"read": {"path": skill}}
    case = turns_case(
        sevro_project,
        ["One.", "Two."],
        [
            check("t1-not-read", "skill-activation", 1, expect="not-read"),
            check("t1-read", "skill-activation", 1, expect="read"),
            check("t2-read", "skill-activation", 2, expect="read"),
        ],
        **{skill: "---\nname: notes\ndescription: Keep notes.\n---\nKeep notes.\n"},
    )
    host = sevro_project.script(default=[[say("a")], [read, say("b")]])
    done = sevro_project.run(case, "--host-config", host)
    found = {c["id"]: c["status"] for c in trial_evidence(done.json())["checks"]}
    assert found == {"t1-not-read": "passed", "t1-read": "failed", "t2-read": "passed"}


def test_a_turn_that_never_settled_is_unavailable_never_the_final_state(
    sevro_project: SevroProject,
) -> None:
    """A partial snapshot (beyond its bounds) makes the turn's checks unavailable."""
    require_sandbox()
    many = f"seq {limits.MAX_TURN_SNAPSHOT_ENTRIES + 1} | xargs mkdir"
    case = turns_case(
        sevro_project,
        ["One.", "Two."],
        [check("t1", "path", 1, path="notes.txt", expect="exists")],
    )
    host = sevro_project.script(default=[[{"run": {"command": many}}, say("a")], [say("b")]])
    done = sevro_project.run(case, "--host-config", host)
    (outcome,) = trial_evidence(done.json())["checks"]
    assert outcome["status"] == "unavailable", outcome
    assert "snapshot is partial" in outcome["detail"]
    assert done.exit_code == 4


@pytest.mark.parametrize(
    ("case", "message"),
    [
        (
            {"turns": ["a"], "prompt": "b"},
            "case.json#/prompt: declare either turns or prompt, not both",
        ),
        (
            {"turns": ["a"], "followUpPrompt": "b"},
            "case.json#/followUpPrompt: declare either turns or followUpPrompt, not both",
        ),
        ({}, "case.json: a case needs 'prompt' (one turn, optionally 'followUpPrompt') or 'turns'"),
        ({"turns": []}, "case.json#/turns: "),
        ({"turns": ["a", " "]}, "case.json#/turns/1: "),
        (
            {"turns": ["a", "b"], "checks": [check("c", "response-text", 3, contains="x")]},
            "case.json#/checks/0/turn: turn 3 does not exist: the case has 2 turn(s)",
        ),
        (
            {"prompt": "a", "checks": [check("c", "response-text", 2, contains="x")]},
            "case.json#/checks/0/turn: turn 2 does not exist: the case has 1 turn(s)",
        ),
        (
            {"prompt": "a", "checks": [{**check("c", "response-text", contains="x"), "arm": "b"}]},
            "case.json#/checks/0/arm: check 'c' names arm 'b', but this run compares no arms",
        ),
        (
            {
                "turns": ["a", "b"],
                "checks": [check("c", "shell", 1, run="true")],
            },
            "case.json#/checks/0/turn: grader sevro.shell runs commands in the live workspace, "
            "so it cannot grade turn 1 of 2",
        ),
        (
            {"turns": ["a", "b", "c"]},
            "host.json#/default/turns: script has 2 turn(s) but case 'turns' has 3 prompt(s)",
        ),
    ],
)
def test_bad_turn_declarations_are_refused_nothing_run(
    sevro_project: SevroProject, case: dict[str, Any], message: str
) -> None:
    document = {"id": "turns", "fixture": {"files": {}}, "checks": [], "requiredEvidence": []}
    document.update(case)
    path = sevro_project.write_json("case.json", document)
    host = sevro_project.script(default=[[say("a")], [say("b")]])
    done = sevro_project.run(path, "--host-config", host)
    assert done.exit_code == 64, done.stdout + done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert message in done.stderr, done.stderr
    assert not sevro_project.results.exists()


def test_the_turn_a_failed_check_graded_is_on_screen(sevro_project: SevroProject) -> None:
    case = turns_case(sevro_project, ["Start.", "Again.", "Again."], NEGATIVE[:1])
    host = sevro_project.script(default=THREE_TURNS)
    done = sevro_project.sevro(
        "run", case, "--host-config", host, "--results-root", sevro_project.results
    )
    assert done.exit_code == 1
    assert "after turn 1: 'notes.txt' does not equal the expected text" in done.stdout + done.stderr
