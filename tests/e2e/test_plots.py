"""The figures of real runs on the scripted host: bars and cells show the numbers the statistics
and `sevro report` give, and usage the host did not report is said, never drawn as 0."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from sevro_core.errors import InvocationError
from sevro_core.experiments.statistics import wilson_interval
from sevro_core.reporting.plots import figures_for_run
from sevro_core.testing import SevroProject, require_sandbox
from tests.e2e.helpers import NOTES_HELPED, notes_experiment, regex_check

NS = "{http://www.w3.org/2000/svg}"
ALWAYS = "printf '## Highlights\\n' > NOTES.md"
"""The scripted agent writes the right notes with or without the skill."""


def marks(svg: str, tag: str, cls: str) -> list[ET.Element]:
    root = ET.fromstring(svg)
    return [e for e in root.iter(f"{NS}{tag}") if e.get("class") == cls]


def captions(svg: str) -> str:
    return " ".join(e.text or "" for e in marks(svg, "text", "caption"))


def test_plain_run_bars_follow_the_wilson_intervals(sevro_project: SevroProject) -> None:
    good = sevro_project.case("cases/good.json", id="good", checks=[regex_check("r", "^ok$")])
    sevro_project.case("cases/bad.json", id="bad", checks=[regex_check("r", "^ok$")])
    host = sevro_project.script(
        cases={"good": [[{"reply": {"text": "ok"}}]], "bad": [[{"reply": {"text": "no"}}]]}
    )
    done = sevro_project.run(good.parent, "--host-config", host, "--trials", "3")
    assert done.exit_code == 1, done.stderr
    figures = figures_for_run(Path(done.json()["evidencePath"]).parent)
    assert set(figures) == {"passRates", "durations", "inputTokens", "outputTokens"}
    bars = {b.get("data-case"): b for b in marks(figures["passRates"], "rect", "bar")}
    assert {k: float(v.get("width", "")) for k, v in bars.items()} == {"bad": 0.0, "good": 360.0}
    whiskers = {w.get("data-case"): w for w in marks(figures["passRates"], "path", "interval")}
    for case, passes in (("good", 3), ("bad", 0)):
        interval = wilson_interval(passes, 3)
        assert interval is not None
        assert float(whiskers[case].get("data-low", "")) == interval.low
        assert float(whiskers[case].get("data-high", "")) == interval.high
    durations = marks(figures["durations"], "circle", "point")
    assert len(durations) == 6 and all(float(p.get("data-value", "")) >= 0 for p in durations)
    assert "unknown" not in captions(figures["durations"])
    # the scripted host reports no usage: six unknowns, said, no point at 0
    assert not marks(figures["inputTokens"], "circle", "point")
    assert "all trials: 6 trial(s) with unknown input tokens" in captions(figures["inputTokens"])


@pytest.fixture
def project(sevro_project: SevroProject) -> SevroProject:
    require_sandbox()
    return notes_experiment(sevro_project, None)


def experiment(project: SevroProject, command: str) -> tuple[dict[str, str], dict[str, Any]]:
    """The figures of a quick-form experiment and the statistics `sevro report` gives."""
    notes_experiment(project, command)
    done = project.run(
        "cases",
        "--skill",
        "skills/notes",
        "--host-config",
        "host.json",
        "--baseline",
        "none",
        "--trials",
        "3",
    )
    run_dir = Path(done.json()["evidencePath"]).parent
    report = project.sevro("report", run_dir, "--json")
    assert report.exit_code == 0, report.stderr
    statistics = json.loads(report.stdout)["experiments"][0]["statistics"]
    return figures_for_run(run_dir), statistics


def cells(svg: str) -> dict[str, int]:
    return {
        c.get("data-cell", ""): int(c.get("data-count", "")) for c in marks(svg, "rect", "cell")
    }


def test_an_improving_candidate_fills_the_fail_to_pass_cell(project: SevroProject) -> None:
    figures, statistics = experiment(project, NOTES_HELPED)
    key = "transitions:baseline..candidate"
    assert set(figures) == {"passRates", key, "durations", "inputTokens", "outputTokens"}
    assert cells(figures[key]) == {"bothPass": 0, "broken": 0, "fixed": 3, "bothFail": 0}
    expected = {
        (arm["id"], case["caseId"]): case["passRate"]
        for arm in statistics["arms"]
        for case in arm["cases"]
    }
    bars = marks(figures["passRates"], "rect", "bar")
    whiskers = marks(figures["passRates"], "path", "interval")
    assert len(bars) == len(whiskers) == len(expected) == 2
    for drawn, whisker in zip(bars, whiskers, strict=True):
        rate = expected[(drawn.get("data-arm"), drawn.get("data-case"))]
        assert float(drawn.get("width", "")) == pytest.approx(rate["rate"] * 360, abs=0.005)
        assert float(whisker.get("data-low", "")) == rate["interval"]["low"]
        assert float(whisker.get("data-high", "")) == rate["interval"]["high"]
    assert [(b.get("data-case"), b.get("data-arm")) for b in bars] == [
        ("notes", "baseline"),
        ("notes", "candidate"),
    ]
    patterns = {b.get("data-arm"): b.get("fill", "").rsplit("-", 1)[1] for b in bars}
    points = marks(figures["durations"], "circle", "point")
    drawn = {p.get("data-arm"): p.get("fill", "").rsplit("-", 1)[1] for p in points}
    assert drawn == patterns, "one pattern per arm in every figure"
    assert patterns["baseline"] != patterns["candidate"]


def test_a_candidate_that_changes_nothing_leaves_the_fail_to_pass_cell_empty(
    project: SevroProject,
) -> None:
    figures, _ = experiment(project, ALWAYS)
    counts = cells(figures["transitions:baseline..candidate"])
    assert counts == {"bothPass": 3, "broken": 0, "fixed": 0, "bothFail": 0}


def test_a_directory_without_a_run_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvocationError):
        figures_for_run(tmp_path)
