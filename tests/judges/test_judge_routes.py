"""Judge routes end to end with the scripted host as the judge: a grader that needs a judge is
refused without one (exit 64), each judge call runs once per distinct prompt in its own empty
workspace, and the calls, their prompts, replies and routes are kept with the trial's evidence."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from sevro_core.testing import SevroProject

PLUGIN = '''
from sevro_core.api import (
    SEMANTIC_JUDGE_CAPABILITY, SEMANTIC_ROLE, CheckOutcome, CheckStatus, GradingError, hookimpl,
)


class AsksJudge:
    """Passes when the semantic judge answers 'yes' to the configured question."""

    id = "acme.asks-judge"
    version = "1.0.0"
    capabilities = frozenset()
    requires = frozenset({SEMANTIC_JUDGE_CAPABILITY})
    stage = 40

    def compile(self, configuration):
        question = configuration["question"]

        class Compiled:
            def grade(self, check_id, view):
                reply = view.judges.ask(SEMANTIC_ROLE, question, purpose="acme:" + check_id)
                if not reply.usable:
                    raise GradingError(f"judge failed: {reply.error}")
                seen = sorted(c.id for c in view.checks)
                ok = reply.text.strip() == "yes" and view.workspace.name != ""
                return CheckOutcome(
                    check_id, "acme.asks-judge",
                    CheckStatus.PASSED if ok else CheckStatus.FAILED,
                    detail=f"judge said {reply.text!r}; batch {seen}",
                )

        return Compiled()


@hookimpl
def sevro_register_graders(register):
    register(AsksJudge())
'''


def _setup(project: SevroProject, rules: list[dict[str, str]]) -> tuple[Path, Path, Path]:
    plugin = project.root / "asks_judge.py"
    plugin.write_text(PLUGIN, encoding="utf-8")
    checks = [
        {"id": "first", "grader": "acme.asks-judge", "configuration": {"question": "Is it good?"}},
        {"id": "again", "grader": "acme.asks-judge", "configuration": {"question": "Is it good?"}},
        {"id": "other", "grader": "acme.asks-judge", "configuration": {"question": "Is it bad?"}},
    ]
    case = project.case(checks=checks)
    host = project.script(default=[[{"reply": {"text": "done"}}]])
    judge = project.write_json("judge.json", {"judges": {"semantic": rules}})
    return plugin, case, host, judge  # type: ignore[return-value]


def _trial(project: SevroProject) -> dict[str, Any]:
    paths = sorted(project.results.rglob("trial-1.json"))
    assert len(paths) == 1, paths
    return json.loads(paths[0].read_text())


def _run(project: SevroProject) -> dict[str, Any]:
    paths = sorted(project.results.rglob("run.json"))
    return json.loads(paths[-1].read_text())


def test_a_check_that_needs_a_judge_is_refused_without_one(sevro_project: SevroProject) -> None:
    plugin, case, host, _ = _setup(sevro_project, [{"reply": "yes"}])
    done = sevro_project.run(case, "--host-config", host, "--plugin", plugin)
    assert done.exit_code == 64, done
    assert "needs a semantic judge" in done.stderr and "--semantic-host" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not sevro_project.results.exists() or not any(sevro_project.results.rglob("*.json"))


def test_judge_calls_are_asked_once_per_prompt_and_kept_in_evidence(
    sevro_project: SevroProject,
) -> None:
    rules = [{"promptContains": "good", "reply": "yes"}, {"promptContains": "bad", "reply": "no"}]
    plugin, case, host, judge = _setup(sevro_project, rules)
    done = sevro_project.run(
        case, "--host-config", host, "--plugin", plugin,
        "--semantic-host", "scripted", "--semantic-host-config", judge,
        "--semantic-model", "judge-model",
    )  # fmt: skip
    assert done.exit_code == 1, done  # "other" asked "Is it bad?" and the judge said no
    trial = _trial(sevro_project)
    evidence = trial["evidence"]
    checks = {c["id"]: c for c in evidence["checks"]}
    assert checks["first"]["status"] == checks["again"]["status"] == "passed"
    assert checks["other"]["status"] == "failed"
    assert "batch ['again', 'first', 'other']" in checks["first"]["detail"]
    calls = evidence["judges"]["calls"]
    assert [(c["role"], c["purpose"]) for c in calls] == [
        ("semantic", "acme:first"),
        ("semantic", "acme:other"),
    ]  # "again" asked the same prompt as "first": answered from the same call
    semantic = {"role": "semantic", "host": "sevro.host.scripted", "model": "judge-model",
                "effort": "none"}  # fmt: skip
    assert all(c["route"] == semantic for c in calls)
    assert evidence["routes"][1:] == [semantic]
    assert set(evidence["judges"]["usage"]) == {"semantic"}
    assert evidence["judges"]["usage"]["semantic"]["complete"] is False  # unknown, never 0
    refs = {a["id"]: a for a in evidence["artifactRefs"]}
    prompt = refs["sevro.judge.semantic.1.prompt"]
    blob = next(sevro_project.results.rglob(Path(prompt["path"]).name))
    assert blob.read_text() == "Is it good?"
    assert "sevro.judge.semantic.2.reply" in refs
    run = _run(sevro_project)
    assert semantic in run["routes"]
    assert run["configuration"]["redacted"]["judges"]["semantic"]["route"] == semantic
    report = sevro_project.sevro("report", sevro_project.results, "--json", "--plugin", plugin)
    assert report.exit_code == 0, report
    (row,) = report.json()["rows"]
    assert row["judgeUsage"] == {
        "semantic": {
            "inputTokens": None,
            "outputTokens": None,
            "costUsd": None,
            "reportedCostUsd": None,
            "calls": 1,
        }
    }  # the scripted judge reports no usage: unknown, never 0
    assert row["inputTokens"] is None  # the candidate's usage is its own
    markdown = sevro_project.sevro("report", sevro_project.results, "--plugin", plugin)
    assert "## Judge usage" in markdown.stdout and "| example | semantic | 1 |" in markdown.stdout


def test_a_judge_that_gives_no_answer_is_a_grading_error(sevro_project: SevroProject) -> None:
    plugin, case, host, judge = _setup(sevro_project, [{"promptContains": "nothing", "reply": "x"}])
    done = sevro_project.run(
        case, "--host-config", host, "--plugin", plugin,
        "--semantic-host", "scripted", "--semantic-host-config", judge,
    )  # fmt: skip
    assert done.exit_code == 3, done
    evidence = _trial(sevro_project)["evidence"]
    assert evidence["grading"]["status"] == "error"
    assert "no judges.semantic rule" in evidence["grading"]["error"]["message"]
    assert evidence["task"]["verdict"] != "passed"


def test_the_judge_route_enters_the_evaluation_identity(sevro_project: SevroProject) -> None:
    plugin, case, host, judge = _setup(sevro_project, [{"reply": "yes"}])
    base = [case, "--host-config", host, "--plugin", plugin, "--semantic-host", "scripted",
            "--semantic-host-config", judge, "--dry"]  # fmt: skip
    digests = set()
    for model in ("one", "two"):
        done = sevro_project.run(*base, "--semantic-model", model)
        assert done.exit_code == 0, done
        digests.add(_run(sevro_project)["evaluationIdentity"]["digest"])
        shutil.rmtree(sevro_project.results)
    assert len(digests) == 2


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--semantic-model", "m"], "--semantic-model needs --semantic-host"),
        (["--advisory-effort", "low"], "--advisory-effort needs --advisory-host"),
        (["--advisory-exclude", "notes"], "--advisory-exclude needs an advisory judge"),
        (["--advisory-exclude", "../x"], "must be a relative path inside the workspace"),
        (["--semantic-host", "nosuch"], "--semantic-host 'nosuch' is not installed"),
        (["--semantic-host", "scripted"], "needs 'judges.semantic' rules"),
        (
            ["--comparator-host", "scripted", "--comparator-host-config", "JUDGE"],
            "a comparator judge compares the arms of an experiment",
        ),
    ],
)
def test_bad_judge_options_are_one_line_and_exit_64(
    sevro_project: SevroProject, flags: list[str], message: str
) -> None:
    judge = sevro_project.write_json("j.json", {"judges": {"comparator": [{"reply": "A"}]}})
    case = sevro_project.case()
    host = sevro_project.script(default=[[{"reply": {"text": "done"}}]])
    flags = [str(judge) if f == "JUDGE" else f for f in flags]
    done = sevro_project.run(case, "--host-config", host, *flags)
    assert done.exit_code == 64, done
    assert message in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def _experiment(project: SevroProject, judges: dict[str, Any]) -> Path:
    skill = project.skill("skills/tidy", "tidy", "Tidies things.")
    project.case("cases/example.json", checks=[
        {"id": "good", "grader": "acme.asks-judge", "configuration": {"question": "Is it good?"}},
    ])  # fmt: skip
    return project.write_json(
        "experiment.json",
        {
            "format": "sevro.experiment.v1",
            "arms": {
                "baseline": {"skills": [], "target": None, "context": []},
                "candidate": {"skills": [str(skill)], "target": "tidy", "context": []},
            },
            "cases": ["cases"],
            "repetitions": 1,
            "judges": judges,
        },
    )


def test_an_experiment_file_chooses_its_judges(sevro_project: SevroProject) -> None:
    plugin, _, host, _ = _setup(sevro_project, [])
    sevro_project.write_json("jj.json", {"judges": {"semantic": [{"reply": "yes"}]}})
    experiment = _experiment(
        sevro_project,
        {"semantic": {"host": "scripted", "model": "file-judge", "hostConfig": "jj.json"}},
    )
    done = sevro_project.run(experiment, "--host-config", host, "--plugin", plugin)
    assert done.exit_code == 0, done
    run = _run(sevro_project)
    assert {"role": "semantic", "host": "sevro.host.scripted", "model": "file-judge",
            "effort": "none"} in run["routes"]  # fmt: skip
    trials = sorted(sevro_project.results.rglob("trial-1.json"))
    assert len(trials) == 2  # one per arm, each judged
    for path in trials:
        assert json.loads(path.read_text())["evidence"]["judges"]["calls"][0]["role"] == "semantic"


def test_a_judge_set_by_both_the_file_and_a_flag_is_refused(sevro_project: SevroProject) -> None:
    plugin, _, host, judge = _setup(sevro_project, [{"reply": "yes"}])
    experiment = _experiment(
        sevro_project, {"semantic": {"host": "scripted", "hostConfig": "judge.json"}}
    )
    done = sevro_project.run(
        experiment, "--host-config", host, "--plugin", plugin, "--semantic-host", "scripted",
        "--semantic-host-config", judge,
    )  # fmt: skip
    assert done.exit_code == 64, done
    assert "the semantic judge is set both by --semantic-host and in the experiment file" in (
        done.stderr
    )
    missing = _experiment(
        sevro_project, {"semantic": {"host": "scripted", "hostConfig": "nope.json"}}
    )
    done = sevro_project.run(missing, "--host-config", host, "--plugin", plugin)
    assert done.exit_code == 64 and "nope.json does not exist" in done.stderr, done
