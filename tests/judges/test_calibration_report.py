"""End to end: an experiment whose comparator must be calibrated runs only with the judge the
record calibrated, and run.json and ``sevro report`` say whether it was calibrated and how well."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sevro_core.judges.calibration import calibrate, judge_identity, record
from sevro_core.judges.corpus import load_corpus
from sevro_core.judges.routes import DEFAULT_RUBRIC, JudgeRouteSpec, configure_judges
from sevro_core.plugin.manager import load_plugins
from sevro_core.plugin.protocols import HostOptions
from sevro_core.testing import SevroProject
from tests.judges.standins import Judges, SemanticGrader, oracle, pair_judge

RULES = [{"reply": "A"}]
RUBRIC = f'''
from sevro_core.api import hookimpl


class Rubric:
    id = "{DEFAULT_RUBRIC}"
    version = "0"
    capabilities = frozenset()
    requires = frozenset()

    def prompt(self, subject):
        return "Which is better, A or B?"

    def decide(self, reply):
        return reply.strip()


@hookimpl
def sevro_register_rubrics(register):
    register(Rubric())
'''


def _plugin_args(project: SevroProject) -> list[str | Path]:
    """The default rubric as a local plugin, unless one is installed."""
    if load_plugins().rubric(DEFAULT_RUBRIC) is not None:
        return []
    path = project.root / "rubric_plugin.py"
    path.write_text(RUBRIC)
    return ["--plugin", path]


def _record(project: SevroProject) -> None:
    """A calibration record of the scripted comparator configured by RULES (figures: perfect)."""
    spec = JudgeRouteSpec("comparator", "scripted", config={"judges": {"comparator": RULES}})
    routes = configure_judges(load_plugins(), [spec], ("sevro.host.scripted", HostOptions()))
    corpus = load_corpus(None)
    judges = Judges(oracle(corpus), {"semantic", "comparator"})
    calibration = calibrate(
        corpus,
        lambda item_id: judges,
        ("semantic", "comparator"),
        semantic=SemanticGrader(),
        judge_pair=pair_judge,
    )
    identity = judge_identity(routes.routes["comparator"].host)
    project.write_json("calibration.json", record(calibration, {"comparator": identity}, "0"))


def _experiment(project: SevroProject, comparator: dict[str, Any]) -> Path:
    project.write_json("comparator.json", {"judges": {"comparator": RULES}})
    skill = project.skill("skills/tidy", "tidy", "Tidies things.")
    project.case("cases/example.json")
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
            "judges": {
                "comparator": {"host": "scripted", "hostConfig": "comparator.json", **comparator}
            },
        },
    )


def _report(project: SevroProject, *plugin: str | Path) -> str:
    done = project.sevro("report", project.results, *plugin)
    assert done.exit_code == 0, done
    return done.stdout


def test_a_calibrated_comparator_is_reported_with_its_figures(
    sevro_project: SevroProject,
) -> None:
    _record(sevro_project)
    plugin = _plugin_args(sevro_project)
    required = {"calibration": "calibration.json", "minimum": {"kappa": 0.8}}
    experiment = _experiment(sevro_project, {"requireCalibratedJudge": required})
    host = sevro_project.script(default=[[{"reply": {"text": "ready"}}]])
    done = sevro_project.run(experiment, "--host-config", host, *plugin)
    assert done.exit_code in (0, 1), done
    (run_file,) = sevro_project.results.rglob("run.json")
    (status,) = json.loads(run_file.read_text())["judgeCalibration"]
    sha = load_corpus(None).sha256
    assert status == {
        "role": "comparator",
        "calibrated": True,
        "corpusSha256": sha,
        "items": 6,
        "figures": {
            "agreement": 1.0,
            "balancedAccuracy": 1.0,
            "kappa": 1.0,
            "orderDisagreement": 0.0,
        },
    }
    line = "comparator judge calibrated: κ=1.00, balanced accuracy=1.00 on 6 item(s) of corpus"
    assert f"- {line} {sha[:12]}" in _report(sevro_project, *plugin)


def test_another_judge_than_the_calibrated_one_does_not_run(sevro_project: SevroProject) -> None:
    _record(sevro_project)
    plugin = _plugin_args(sevro_project)
    required = {"calibration": "calibration.json"}
    experiment = _experiment(
        sevro_project, {"model": "other-model", "requireCalibratedJudge": required}
    )
    host = sevro_project.script(default=[[{"reply": {"text": "ready"}}]])
    done = sevro_project.run(experiment, "--host-config", host, *plugin)
    assert done.exit_code == 64, done
    assert "the comparator judge is host sevro.host.scripted, model other-model" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not list(sevro_project.results.rglob("run.json"))


def test_an_uncalibrated_comparator_is_said_to_be_uncalibrated(
    sevro_project: SevroProject,
) -> None:
    plugin = _plugin_args(sevro_project)
    experiment = _experiment(sevro_project, {})
    host = sevro_project.script(default=[[{"reply": {"text": "ready"}}]])
    done = sevro_project.run(experiment, "--host-config", host, *plugin)
    assert done.exit_code in (0, 1), done
    assert "- comparator judge not calibrated" in _report(sevro_project, *plugin)


SEMANTIC_RULES = [{"reply": '{"checks": []}'}]


def _semantic_record(project: SevroProject, *, wrong: bool = False) -> None:
    """A record of the scripted semantic judge configured by SEMANTIC_RULES; its single items
    judged as gold says, or (``wrong``) every check judged against its gold label."""
    config = {"judges": {"semantic": SEMANTIC_RULES}}
    spec = JudgeRouteSpec("semantic", "scripted", config=config)
    routes = configure_judges(load_plugins(), [spec], ("sevro.host.scripted", HostOptions()))
    corpus = load_corpus(None)
    knows = oracle(corpus)

    def answer(role: str, prompt: str) -> str | None:
        said = knows(role, prompt)
        if not wrong or role != "semantic" or said is None:
            return said
        flipped = {"pass": "fail", "fail": "pass"}
        checks = json.loads(said)["checks"]
        return json.dumps({"checks": [{**c, "verdict": flipped[c["verdict"]]} for c in checks]})

    judges = Judges(answer, {"semantic", "comparator"})
    calibration = calibrate(
        corpus,
        lambda item_id: judges,
        ("semantic", "comparator"),
        semantic=SemanticGrader(),
        judge_pair=pair_judge,
    )
    identity = judge_identity(routes.routes["semantic"].host)
    project.write_json("calibration.json", record(calibration, {"semantic": identity}, "0"))


def _semantic_experiment(project: SevroProject, semantic: dict[str, Any]) -> Path:
    project.write_json("semantic.json", {"judges": {"semantic": SEMANTIC_RULES}})
    skill = project.skill("skills/tidy", "tidy", "Tidies things.")
    project.case("cases/example.json")
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
            "judges": {"semantic": {"host": "scripted", "hostConfig": "semantic.json", **semantic}},
        },
    )


def test_a_calibrated_semantic_judge_is_held_to_the_single_items_and_reported(
    sevro_project: SevroProject,
) -> None:
    _semantic_record(sevro_project)
    required = {"calibration": "calibration.json", "minimum": {"kappa": 0.8, "agreement": 1.0}}
    experiment = _semantic_experiment(sevro_project, {"requireCalibratedJudge": required})
    host = sevro_project.script(default=[[{"reply": {"text": "ready"}}]])
    done = sevro_project.run(experiment, "--host-config", host)
    assert done.exit_code in (0, 1), done
    (run_file,) = sevro_project.results.rglob("run.json")
    (status,) = json.loads(run_file.read_text())["judgeCalibration"]
    sha = load_corpus(None).sha256
    assert status == {
        "role": "semantic",
        "calibrated": True,
        "corpusSha256": sha,
        "items": 8,
        "figures": {"agreement": 1.0, "balancedAccuracy": 1.0, "kappa": 1.0},
    }
    line = "semantic judge calibrated: κ=1.00, balanced accuracy=1.00 on 8 item(s) of corpus"
    assert f"- {line} {sha[:12]}" in _report(sevro_project)


def test_another_semantic_judge_than_the_calibrated_one_does_not_run(
    sevro_project: SevroProject,
) -> None:
    _semantic_record(sevro_project)
    required = {"calibration": "calibration.json"}
    experiment = _semantic_experiment(
        sevro_project, {"model": "other-model", "requireCalibratedJudge": required}
    )
    host = sevro_project.script(default=[[{"reply": {"text": "ready"}}]])
    done = sevro_project.run(experiment, "--host-config", host)
    assert done.exit_code == 64, done
    assert "the semantic judge is host sevro.host.scripted, model other-model" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not list(sevro_project.results.rglob("run.json"))


def test_a_semantic_judge_below_the_minimum_does_not_run(sevro_project: SevroProject) -> None:
    _semantic_record(sevro_project, wrong=True)
    host = sevro_project.script(default=[[{"reply": {"text": "ready"}}]])
    for minimum, message in (
        ({"agreement": 0.5}, "agreement 0.000 is below the minimum 0.5"),
        ({"maxOrderDisagreement": 0.5}, "no order disagreement figure"),
    ):
        required = {"calibration": "calibration.json", "minimum": minimum}
        experiment = _semantic_experiment(sevro_project, {"requireCalibratedJudge": required})
        done = sevro_project.run(experiment, "--host-config", host)
        assert done.exit_code == 64, done
        assert message in done.stderr and "/judges/semantic/requireCalibratedJudge" in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
    assert not list(sevro_project.results.rglob("run.json"))
    experiment = _semantic_experiment(sevro_project, {})  # control: without the requirement
    done = sevro_project.run(experiment, "--host-config", host)
    assert done.exit_code in (0, 1), done
    assert "- semantic judge not calibrated" in _report(sevro_project)
