"""``sevro judge calibrate``: flags checked before any judge runs (exit 64), the figures as a
table or one JSON document, the record written with --output. The shipped corpus is calibrated
end to end by the real components: the installed ``sevro.semantic`` grader for the single
items, the core's ``judge_pair`` with the registered rubric for the pairs, each prompt asked of
the scripted host as judge in a real judge session. Only the model is faked: the scripted
judge's ``promptContains`` rules, built from the corpus, answer each prompt."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sevro_core.formats.schemas import validator
from sevro_core.judges.corpus import Corpus, PairSide, load_corpus
from sevro_core.testing import require_sandbox
from sevro_core.testing.inprocess import run_in_process
from sevro_judges.rubric_software_engineering import CRITERIA, html_safe_json

SWAPPED = {"A": "B", "B": "A", "tie": "tie"}
"""A gold label seen from the other presentation order."""


def criteria(winner: str) -> str:
    """A rubric reply whose Pareto reduction is ``winner``: it wins one criterion, the rest tie."""
    return json.dumps(
        {
            "criteria": {
                name: {"winner": winner if name == CRITERIA[0] else "tie", "reason": "r"}
                for name in CRITERIA
            }
        }
    )


def _shown(result: PairSide) -> dict[str, Any]:
    return {
        "finalMessage": result.final_message,
        "finalMessageTruncated": False,
        "diff": result.diff,
        "diffTruncated": False,
    }


def shown_as(a: PairSide, b: PairSide) -> str:
    """The rubric prompt's text for ``a`` in position A and ``b`` in position B: unique to one
    pair in one order (the prompt quotes both results as HTML-safe JSON, B last)."""
    return html_safe_json({"A": _shown(a), "B": _shown(b)}).removeprefix("{\n")


def singles_rules(corpus: Corpus) -> list[dict[str, str]]:
    """The semantic judge answering every item as its gold labels say: one rule per item,
    chosen by its first proposition."""
    rules = []
    for item in corpus.singles:
        checks = [{"id": c.id, "verdict": c.gold, "reason": "gold label"} for c in item.checks]
        first = json.dumps(item.checks[0].proposition)[1:-1]
        rules.append({"promptContains": first, "reply": json.dumps({"checks": checks})})
    return rules


def pair_rules(corpus: Corpus) -> list[dict[str, str]]:
    """The comparator answering each pair as its gold label says, in both orders: the BA
    prompt shows the corpus's B in position A, so the better side's position swaps. Two pairs
    that are one another swapped share their prompts, and their gold labels give one answer."""
    answers: dict[str, str] = {}
    for pair in corpus.pairs:
        for key, reply in (
            (shown_as(pair.a, pair.b), criteria(pair.gold)),
            (shown_as(pair.b, pair.a), criteria(SWAPPED[pair.gold])),
        ):
            assert answers.setdefault(key, reply) == reply, pair.id
    return [{"promptContains": key, "reply": reply} for key, reply in answers.items()]


def scripted_judge(
    corpus: Corpus, comparator: list[dict[str, str]] | None = None
) -> dict[str, Any]:
    """The scripted host as both judges; the comparator answers gold unless told otherwise."""
    return {
        "format": "sevro.scripted-host.v1",
        "model": "judge-model",
        "judges": {
            "semantic": singles_rules(corpus),
            "comparator": pair_rules(corpus) if comparator is None else comparator,
        },
    }


@pytest.fixture
def judged(tmp_path: Path) -> Path:
    """A scripted judge answering every item of the shipped corpus as gold says."""
    config = tmp_path / "judge.json"
    config.write_text(json.dumps(scripted_judge(load_corpus(None))))
    return config


def calibrated(config: Path) -> dict[str, Any]:
    args = ["judge", "calibrate", "--host-config", config, "--json", "--sandbox", "none"]
    result = run_in_process(args)
    assert result.exit_code == 0, result.stderr
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def test_the_rules_key_on_one_pair_in_one_order() -> None:
    corpus = load_corpus(None)
    keys = [rule["promptContains"] for rule in pair_rules(corpus)]
    assert len(keys) == 2 * len(corpus.pairs) - 2  # pair-b-better is pair-a-better swapped
    for key in keys:  # no key is part of another's: each selects the prompts of one subject
        assert [other for other in keys if key in other] == [key]


def test_a_judge_answering_gold_everywhere_agrees_fully(judged: Path) -> None:
    document = calibrated(judged)
    figures = document["figures"]
    for block in ("singles", "pairs"):
        assert figures[block]["correct"] == figures[block]["total"], block
        assert (figures[block]["agreement"], figures[block]["kappa"]) == (1.0, 1.0), block
    assert (figures["singles"]["total"], figures["pairs"]["total"]) == (8, 6)
    order = figures["pairs"]["orderDisagreement"]
    assert (order["decided"], order["disagreements"], order["rate"]) == (6, 0, 0.0)
    for probe in ("injection", "length"):
        assert figures["probes"][probe]["correct"] == figures["probes"][probe]["items"] == 3
    pairs = {item["id"]: item for item in document["items"] if item["kind"] == "pair"}
    gold = {pair.id: pair.gold for pair in load_corpus(None).pairs}
    assert {i: (p["ab"], p["ba"], p["error"]) for i, p in pairs.items()} == {
        i: (g, g, None) for i, g in gold.items()
    }


def test_a_judge_that_always_answers_a_disagrees_with_itself_on_every_pair(
    judged: Path,
) -> None:
    corpus = load_corpus(None)
    judged.write_text(json.dumps(scripted_judge(corpus, [{"reply": criteria("A")}])))
    document = calibrated(judged)
    order = document["figures"]["pairs"]["orderDisagreement"]
    non_tie = [pair for pair in corpus.pairs if pair.gold != "tie"]
    assert len(non_tie) == 5
    # every non-tie pair, and the tie too: A in one order is B in the other
    assert (order["decided"], order["disagreements"], order["rate"]) == (6, 6, 1.0)
    pairs = document["figures"]["pairs"]
    assert (pairs["correct"], pairs["total"]) == (0, 6)
    assert document["figures"]["singles"]["agreement"] == 1.0  # the semantic judge is unchanged
    for item in document["items"]:
        if item["kind"] == "pair":
            assert (item["ab"], item["ba"], item["error"]) == ("A", "B", None), item["id"]


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
    runtime = tmp_path / "runtime.json"
    runtime.write_text(
        json.dumps({"format": "sevro.runtime.v1", "environment": {"set": {"HOME": "/x"}}})
    )
    transcripts = tmp_path / "transcripts.json"
    transcripts.write_text(json.dumps({"format": "sevro.runtime.v1", "nativeTranscripts": True}))
    cases = [
        (["judge", "calibrate", bad, "--host-config", judged], "corpus.json#/items"),
        (["judge", "calibrate"], "--host-config"),
        (
            ["judge", "calibrate", "--host-config", judged, "--output", tmp_path / "no" / "x"],
            "--output must name a file in an existing directory",
        ),
        (["judge", "calibrate", "--host-config", judged, "--rubric", "x.y"], "--rubric 'x.y'"),
        (["judge", "calibrate", "--host-config", judged, "--host", "nope"], "--host 'nope'"),
        (
            ["judge", "calibrate", "--host-config", judged, "--runtime-config-file", "rt.json"],
            "--runtime-config-file must be an absolute path",
        ),
        (
            ["judge", "calibrate", "--host-config", judged, "--runtime-config-file", runtime],
            "runtime.json#/environment/set/HOME: HOME cannot be declared",
        ),
        (
            ["judge", "calibrate", "--host-config", judged, "--runtime-config-file", transcripts],
            "transcripts.json#/nativeTranscripts: nativeTranscripts retains a candidate's",
        ),
    ]
    for args, message in cases:
        result = run_in_process(args)
        assert result.exit_code == 64, (args, result.stderr)
        assert message in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
        assert result.stdout == ""
    assert not (tmp_path / "no").exists()


def test_a_runtime_file_is_read_for_the_judge(judged: Path, tmp_path: Path) -> None:
    runtime = tmp_path / "runtime.json"
    runtime.write_text(
        json.dumps({"format": "sevro.runtime.v1", "environment": {"set": {"MODE": "ci"}}})
    )
    args = ["judge", "calibrate", "--host-config", judged, "--json", "--sandbox", "none"]
    result = run_in_process([*args, "--runtime-config-file", runtime])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["format"] == "sevro.judge-calibration.v1"


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
