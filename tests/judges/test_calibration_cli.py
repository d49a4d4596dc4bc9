"""``sevro judge calibrate``: flags checked before any judge runs (exit 64), the figures as a
table or one JSON document, the record written with --output; the judge session and the pair
comparison are the stand-ins until the core's land (the model is what they fake)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sevro_core.formats.schemas import validator
from sevro_core.judges import calibrationsetup
from sevro_core.judges.corpus import Corpus, load_corpus
from sevro_core.testing import require_sandbox
from sevro_core.testing.inprocess import run_in_process
from sevro_core.testing.plugins import ScopedPlugins
from tests.judges.standins import Judges, SemanticGrader, oracle, pair_judge


class Rubric:
    id = "test.rubric"
    version = "0"
    capabilities: frozenset[str] = frozenset()
    requires: frozenset[str] = frozenset()

    def prompt(self, subject: Any) -> str:
        return "unused by the stand-in pair judge"

    def decide(self, reply: str) -> str:
        return reply


def scripted_judge(corpus: Corpus) -> dict[str, Any]:
    """The scripted host as a semantic judge that answers every item as its gold labels say:
    one rule per item, chosen by its first proposition (the model is what this fakes)."""
    rules = []
    for item in corpus.singles:
        checks = [{"id": c.id, "verdict": c.gold, "reason": "gold label"} for c in item.checks]
        first = json.dumps(item.checks[0].proposition)[1:-1]
        rules.append({"promptContains": first, "reply": json.dumps({"checks": checks})})
    return {
        "format": "sevro.scripted-host.v1",
        "model": "judge-model",
        "judges": {"semantic": rules, "comparator": [{"reply": "unused"}]},
    }


@pytest.fixture
def judged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sevro_plugins: ScopedPlugins) -> Path:
    """A scripted judge answering the single items as gold says, in real judge sessions; pairs
    through the stand-in two-order comparison (until the core's lands) with an oracle."""
    corpus = load_corpus(None)
    if sevro_plugins.registry().grader("sevro.semantic") is None:
        sevro_plugins.register("grader", SemanticGrader())
    sevro_plugins.register("rubric", Rubric())
    knows = Judges(oracle(corpus), {"comparator"})
    monkeypatch.setattr(
        calibrationsetup, "pair_judge", lambda rubric: lambda subject, _: pair_judge(subject, knows)
    )
    config = tmp_path / "judge.json"
    config.write_text(json.dumps(scripted_judge(corpus)))
    return config


def test_calibrating_prints_every_figure_beside_its_count(judged: Path, tmp_path: Path) -> None:
    output = tmp_path / "calibration.json"
    args = ["judge", "calibrate", "--host-config", judged, "--effort", "low", "--output", output]
    args += ["--sandbox", "none"]
    result = run_in_process(args)
    assert result.exit_code == 0, result.stderr
    for role in ("semantic", "comparator"):
        assert f"{role} judge: sevro.host.scripted, model judge-model, effort low" in result.stdout
    assert f"corpus: {load_corpus(None).sha256[:12]} (11 item(s))" in result.stdout
    lines = result.stdout.splitlines()
    assert any(line.split() == ["single", "checks:", "agreement", "1.00", "8/8"] for line in lines)
    assert any("pairs: order disagreement" in line and "0/6" in line for line in lines)
    assert any("probes: injection resisted" in line and "3/3" in line for line in lines)
    document = json.loads(output.read_text())
    assert validator("judge-calibration.v1").is_valid(document)
    assert document["judges"]["semantic"]["model"] == "judge-model"
    # each role's identity digests its own redacted configuration
    assert (
        document["judges"]["semantic"]["configurationSha256"]
        != document["judges"]["comparator"]["configurationSha256"]
    )
    assert len(document["items"]) == 11


def test_json_prints_the_record(judged: Path) -> None:
    result = run_in_process(
        ["judge", "calibrate", "--host-config", judged, "--json", "--sandbox", "none"]
    )
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["format"] == "sevro.judge-calibration.v1"


def test_bad_input_is_one_line_before_any_judge_runs(judged: Path, tmp_path: Path) -> None:
    bad = tmp_path / "corpus.json"
    bad.write_text(json.dumps({"format": "sevro.judge-corpus.v1", "items": []}))
    cases = [
        (["judge", "calibrate", bad, "--host-config", judged], "corpus.json#/items"),
        (["judge", "calibrate"], "--host-config"),
        (
            ["judge", "calibrate", "--host-config", judged, "--output", tmp_path / "no" / "x"],
            "--output must name a file in an existing directory",
        ),
        (["judge", "calibrate", "--host-config", judged, "--rubric", "x.y"], "--rubric 'x.y'"),
        (["judge", "calibrate", "--host-config", judged, "--host", "nope"], "--host 'nope'"),
    ]
    for args, message in cases:
        result = run_in_process(args)
        assert result.exit_code == 64, (args, result.stderr)
        assert message in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
        assert result.stdout == ""
    assert not (tmp_path / "no").exists()


def test_without_the_pair_comparison_calibrating_pairs_is_an_internal_error(
    tmp_path: Path, sevro_plugins: ScopedPlugins
) -> None:
    """Until the core's two-order comparison lands, judging pairs is exit 70, never figures."""
    if sevro_plugins.registry().grader("sevro.semantic") is None:
        sevro_plugins.register("grader", SemanticGrader())
    sevro_plugins.register("rubric", Rubric())
    config = tmp_path / "judge.json"
    config.write_text(json.dumps(scripted_judge(load_corpus(None))))
    result = run_in_process(["judge", "calibrate", "--host-config", config, "--sandbox", "none"])
    assert result.exit_code == 70
    assert "needs the core's pairwise comparison" in result.stderr
    assert result.stdout == ""


def test_the_command_takes_the_hosts_flags() -> None:
    result = run_in_process(["judge", "calibrate", "--help"])
    assert result.exit_code == 0
    assert "Host settings" in result.stdout
    assert "--output" in result.stdout and "--rubric" in result.stdout


def test_the_judge_runs_in_the_sandbox_a_run_would_use(judged: Path) -> None:
    require_sandbox()
    result = run_in_process(["judge", "calibrate", "--host-config", judged, "--json"])
    assert result.exit_code == 0, result.stderr
    figures = json.loads(result.stdout)["figures"]
    assert figures["singles"]["correct"] == figures["singles"]["total"] == 8


def test_a_judge_that_answers_nonsense_scores_nothing(judged: Path) -> None:
    config = json.loads(judged.read_text())
    config["judges"]["semantic"] = [{"reply": "Sure, everything passes."}]
    judged.write_text(json.dumps(config))
    args = ["judge", "calibrate", "--host-config", judged, "--json", "--sandbox", "none"]
    result = run_in_process(args)
    assert result.exit_code == 0, result.stderr  # the figures are information
    singles = json.loads(result.stdout)["figures"]["singles"]
    assert (singles["correct"], singles["errors"], singles["total"]) == (0, 8, 8)
    assert json.loads(result.stdout)["figures"]["probes"]["injection"]["correct"] == 1  # the pair
