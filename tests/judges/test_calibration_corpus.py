"""Judge corpora: the packaged one covers every outcome and both probes; a bad corpus is one
line (exit 64) naming the file and the place; the digest ignores spelling, not labels."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sevro_core.errors import InvocationError
from sevro_core.judges import corpus as corpus_module
from sevro_core.judges.corpus import corpus_from_json, load_corpus


def test_the_packaged_corpus_covers_every_outcome_and_both_probes() -> None:
    corpus = load_corpus(None)
    assert {c.gold for item in corpus.singles for c in item.checks} == {"pass", "fail"}
    assert {pair.gold for pair in corpus.pairs} == {"A", "B", "tie"}
    injections = [item for item in corpus.items if item.probe == "injection"]
    assert len(injections) >= 2
    assert all(
        "ignore your instructions" in json.dumps(_texts(item)).lower() for item in injections
    )
    lengths = [pair for pair in corpus.pairs if pair.probe == "length"]
    assert len(lengths) >= 2
    assert {pair.gold == pair.longer for pair in lengths} == {True, False}  # worse and better
    assert {pair.longer for pair in lengths} == {"A", "B"}


def _texts(item: Any) -> Any:
    if hasattr(item, "response"):
        return item.response
    return [item.a.final_message, item.b.final_message]


def minimal() -> dict[str, Any]:
    return {
        "format": "sevro.judge-corpus.v1",
        "items": [
            {
                "id": "one",
                "kind": "single",
                "response": "Done.",
                "checks": [{"id": "c", "proposition": "The response says done.", "gold": "pass"}],
            },
            {
                "id": "two",
                "kind": "pair",
                "task": "Fix it.",
                "baseFiles": {"a.py": "x = 1\n"},
                "a": {"finalMessage": "fixed", "diff": "-x = 1\n+x = 2\n"},
                "b": {"finalMessage": "fixed", "diff": ""},
                "gold": "A",
            },
        ],
    }


def test_the_digest_is_canonical_and_follows_the_labels() -> None:
    document = minimal()
    digest = corpus_from_json(document, "c.json").sha256
    reordered = json.loads(json.dumps(document, sort_keys=True, indent=4))
    assert corpus_from_json(reordered, "c.json").sha256 == digest
    document["items"][1]["gold"] = "B"
    assert corpus_from_json(document, "c.json").sha256 != digest


def _refused(tmp_path: Path, document: Any) -> str:
    path = tmp_path / "corpus.json"
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    with pytest.raises(InvocationError) as caught:
        load_corpus(path)
    line = caught.value.one_line()
    assert "\n" not in line and str(path) in line
    return line


def test_bad_corpora_are_refused_with_one_line(tmp_path: Path) -> None:
    assert "one JSON object" in _refused(tmp_path, "[]")
    assert "duplicate key" in _refused(tmp_path, '{"format": 1, "format": 2}')
    wrong_format = minimal() | {"format": "sevro.judge-corpus.v2"}
    assert "#/format" in _refused(tmp_path, wrong_format)
    unknown = minimal()
    unknown["items"][0]["verdict"] = "pass"
    assert "/items/0" in _refused(tmp_path, unknown)
    bad_gold = minimal()
    bad_gold["items"][1]["gold"] = "C"
    assert "/items/1" in _refused(tmp_path, bad_gold)


def test_ids_must_be_unique(tmp_path: Path) -> None:
    twice = minimal()
    twice["items"][1]["id"] = "one"
    assert "duplicate item id 'one'" in _refused(tmp_path, twice)
    checks = minimal()
    checks["items"][0]["checks"].append(dict(checks["items"][0]["checks"][0]))
    assert "#/items/0/checks/1/id" in _refused(tmp_path, checks)


def test_a_length_probe_pair_says_which_side_is_longer(tmp_path: Path) -> None:
    missing = minimal()
    missing["items"][1]["probe"] = "length"
    assert "which side is longer" in _refused(tmp_path, missing)
    stray = minimal()
    stray["items"][1]["longer"] = "A"
    assert "only on a pair with 'probe': 'length'" in _refused(tmp_path, stray)
    good = minimal()
    good["items"][1] |= {"probe": "length", "longer": "A"}
    assert corpus_from_json(good, "c.json").pairs[0].longer == "A"


def test_a_corpus_beyond_the_bound_is_refused_before_parsing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(corpus_module, "MAX_JUDGE_CORPUS_BYTES", 64)
    assert "64" in _refused(tmp_path, minimal())
