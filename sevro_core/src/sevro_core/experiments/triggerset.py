"""skill-creator trigger eval sets: ``[{"query": ..., "should_trigger": ...}]`` as cases.

skill-creator's ``run_eval.py`` reads this format to measure whether a skill's description makes
the model consult the skill. Here each query becomes one case: an empty workspace, the query as the
prompt and one ``sevro.skill-activation`` check on the target skill (``read`` when the query
should trigger it, ``not-read`` otherwise). The set is loaded strictly and bounded before
anything runs: an unknown key, a wrong type, a blank or over-long query, a duplicate query, an
empty or over-long set are one line naming the file and the JSON pointer at fault (exit 64).

Case documents are returned as plain ``case.v1`` objects: the run loads them like any case.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from attrs import frozen

from sevro_core.errors import InvocationError, join_pointer
from sevro_core.formats.jsonio import JsonValue
from sevro_core.limits import MAX_PROMPT_BYTES, MAX_TRIGGER_QUERIES

KEYS: Final = frozenset({"query", "should_trigger"})
CHECK_ID: Final = "skill-activation"
SLUG_WORDS_CHARS: Final = 32
"""The readable part of a case id: enough words of the query to recognise it in a table."""


@frozen
class TriggerQuery:
    """One entry of the set, with the case id it runs under."""

    case_id: str
    query: str
    should_trigger: bool
    pointer: str

    def to_json(self) -> dict[str, Any]:
        return {"caseId": self.case_id, "query": self.query, "shouldTrigger": self.should_trigger}


def is_trigger_set(document: JsonValue) -> bool:
    """A JSON array whose first entry carries ``query`` or ``should_trigger`` (an array of cases
    carries ``id``/``prompt``); an empty array is taken as an empty set, and refused as one."""
    if not isinstance(document, list):
        return False
    if not document:
        return True
    first = document[0]
    return isinstance(first, dict) and bool(KEYS & first.keys())


def load_trigger_set(document: JsonValue, source: Path) -> tuple[TriggerQuery, ...]:
    """The set's queries with their case ids, or the one-line refusal (exit 64)."""
    if not isinstance(document, list):
        raise InvocationError("a trigger eval set is a JSON array", source=source)
    if not document:
        raise InvocationError("the trigger eval set is empty", source=source)
    if len(document) > MAX_TRIGGER_QUERIES:
        raise InvocationError(
            f"more than {MAX_TRIGGER_QUERIES} queries in one trigger eval set", source=source
        )
    width = max(2, len(str(len(document))))
    seen: dict[str, int] = {}
    queries = []
    for index, item in enumerate(document):
        query, should = _entry(item, source, join_pointer("", index))
        if query in seen:
            raise InvocationError(
                f"duplicate query (also /{seen[query]}): repeat a query with --trials, not by "
                "listing it twice",
                source=source,
                pointer=join_pointer("", index, "query"),
            )
        seen[query] = index
        case_id = case_id_for(index, query, width)
        queries.append(TriggerQuery(case_id, query, should, join_pointer("", index)))
    return tuple(queries)


def _entry(item: JsonValue, source: Path, pointer: str) -> tuple[str, bool]:
    if not isinstance(item, dict):
        raise InvocationError(
            'an entry is an object {"query": ..., "should_trigger": ...}',
            source=source,
            pointer=pointer,
        )
    unknown = sorted(item.keys() - KEYS)
    if unknown:
        raise InvocationError(
            f"unknown key {unknown[0]!r} (an entry has query and should_trigger)",
            source=source,
            pointer=join_pointer(pointer, unknown[0]),
        )
    for key in sorted(KEYS - item.keys()):
        raise InvocationError(f"missing {key!r}", source=source, pointer=pointer)
    query, should = item["query"], item["should_trigger"]
    if not isinstance(query, str) or not query.strip():
        raise InvocationError(
            "query must be a non-blank string",
            source=source,
            pointer=join_pointer(pointer, "query"),
        )
    if len(query.encode("utf-8")) > MAX_PROMPT_BYTES:
        raise InvocationError(
            f"query longer than {MAX_PROMPT_BYTES} bytes",
            source=source,
            pointer=join_pointer(pointer, "query"),
        )
    if not isinstance(should, bool):
        raise InvocationError(
            "should_trigger must be true or false",
            source=source,
            pointer=join_pointer(pointer, "should_trigger"),
        )
    return query, should


def case_id_for(index: int, query: str, width: int = 2) -> str:
    """``q03-deploy-the-app``: the 1-based position (stable, unique) and the query's first ASCII
    words (readable); just ``q03`` when the query has none."""
    words = re.findall(r"[a-z0-9]+", query.lower())
    slug = ""
    for word in words:
        longer = f"{slug}-{word}" if slug else word
        if len(longer) > SLUG_WORDS_CHARS:
            break
        slug = longer
    if not slug and words:
        slug = words[0][:SLUG_WORDS_CHARS]
    number = f"q{index + 1:0{width}d}"
    return f"{number}-{slug}" if slug else number


def trigger_case(query: TriggerQuery, skill: str) -> dict[str, JsonValue]:
    """The ``case.v1`` document of one query: empty workspace, one activation check."""
    return {
        "id": query.case_id,
        "prompt": query.query,
        "fixture": {"files": {}},
        "checks": [
            {
                "id": CHECK_ID,
                "grader": "sevro.skill-activation",
                "configuration": {
                    "expect": "read" if query.should_trigger else "not-read",
                    "skill": skill,
                },
            }
        ],
        "requiredEvidence": [],
    }


def trigger_set_json(source: Path, skill: str, queries: Sequence[TriggerQuery]) -> dict[str, Any]:
    """``run.json``'s ``experiment.triggerSet``: what the trigger statistics are computed from."""
    return {
        "source": str(source),
        "skill": skill,
        "queries": [q.to_json() for q in queries],
    }
