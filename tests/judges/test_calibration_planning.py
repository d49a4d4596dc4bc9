"""A run with a comparator checks its required calibration against the judge it configured (the
identity is known only then) and records whether each verdict-bearing judge was calibrated."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from attrs import evolve

from sevro_core.errors import InvocationError
from sevro_core.formats.schemas import compile_schema, load_schema
from sevro_core.judges.calibrated import judge_calibrations
from sevro_core.judges.calibration import calibrate, judge_identity, record
from sevro_core.judges.corpus import load_corpus
from sevro_core.judges.routes import JudgeRoutes, JudgeRouteSpec, JudgeSettings, configure_judges
from sevro_core.plugin.manager import load_plugins
from sevro_core.plugin.protocols import HostOptions
from tests.judges.standins import Judges, SemanticGrader, oracle, pair_judge

CONFIG = {
    "format": "sevro.scripted-host.v1",
    "model": "judge-model",
    "judges": {"comparator": [{"reply": "A"}]},
}
SPEC = JudgeRouteSpec("comparator", "scripted", effort="low", config=CONFIG, config_source="j.json")


def _routes(spec: JudgeRouteSpec) -> JudgeRoutes:
    return configure_judges(load_plugins(), [spec], ("sevro.host.scripted", HostOptions()))


def _record(tmp_path: Path, routes: JudgeRoutes) -> Path:
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
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(record(calibration, {"comparator": identity}, "0.1.0")))
    return path


def _required(path: Path, **minimum: float) -> JudgeSettings:
    required: dict[str, Any] = {"calibration": str(path), "minimum": minimum}
    return JudgeSettings(routes=(SPEC,), require_calibrated_judge={"comparator": required})


def test_the_configured_comparator_is_the_calibrated_one(tmp_path: Path) -> None:
    routes = _routes(SPEC)
    path = _record(tmp_path, routes)
    (status,) = judge_calibrations(_required(path, kappa=0.8), routes, source="e.json")
    assert status.calibrated
    assert status.line().startswith("comparator judge calibrated: κ=1.00, balanced accuracy=1.00")
    document = [status.to_json()]
    schema = load_schema("run-evidence.v1")["properties"]["judgeCalibration"]
    assert compile_schema(schema).is_valid(document)


def test_a_comparator_without_a_requirement_is_said_to_be_uncalibrated() -> None:
    (status,) = judge_calibrations(JudgeSettings(routes=(SPEC,)), _routes(SPEC), source="e.json")
    assert status.to_json() == {"role": "comparator", "calibrated": False}
    assert status.line() == "comparator judge not calibrated"
    assert judge_calibrations(JudgeSettings(), JudgeRoutes(), source="e.json") == ()


@pytest.mark.parametrize(
    "other",
    [
        evolve(SPEC, model="other-model"),
        evolve(SPEC, effort="high"),
        evolve(SPEC, config={**CONFIG, "judges": {"comparator": [{"reply": "B"}]}}),
    ],
    ids=["model", "effort", "configuration"],
)
def test_another_judge_than_the_calibrated_one_is_refused(
    tmp_path: Path, other: JudgeRouteSpec
) -> None:
    path = _record(tmp_path, _routes(SPEC))
    with pytest.raises(InvocationError, match=r"the record calibrated host sevro\.host\.scripted"):
        judge_calibrations(_required(path), _routes(other), source="e.json")
