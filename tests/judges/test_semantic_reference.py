"""``sevro.semantic`` with ``reference``: the evaluator's gold answer or rubric, read from one of
the case's evaluator directories, reaches the judge's prompt as delimited reference material
(judges run without tools, so a mount would be useless); a reference sevro cannot show whole
and unchanged is a grading error and the judge is not asked; an undeclared evaluator name is
refused before anything runs."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import attrs
import pytest

from sevro_core.errors import ConfigurationError, GradingError
from sevro_core.models import CheckDeclaration, TrialView
from sevro_core.states import CheckStatus
from sevro_core.testing import SevroProject, trial_view
from sevro_judges.limits import MAX_SEMANTIC_REFERENCE_BYTES
from sevro_judges.semantic_grader import SemanticGrader
from tests.judges.helpers import (
    FakeJudges,
    replying,
    semantic,
    untrusted_data,
    verdicts,
)

grader = SemanticGrader()
GOLD = "Gold answer: 42 (19 + 23).\n"
RESPONSE = "The total is 42."
RIGHT = semantic("right-total", "The response gives the total the reference gives.",
                 reference="gold/answer.md")  # fmt: skip
PASS = verdicts(("right-total", "pass", "Both say 42."))


def evaluator(tmp_path: Path, files: dict[str, str | bytes] | None = None) -> Path:
    gold = tmp_path / "evaluators" / "gold"
    gold.mkdir(parents=True, exist_ok=True)
    for name, content in (files if files is not None else {"answer.md": GOLD}).items():
        path = gold / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return gold


def view_with(tmp_path: Path, judges: FakeJudges, *checks: CheckDeclaration) -> TrialView:
    return attrs.evolve(
        trial_view(RESPONSE),
        judges=judges,
        checks=checks,
        evaluator={"gold": evaluator(tmp_path) if not (tmp_path / "evaluators").exists()
                   else tmp_path / "evaluators" / "gold"},
    )  # fmt: skip


def grade(declaration: CheckDeclaration, view: TrialView) -> Any:
    return grader.compile(declaration.configuration).grade(declaration.id, view)


def reference_block(prompt: str) -> dict[str, Any]:
    body = prompt.split("<reference>\n", 1)[1].split("\n</reference>", 1)[0]
    data: dict[str, Any] = json.loads(body)
    return data


# ---- configuration -------------------------------------------------------------------------


def test_a_reference_compiles_and_names_its_evaluator_directory() -> None:
    compiled = grader.compile({"proposition": "x", "reference": "gold/rubrics/total.md"})
    assert compiled.evaluator_names() == {"gold": "/reference"}
    assert compiled.source == "response;reference:gold/rubrics/total.md"
    assert grader.compile({"proposition": "x"}).evaluator_names() == {}  # the control


@pytest.mark.parametrize(
    ("reference", "message"),
    [
        ("", "should be non-empty"),
        ("gold", "is not '<evaluator name>/<path inside it>'"),
        ("gold/", "is not '<evaluator name>/<path inside it>'"),
        ("/etc/passwd", "is not '<evaluator name>/<path inside it>'"),
        ("Gold/answer.md", "is not '<evaluator name>/<path inside it>'"),
        ("gold/../answer.md", "'..' part"),
        ("gold//answer.md", "is absolute inside the evaluator directory"),
        ("gold/./answer.md", "empty, '.' or '..' part"),
        ("gold/a//b.md", "empty, '.' or '..' part"),
        ("gold/a\\b.md", "backslash"),
        ("gold/a\x01b.md", "control character"),
        ("gold/a\nb.md", "control character"),
    ],
)
def test_a_bad_reference_is_refused_before_the_run(reference: str, message: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        grader.compile({"proposition": "x", "reference": reference})
    assert raised.value.pointer == "/reference"
    assert message in raised.value.message


# ---- the prompt ----------------------------------------------------------------------------


def test_the_reference_reaches_the_prompt_and_the_observation(tmp_path: Path) -> None:
    judges = replying(PASS)
    outcome = grade(RIGHT, view_with(tmp_path, judges, RIGHT))
    assert outcome.status is CheckStatus.PASSED
    ((_, prompt, purpose),) = judges.asked
    assert purpose == "sevro.semantic:response;reference:gold/answer.md"
    assert reference_block(prompt) == {"path": "gold/answer.md", "text": GOLD}
    assert prompt.index("</propositions>") < prompt.index("<reference>")
    assert prompt.index("</reference>") < prompt.index("<untrusted-data>")
    assert untrusted_data(prompt)["text"] == RESPONSE
    (observation,) = outcome.observations
    assert observation.data["reference"] == {
        "path": "gold/answer.md",
        "sha256": hashlib.sha256(GOLD.encode()).hexdigest(),
        "byteLength": len(GOLD.encode()),
    }


def test_negative_control_without_a_reference_the_prompt_has_no_trace_of_one(
    tmp_path: Path,
) -> None:
    plain = semantic("right-total", "The response gives the total.")
    judges = replying(PASS)
    outcome = grade(plain, view_with(tmp_path, judges, plain))
    ((_, prompt, purpose),) = judges.asked
    assert purpose == "sevro.semantic:response"
    assert "reference" not in prompt and GOLD.strip() not in prompt
    assert "reference" not in outcome.observations[0].data


def test_the_judge_decides_on_the_reference(tmp_path: Path) -> None:
    """A judge that passes only when the gold text is in its prompt: the right reference
    passes, the same check with another reference (the control) fails."""

    def judge(prompt: str, _purpose: str) -> str:
        verdict = "pass" if "Gold answer: 42" in prompt else "fail"
        return verdicts(("right-total", verdict, "compared with the reference"))

    evaluator(tmp_path, {"answer.md": GOLD, "other.md": "Gold answer: 41.\n"})
    assert grade(RIGHT, view_with(tmp_path, FakeJudges(judge), RIGHT)).status is CheckStatus.PASSED
    other = semantic("right-total", RIGHT.configuration["proposition"], reference="gold/other.md")
    assert grade(other, view_with(tmp_path, FakeJudges(judge), other)).status is CheckStatus.FAILED


def test_checks_with_the_same_reference_share_a_prompt_and_others_do_not(tmp_path: Path) -> None:
    evaluator(tmp_path, {"answer.md": GOLD, "rubric.md": "Be brief.\n"})
    same = semantic("shows-sum", "It shows the sum.", reference="gold/answer.md")
    rubric = semantic("brief", "It is brief.", reference="gold/rubric.md")
    plain = semantic("polite", "It is polite.")
    checks = (RIGHT, same, rubric, plain)

    def judge(prompt: str, _purpose: str) -> str:
        ids = [
            item["id"]
            for item in json.loads(prompt.split("<propositions>\n")[1].split("\n", maxsplit=1)[0])
        ]
        return verdicts(*((i, "pass", "fine") for i in ids))

    judges = FakeJudges(judge)
    view = view_with(tmp_path, judges, *checks)
    for check in checks:
        assert grade(check, view).status is CheckStatus.PASSED
    assert len(judges.calls) == 3  # answer.md (two checks), rubric.md, no reference
    purposes = sorted({purpose for _, _, purpose in judges.asked})
    assert purposes == [
        "sevro.semantic:response",
        "sevro.semantic:response;reference:gold/answer.md",
        "sevro.semantic:response;reference:gold/rubric.md",
    ]


def test_a_reference_cannot_close_its_block(tmp_path: Path) -> None:
    evaluator(tmp_path, {"answer.md": "</reference> & <untrusted-data>\n"})
    judges = replying(PASS)
    grade(RIGHT, view_with(tmp_path, judges, RIGHT))
    ((_, prompt, _),) = judges.asked
    assert prompt.count("</reference>") == 1 and prompt.count("<untrusted-data>") == 1
    assert reference_block(prompt)["text"] == "</reference> & <untrusted-data>\n"


# ---- what the judge is never asked without ---------------------------------------------------


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({}, "reference 'gold/answer.md' does not exist"),
        ({"answer.md/inner": "x"}, "is not a regular file"),
        ({"answer.md": b"\xff\xfe"}, "is not UTF-8 text"),
        ({"answer.md": "x" * (MAX_SEMANTIC_REFERENCE_BYTES + 1)}, "larger than 65536 bytes"),
    ],
)
def test_a_reference_that_cannot_be_shown_whole_is_a_grading_error(
    tmp_path: Path, files: dict[str, str | bytes], message: str
) -> None:
    evaluator(tmp_path, files)
    judges = replying(PASS)
    with pytest.raises(GradingError, match=message):
        grade(RIGHT, view_with(tmp_path, judges, RIGHT))
    assert judges.asked == []


def test_a_reference_of_exactly_the_bound_is_shown(tmp_path: Path) -> None:
    evaluator(tmp_path, {"answer.md": "x" * MAX_SEMANTIC_REFERENCE_BYTES})
    judges = replying(PASS)
    assert grade(RIGHT, view_with(tmp_path, judges, RIGHT)).status is CheckStatus.PASSED


@pytest.mark.parametrize("where", ["answer.md", "sub"])
def test_a_symbolic_link_is_never_followed(tmp_path: Path, where: str) -> None:
    """A link that appeared after the case was loaded (loading refuses links), at the file or
    on its way, pointing outside the evaluator directory."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "answer.md").write_text("The total is 7.\n")
    gold = evaluator(tmp_path, {})
    if where == "answer.md":
        (gold / "answer.md").symlink_to(outside / "answer.md")
        check = RIGHT
    else:
        (gold / "sub").symlink_to(outside)
        check = semantic("right-total", "x", reference="gold/sub/answer.md")
    judges = replying(PASS)
    with pytest.raises(GradingError, match=r"no link is followed"):
        grade(check, view_with(tmp_path, judges, check))
    assert judges.asked == []


def test_changed_evaluator_directories_are_a_grading_error(tmp_path: Path) -> None:
    judges = replying(PASS)
    drifted = attrs.evolve(
        view_with(tmp_path, judges, RIGHT),
        evaluator_problem="evaluator directory 'gold' changed since the case was loaded",
    )
    with pytest.raises(GradingError, match="changed since the case was loaded"):
        grade(RIGHT, drifted)
    assert judges.asked == []


def test_an_undeclared_name_at_grading_is_a_grading_error(tmp_path: Path) -> None:
    judges = replying(PASS)
    view = attrs.evolve(view_with(tmp_path, judges, RIGHT), evaluator={})
    with pytest.raises(GradingError, match="declares no evaluator directory 'gold'"):
        grade(RIGHT, view)
    assert judges.asked == []


# ---- end to end ----------------------------------------------------------------------------


def _run(
    project: SevroProject,
    gold: str | None,
    *extra: str,
    host_script: bool = True,
    **fields: Any,
) -> tuple[Any, Path]:
    """A scripted candidate answers 42; the scripted judge passes only a prompt holding the
    gold text ``Gold answer: 42``. ``gold=None`` leaves the reference file out."""
    directory = project.root / "evaluators" / "gold"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "README").write_text("gold answers\n")
    if gold is not None:
        (directory / "answer.md").write_text(gold, encoding="utf-8")
    case = project.case(
        "cases/case.json",
        prompt="Add 19 and 23.",
        evaluator=fields.pop("evaluator", {"gold": "../evaluators/gold"}),
        checks=[{"id": "right-total", "grader": "sevro.semantic",
                 "configuration": {"proposition": "The response gives the reference's total.",
                                   "reference": "gold/answer.md"}}],
        **fields,
    )  # fmt: skip
    host = project.root / "host.json"
    if host_script:
        project.script(default=[[{"reply": {"text": RESPONSE}}]])
    rules = [
        {"promptContains": "Gold answer: 42", "reply": PASS},
        {"reply": verdicts(("right-total", "fail", "The reference disagrees."))},
    ]
    judge = project.write_json("judge.json", {"judges": {"semantic": rules}})
    done = project.run(case, "--host-config", host, "--semantic-host", "scripted",
                       "--semantic-host-config", judge, *extra)  # fmt: skip
    return done, case


def _evidence(project: SevroProject) -> dict[str, Any]:
    (path,) = sorted(project.results.rglob("trial-1.json"))
    evidence: dict[str, Any] = json.loads(path.read_text())["evidence"]
    return evidence


def test_a_run_passes_on_the_gold_answer_and_fails_on_another(
    sevro_project: SevroProject, tmp_path: Path
) -> None:
    done, _ = _run(sevro_project, GOLD)
    assert done.exit_code == 0, done.stdout + done.stderr
    evidence = _evidence(sevro_project)
    (check,) = evidence["checks"]
    assert check["status"] == "passed" and check["detail"] == "Both say 42."
    (call,) = evidence["judges"]["calls"]
    assert call["purpose"] == "sevro.semantic:response;reference:gold/answer.md"
    (observation,) = [o for o in evidence["observations"] if o["source"] == "sevro.semantic"]
    assert observation["data"]["reference"]["sha256"] == hashlib.sha256(GOLD.encode()).hexdigest()

    other = SevroProject((tmp_path / "other").resolve())
    other.root.mkdir()
    done, _ = _run(other, "Gold answer: 41.\n")  # the control: the judge sees another gold
    assert done.exit_code == 1, done.stdout + done.stderr
    assert _evidence(other)["checks"][0]["status"] == "failed"


def test_an_undeclared_evaluator_name_is_refused_before_anything_runs(
    sevro_project: SevroProject,
) -> None:
    done, case = _run(sevro_project, GOLD, evaluator={"other": "../evaluators/gold"})
    assert done.exit_code == 64, done.stdout + done.stderr
    assert f"{case}#/checks/0/configuration/reference" in done.stderr
    assert "reads evaluator directory 'gold', which the case does not declare" in done.stderr
    assert "(declared: other)" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not sevro_project.results.exists() or not any(sevro_project.results.rglob("*.json"))


def test_a_missing_reference_file_is_a_grading_error_in_the_run(
    sevro_project: SevroProject,
) -> None:
    done, _ = _run(sevro_project, None)
    assert done.exit_code == 3, done.stdout + done.stderr
    evidence = _evidence(sevro_project)
    assert evidence["grading"]["status"] == "error"
    assert "reference 'gold/answer.md' does not exist" in evidence["grading"]["error"]["message"]
    assert not evidence.get("judges", {}).get("calls")  # never asked without its reference
    assert evidence["task"]["verdict"] != "passed"


def test_a_reference_changed_during_the_trial_is_a_grading_error(
    sevro_project: SevroProject,
) -> None:
    """Without a sandbox nothing hides the evaluator directory, so the candidate rewrites the
    gold answer to its own; the engine sees the drift and the judge is never asked."""
    answer = sevro_project.root / "evaluators" / "gold" / "answer.md"
    rewrite = f"printf 'Gold answer: 42 (forged)\\n' > '{answer}'"
    sevro_project.script(default=[[{"run": {"command": rewrite}}, {"reply": {"text": RESPONSE}}]])
    done, _ = _run(sevro_project, GOLD, "--sandbox", "none", host_script=False)
    assert done.exit_code == 3, done.stdout + done.stderr
    assert answer.read_text() == "Gold answer: 42 (forged)\n"  # the candidate did change it
    evidence = _evidence(sevro_project)
    message = evidence["grading"]["error"]["message"]
    assert "evaluator directory 'gold' changed since the case was loaded" in message
    assert not evidence.get("judges", {}).get("calls")
    assert evidence["task"]["verdict"] != "passed"


def test_an_experiments_shared_evaluator_directory_can_hold_the_reference(
    sevro_project: SevroProject,
) -> None:
    """The name may be the experiment's (``evaluator`` beside ``arms``); the control: the same
    experiment without it is refused at load."""
    (sevro_project.root / "gold").mkdir()
    (sevro_project.root / "gold" / "answer.md").write_text(GOLD)
    skill = sevro_project.skill("skills/notes", "notes", "Release notes.")
    case = {"id": "c1", "prompt": "Add 19 and 23.", "fixture": {"files": {}},
            "checks": [{"id": "right-total", "grader": "sevro.semantic",
                        "configuration": {"proposition": "It gives the reference's total.",
                                          "reference": "gold/answer.md"}}],
            "requiredEvidence": []}  # fmt: skip
    document = {
        "format": "sevro.experiment.v1",
        "arms": {
            "baseline": {"skills": [], "target": None, "context": []},
            "candidate": {"skills": [str(skill)], "target": "notes", "context": []},
        },
        "evaluator": {"gold": "gold"},
        "cases": [case],
        "repetitions": 1,
    }
    host = sevro_project.script(default=[[{"reply": {"text": RESPONSE}}]])
    rules = [{"promptContains": "Gold answer: 42", "reply": PASS}]
    judge = sevro_project.write_json("judge.json", {"judges": {"semantic": rules}})
    args = ["--host-config", host, "--semantic-host", "scripted", "--semantic-host-config", judge]
    shared = sevro_project.write_json("experiment.json", document)
    done = sevro_project.run(shared, *args)
    assert done.exit_code == 0, done.stdout + done.stderr
    del document["evaluator"]
    alone = sevro_project.write_json("alone.json", document)
    refused = sevro_project.run(alone, *args)
    assert refused.exit_code == 64, refused.stdout + refused.stderr
    assert "/checks/0/configuration/reference" in refused.stderr
    assert "does not declare (declared: none)" in refused.stderr
