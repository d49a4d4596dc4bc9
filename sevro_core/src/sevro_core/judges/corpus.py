"""Judge calibration corpora (``sevro.judge-corpus.v1``): labelled items, loaded strictly.

A corpus is what a judge's figures are measured against, so it is read like any other input:
bounded, strict JSON, validated against the published schema, then checked for what the schema
cannot say (unique item ids, unique check ids within an item, ``longer`` only on a length probe
pair, which needs it). Its digest is the sha256 of its canonical JSON, so a calibration record
names exactly the labels it was measured on. Every text in it is untrusted data for the judge.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from attrs import frozen

from sevro_core.errors import InvocationError, join_pointer
from sevro_core.formats.canonical import hash_json
from sevro_core.formats.jsonio import JsonValue, parse_json_text, read_json_file
from sevro_core.formats.schemas import validate_input
from sevro_core.limits import MAX_JUDGE_CORPUS_BYTES

FORMAT = "sevro.judge-corpus.v1"
SCHEMA = "judge-corpus.v1"
DEFAULT_CORPUS = "default.json"
"""The small corpus that ships in the package (``sevro_core/judges/corpora``)."""
PROBES = ("injection", "length")


@frozen
class GoldCheck:
    """One proposition about a single response and its gold verdict (``pass``/``fail``)."""

    id: str
    proposition: str
    gold: str


@frozen
class SingleItem:
    """A response the semantic judge grades against its propositions."""

    id: str
    response: str
    checks: tuple[GoldCheck, ...]
    probe: str | None = None


@frozen
class PairSide:
    final_message: str
    diff: str


@frozen
class PairItem:
    """Two results the comparator weighs; ``gold`` is ``A``, ``B`` or ``tie``."""

    id: str
    task: str
    base_files: Mapping[str, str]
    a: PairSide
    b: PairSide
    gold: str
    probe: str | None = None
    longer: str | None = None
    """On a length probe: the side whose answer is longer (``A``/``B``)."""


@frozen
class Corpus:
    source: str
    sha256: str
    items: tuple[SingleItem | PairItem, ...]

    @property
    def singles(self) -> tuple[SingleItem, ...]:
        return tuple(item for item in self.items if isinstance(item, SingleItem))

    @property
    def pairs(self) -> tuple[PairItem, ...]:
        return tuple(item for item in self.items if isinstance(item, PairItem))


def load_corpus(path: Path | None) -> Corpus:
    """The corpus at ``path``, or the packaged default when None; exit 64 on the first fault."""
    if path is None:
        data = resources.files("sevro_core").joinpath("judges", "corpora", DEFAULT_CORPUS)
        source = f"<packaged corpus {DEFAULT_CORPUS}>"
        document = parse_json_text(data.read_bytes(), source=source)
    else:
        source = str(path)
        document = read_json_file(path, MAX_JUDGE_CORPUS_BYTES, what="judge corpus")
    return corpus_from_json(document, source)


def corpus_from_json(document: JsonValue, source: str) -> Corpus:
    """A corpus from its parsed document (validated here)."""
    if not isinstance(document, dict):
        raise InvocationError("a judge corpus holds one JSON object", source=source)
    validate_input(SCHEMA, document, source=source)
    items = tuple(_item(entry) for entry in document["items"])
    _check_items(document["items"], source)
    return Corpus(source=source, sha256=hash_json(document), items=items)


def _item(entry: Mapping[str, Any]) -> SingleItem | PairItem:
    if entry["kind"] == "single":
        checks = tuple(GoldCheck(c["id"], c["proposition"], c["gold"]) for c in entry["checks"])
        return SingleItem(entry["id"], entry["response"], checks, entry.get("probe"))
    return PairItem(
        id=entry["id"],
        task=entry["task"],
        base_files=dict(entry["baseFiles"]),
        a=PairSide(entry["a"]["finalMessage"], entry["a"]["diff"]),
        b=PairSide(entry["b"]["finalMessage"], entry["b"]["diff"]),
        gold=entry["gold"],
        probe=entry.get("probe"),
        longer=entry.get("longer"),
    )


def _check_items(entries: list[Mapping[str, Any]], source: str) -> None:
    seen: dict[str, int] = {}
    for index, entry in enumerate(entries):
        pointer = join_pointer("/items", index)
        if entry["id"] in seen:
            raise InvocationError(
                f"duplicate item id {entry['id']!r} (also /items/{seen[entry['id']]})",
                source=source,
                pointer=join_pointer(pointer, "id"),
            )
        seen[entry["id"]] = index
        if entry["kind"] == "single":
            ids = [check["id"] for check in entry["checks"]]
            for position, check_id in enumerate(ids):
                if check_id in ids[:position]:
                    raise InvocationError(
                        f"duplicate check id {check_id!r} in item {entry['id']!r}",
                        source=source,
                        pointer=join_pointer(pointer, "checks", position, "id"),
                    )
        else:
            _check_length_probe(entry, source, pointer)


def _check_length_probe(entry: Mapping[str, Any], source: str, pointer: str) -> None:
    is_length = entry.get("probe") == "length"
    if is_length and "longer" not in entry:
        raise InvocationError(
            "a length probe pair says which side is longer ('longer': 'A' or 'B')",
            source=source,
            pointer=pointer,
        )
    if "longer" in entry and not is_length:
        raise InvocationError(
            "'longer' belongs only on a pair with 'probe': 'length'",
            source=source,
            pointer=join_pointer(pointer, "longer"),
        )
