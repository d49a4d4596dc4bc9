"""skill-creator trigger eval sets: recognised by shape, loaded strictly, one case per query."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sevro_core.errors import InvocationError
from sevro_core.experiments.triggerset import (
    case_id_for,
    is_trigger_set,
    load_trigger_set,
    trigger_case,
)
from sevro_core.limits import MAX_PROMPT_BYTES, MAX_TRIGGER_QUERIES
from sevro_core.run.loading import load_case

SOURCE = Path("evals.json")
GOOD = [
    {"query": "Add a changelog entry for the --json flag", "should_trigger": True},
    {"query": "Write a haiku", "should_trigger": False},
]


def test_a_set_becomes_queries_with_stable_readable_case_ids() -> None:
    queries = load_trigger_set(GOOD, SOURCE)
    assert [q.case_id for q in queries] == [
        "q01-add-a-changelog-entry-for-the",
        "q02-write-a-haiku",
    ]
    assert [q.should_trigger for q in queries] == [True, False]
    assert [q.pointer for q in queries] == ["/0", "/1"]


def test_case_ids_pad_to_the_sets_size_and_survive_queries_without_ascii_words() -> None:
    assert case_id_for(0, "¿Qué?", 3) == "q001-qu"
    assert case_id_for(0, "日本語", 3) == "q001"
    assert case_id_for(9, "Deploy the app!", 2) == "q10-deploy-the-app"
    long_word = "x" * 100
    assert case_id_for(0, long_word) == f"q01-{'x' * 32}"


def test_each_query_is_a_valid_case_with_one_activation_check() -> None:
    read, not_read = (trigger_case(q, "changelog") for q in load_trigger_set(GOOD, SOURCE))
    for document, expect in ((read, "read"), (not_read, "not-read")):
        case = load_case(document, source=SOURCE)
        assert case.fixture == {"files": {}}
        (check,) = case.checks
        assert check.grader == "sevro.skill-activation"
        assert check.configuration == {"expect": expect, "skill": "changelog"}
    assert read["prompt"] == GOOD[0]["query"]


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        (GOOD, True),
        ([], True),
        ([{"should_trigger": True}], True),
        ([{"id": "a", "prompt": "x"}], False),
        ({"query": "x", "should_trigger": True}, False),
        ([1], False),
    ],
)
def test_recognised_by_its_shape(document: Any, expected: bool) -> None:
    assert is_trigger_set(document) is expected


BAD: list[tuple[Any, str]] = [
    ([], "evals.json: the trigger eval set is empty"),
    ({"evals": []}, "evals.json: a trigger eval set is a JSON array"),
    (["x"], 'evals.json#/0: an entry is an object {"query": ..., "should_trigger": ...}'),
    (
        [{"query": "a", "should_trigger": True, "expected": "x"}],
        "evals.json#/0/expected: unknown key 'expected' (an entry has query and should_trigger)",
    ),
    ([{"query": "a"}], "evals.json#/0: missing 'should_trigger'"),
    ([{"should_trigger": True}], "evals.json#/0: missing 'query'"),
    (
        [{"query": 3, "should_trigger": True}],
        "evals.json#/0/query: query must be a non-blank string",
    ),
    ([{"query": " \n", "should_trigger": True}], "evals.json#/0/query: query must be a non-blank"),
    (
        [{"query": "a", "should_trigger": "yes"}],
        "evals.json#/0/should_trigger: should_trigger must be true or false",
    ),
    (
        [{"query": "a", "should_trigger": 1}],
        "evals.json#/0/should_trigger: should_trigger must be true or false",
    ),
    (
        [{"query": "a", "should_trigger": True}, {"query": "a", "should_trigger": False}],
        "evals.json#/1/query: duplicate query (also /0)",
    ),
    (
        [{"query": "q" * (MAX_PROMPT_BYTES + 1), "should_trigger": True}],
        f"evals.json#/0/query: query longer than {MAX_PROMPT_BYTES} bytes",
    ),
    (
        [{"query": f"q{i}", "should_trigger": True} for i in range(MAX_TRIGGER_QUERIES + 1)],
        f"evals.json: more than {MAX_TRIGGER_QUERIES} queries in one trigger eval set",
    ),
]


@pytest.mark.parametrize(("document", "message"), BAD)
def test_bad_sets_are_one_line_naming_the_entry(document: Any, message: str) -> None:
    with pytest.raises(InvocationError) as refused:
        load_trigger_set(document, SOURCE)
    line = refused.value.one_line()
    assert line.startswith(message), line
    assert "\n" not in line


def test_the_largest_set_allowed_loads() -> None:
    document = [
        {"query": f"q{i}", "should_trigger": i % 2 == 0} for i in range(MAX_TRIGGER_QUERIES)
    ]
    assert len(load_trigger_set(document, SOURCE)) == MAX_TRIGGER_QUERIES
