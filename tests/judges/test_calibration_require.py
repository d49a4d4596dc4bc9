"""``requireCalibratedJudge``: an experiment loads only with a record of this very judge, on the
required corpus, meeting every minimum; each failure is one exit-64 line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sevro_core.errors import InvocationError
from sevro_core.experiments.loading import load_experiment
from sevro_core.judges.calibrated import (
    CalibrationRequirement,
    CalibrationStatus,
    check_calibration,
    requirement_from_json,
)
from sevro_core.judges.calibration import JudgeIdentity, calibrate, record
from sevro_core.judges.corpus import load_corpus
from tests.experiments.test_experiment_loading import minimal, write
from tests.judges.standins import Judges, SemanticGrader, oracle, pair_judge

IDENTITY = JudgeIdentity("sevro.host.scripted", "judge-model", "low", "a" * 64)
ROLES = {"semantic", "comparator"}


def _record(tmp_path: Path, *, biased: bool = False) -> Path:
    corpus = load_corpus(None)
    knows = oracle(corpus)
    judges = Judges(
        (lambda role, p: "A" if role == "comparator" else knows(role, p)) if biased else knows,
        ROLES,
    )
    calibration = calibrate(
        corpus, lambda item_id: judges, ROLES, semantic=SemanticGrader(), judge_pair=pair_judge
    )
    path = tmp_path / ("biased.json" if biased else "calibration.json")
    identities = {"semantic": IDENTITY, "comparator": IDENTITY}
    path.write_text(json.dumps(record(calibration, identities, "0.1.0")))
    return path


def _experiment(tmp_path: Path, role: str, requirement: dict[str, Any]) -> Path:
    document = minimal()
    document["judges"] = {
        role: {"host": "scripted", "model": "judge-model", "requireCalibratedJudge": requirement}
    }
    return write(tmp_path, document)


def test_a_calibrated_comparator_loads_and_says_so(tmp_path: Path) -> None:
    record_path = _record(tmp_path)
    sha = load_corpus(None).sha256
    minimum = {"kappa": 0.8, "balancedAccuracy": 0.8, "maxOrderDisagreement": 0.0}
    path = _experiment(
        tmp_path,
        "comparator",
        {"calibration": "calibration.json", "corpusSha256": sha, "minimum": minimum},
    )
    settings = load_experiment(path).judges
    assert settings is not None and list(settings.require_calibrated_judge) == ["comparator"]
    required = settings.require_calibrated_judge["comparator"]
    assert required["calibration"] == str(record_path.resolve())
    requirement = requirement_from_json(required, tmp_path, source=path)
    status = check_calibration("comparator", requirement, IDENTITY, source=path)
    assert status.line() == (
        "comparator judge calibrated: κ=1.00, balanced accuracy=1.00 "
        f"on 6 item(s) of corpus {sha[:12]}"
    )
    assert status.to_json()["figures"] == {
        "agreement": 1.0,
        "balancedAccuracy": 1.0,
        "kappa": 1.0,
        "orderDisagreement": 0.0,
    }
    assert CalibrationStatus("semantic", False).line() == "semantic judge not calibrated"


def _refusal(tmp_path: Path, role: str, requirement: dict[str, Any]) -> str:
    path = _experiment(tmp_path, role, requirement)
    with pytest.raises(InvocationError) as caught:
        load_experiment(path)
    line = caught.value.one_line()
    assert "\n" not in line
    return line


def test_a_minimum_that_does_not_hold_refuses_the_experiment(tmp_path: Path) -> None:
    _record(tmp_path, biased=True)
    line = _refusal(
        tmp_path, "comparator", {"calibration": "biased.json", "minimum": {"kappa": 0.5}}
    )
    assert "kappa 0.000 is below the minimum 0.5" in line
    assert "requireCalibratedJudge" in line
    line = _refusal(
        tmp_path,
        "comparator",
        {"calibration": "biased.json", "minimum": {"maxOrderDisagreement": 0.1}},
    )
    assert "order disagreement 1.000 exceeds the maximum 0.1" in line


def test_the_semantic_judge_is_held_to_the_single_items(tmp_path: Path) -> None:
    path = _record(tmp_path, biased=True)  # biased on pairs only: singles are perfect
    held = CalibrationRequirement(path, None, {"kappa": 0.9, "balancedAccuracy": 1.0})
    status = check_calibration("semantic", held, IDENTITY, source="experiment.json")
    assert status.items == 8 and status.figures is not None
    assert status.figures["kappa"] == 1.0
    order = CalibrationRequirement(path, None, {"maxOrderDisagreement": 0.1})
    with pytest.raises(InvocationError, match="no order disagreement figure"):
        check_calibration("semantic", order, IDENTITY, source="experiment.json")


def test_a_record_of_another_role_does_not_calibrate_this_one(tmp_path: Path) -> None:
    path = _record(tmp_path)
    document = json.loads(path.read_text())
    del document["judges"]["comparator"]
    path.write_text(json.dumps(document))
    requirement = CalibrationRequirement(path, None, {})
    with pytest.raises(InvocationError, match="the record calibrated no comparator judge"):
        check_calibration("comparator", requirement, IDENTITY, source="experiment.json")


def test_another_corpus_refuses_the_experiment(tmp_path: Path) -> None:
    _record(tmp_path)
    line = _refusal(
        tmp_path, "comparator", {"calibration": "calibration.json", "corpusSha256": "b" * 64}
    )
    assert "the record's corpus is" in line and "not bbbbbbbbbbbb" in line


def test_another_judge_is_not_calibrated_by_the_record(tmp_path: Path) -> None:
    path = _record(tmp_path)
    requirement = CalibrationRequirement(path, None, {})
    for other in (
        JudgeIdentity("sevro.host.scripted", "other-model", "low", "a" * 64),
        JudgeIdentity("sevro.host.scripted", "judge-model", "high", "a" * 64),
        JudgeIdentity("sevro.host.scripted", "judge-model", "low", "c" * 64),
    ):
        with pytest.raises(InvocationError, match="the record calibrated host"):
            check_calibration("comparator", requirement, other, source="experiment.json")


def test_a_missing_or_edited_record_refuses_the_experiment(tmp_path: Path) -> None:
    assert "missing.json" in _refusal(tmp_path, "comparator", {"calibration": "missing.json"})
    path = _record(tmp_path)
    document = json.loads(path.read_text())
    document["figures"]["pairs"]["kappa"] = 0.99
    path.write_text(json.dumps(document))
    line = _refusal(tmp_path, "comparator", {"calibration": "calibration.json"})
    assert "figures do not follow from its per-item results" in line
    document = json.loads(path.read_text())
    document["judges"]["comparator"]["configurationSha256"] = "not a digest"
    path.write_text(json.dumps(document))
    assert "#/judges/comparator/configurationSha256" in _refusal(
        tmp_path, "comparator", {"calibration": "calibration.json"}
    )


def test_a_nul_byte_in_the_record_path_is_one_line(tmp_path: Path) -> None:
    assert "NUL byte" in _refusal(tmp_path, "comparator", {"calibration": "a\u0000b.json"})


def test_advisory_cannot_require_a_calibration(tmp_path: Path) -> None:
    line = _refusal(tmp_path, "advisory", {"calibration": "calibration.json"})
    assert "unknown key 'requireCalibratedJudge'" in line
