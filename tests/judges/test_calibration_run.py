"""Running a judge over a corpus: a judge that knows the gold labels scores 1 everywhere, a
gullible one fails the injection probes, a position-biased one disagrees with itself across
orders, a failing one is counted as errors; nothing runs when a needed judge is missing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sevro_core.errors import InvocationError
from sevro_core.judges.calibrated import load_record
from sevro_core.judges.calibration import Calibration, JudgeIdentity, calibrate, record
from sevro_core.judges.corpus import Corpus, corpus_from_json, load_corpus
from tests.judges.standins import Judges, SemanticGrader, oracle, pair_judge

IDENTITY = JudgeIdentity("sevro.host.scripted", "judge-model", "low", "0" * 64)
ROLES = {"semantic", "comparator"}
JUDGES = {"semantic": IDENTITY, "comparator": IDENTITY}


def run(corpus: Corpus, judges: Judges) -> Calibration:
    return calibrate(
        corpus,
        lambda item_id: judges,
        sorted(judges.roles),
        semantic=SemanticGrader(),
        judge_pair=pair_judge,
    )


def test_a_judge_that_knows_the_gold_labels_scores_one_everywhere(tmp_path: Path) -> None:
    corpus = load_corpus(None)
    judges = Judges(oracle(corpus), ROLES)
    calibration = run(corpus, judges)
    measured = calibration.figures
    for agreement in (measured.singles, measured.pairs):
        assert (agreement.agreement, agreement.balanced_accuracy, agreement.kappa) == (1, 1, 1)
        assert agreement.errors == 0
    assert (measured.order.disagreements, measured.order.rate) == (0, 0)
    assert measured.injection.items == measured.injection.correct == 3
    assert measured.length.items == measured.length.correct == 3
    # the production path: the response is the final message, the item's propositions are the
    # view's checks, the call is the semantic role's
    assert {role for role, _, _ in judges.calls} == ROLES
    document = record(calibration, JUDGES, "0.1.0")
    assert document["corpus"] == {"sha256": corpus.sha256, "items": len(corpus.items)}
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(document))
    loaded = load_record(path)
    assert loaded.judges == JUDGES
    assert loaded.figures.to_json() == document["figures"]


def _gullible(corpus: Corpus):  # type: ignore[no-untyped-def]
    knows = oracle(corpus)

    def answer(role: str, prompt: str) -> str | None:
        asked = json.loads(prompt)
        if role == "semantic" and "answer pass" in asked["response"]:
            checks = [
                {"id": i, "verdict": "pass", "reason": "told so"} for i in asked["propositions"]
            ]
            return json.dumps({"checks": checks})
        if role == "comparator" and "answer A" in asked["AText"] + asked["BText"]:
            return "A"
        return knows(role, prompt)

    return answer


def test_a_judge_that_follows_injected_text_fails_every_injection_probe() -> None:
    corpus = load_corpus(None)
    measured = run(corpus, Judges(_gullible(corpus), ROLES)).figures
    assert (measured.injection.items, measured.injection.correct) == (3, 0)
    assert measured.singles.agreement is not None and measured.singles.agreement < 1
    assert measured.order.disagreements == 1  # "answer A" wins A in AB, B in BA


def test_a_judge_that_always_answers_a_disagrees_with_itself_on_every_pair() -> None:
    corpus = load_corpus(None)
    knows = oracle(corpus)
    biased = Judges(lambda role, p: "A" if role == "comparator" else knows(role, p), ROLES)
    measured = run(corpus, biased).figures
    assert (measured.order.decided, measured.order.disagreements) == (6, 6)
    assert measured.order.rate == 1
    assert measured.pairs.correct == 0
    assert measured.pairs.kappa == 0  # every judged label is "inconsistent": no agreement


def test_a_failing_judge_is_counted_as_errors_never_as_agreement(tmp_path: Path) -> None:
    corpus = load_corpus(None)
    calibration = run(corpus, Judges(lambda role, prompt: None, ROLES))
    measured = calibration.figures
    assert measured.singles.correct == measured.pairs.correct == 0
    assert measured.singles.errors == measured.singles.total == 8
    assert measured.pairs.errors == measured.pairs.total == 6
    assert measured.injection.correct == 0
    document = record(calibration, JUDGES, "0.1.0")
    first = document["items"][0]
    assert first["checks"][0]["judged"] is None
    assert "the judge host failed" in first["checks"][0]["error"]


def test_a_malformed_reply_is_a_grading_error_not_a_verdict() -> None:
    corpus = load_corpus(None)
    knows = oracle(corpus)
    judges = Judges(lambda role, p: "pass" if role == "semantic" else knows(role, p), ROLES)
    measured = run(corpus, judges).figures
    assert measured.singles.errors == measured.singles.total
    assert measured.singles.kappa == 0


def test_single_items_without_a_semantic_judge_are_refused_before_any_call() -> None:
    corpus = load_corpus(None)
    judges = Judges(oracle(corpus), {"comparator"})
    with pytest.raises(InvocationError, match=r"no sevro\.semantic grader or semantic judge"):
        run(corpus, judges)
    with pytest.raises(InvocationError, match=r"no sevro\.semantic grader"):
        calibrate(corpus, lambda i: judges, ROLES, semantic=None, judge_pair=None)
    assert judges.calls == []


def test_pairs_without_a_comparator_are_refused_before_any_call() -> None:
    corpus = load_corpus(None)
    judges = Judges(oracle(corpus), {"semantic"})
    with pytest.raises(InvocationError, match="no comparator judge"):
        run(corpus, judges)
    assert judges.calls == []


def test_a_proposition_the_grader_refuses_stops_calibration_before_any_call() -> None:
    document = {
        "format": "sevro.judge-corpus.v1",
        "items": [
            {
                "id": "ok",
                "kind": "single",
                "response": "r",
                "checks": [{"id": "c", "proposition": "The response says r.", "gold": "pass"}],
            },
            {
                "id": "blank",
                "kind": "single",
                "response": "r",
                "checks": [{"id": "c", "proposition": "   ", "gold": "pass"}],
            },
        ],
    }
    corpus = corpus_from_json(document, "corpus.json")
    judges = Judges(oracle(corpus), ROLES)
    with pytest.raises(InvocationError, match=r"item 'blank': sevro\.semantic refused"):
        run(corpus, judges)
    assert judges.calls == []
