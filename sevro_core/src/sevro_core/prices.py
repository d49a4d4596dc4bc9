"""Model prices: the built-in ``sevro.prices.v1`` table and per-run overrides (``--prices``).

A call's ``costUsd`` is computed from these prices only when its usage is complete and its model
is priced; otherwise it stays unknown (``None``), never 0. Prices are as of the table's ``asOf``
date and must be checked against the vendors' pages (docs/spend.md). Which table a run used
(version, digest, override) enters its run evidence, so a cost can be audited later.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from attrs import evolve, frozen

from sevro_core.formats.canonical import hash_json
from sevro_core.formats.jsonio import JsonValue, read_json_file
from sevro_core.formats.schemas import validate_input
from sevro_core.limits import MAX_PRICES_FILE_BYTES
from sevro_core.models import Usage

PRICES_FORMAT = "sevro.prices.v1"
PRICES_SCHEMA = "prices.v1"
BUILTIN_PRICES_FILE = "prices.v1.json"
"""The built-in table, package data of ``sevro_core``."""


@frozen
class Price:
    """USD per million tokens of one model; reasoning tokens are counted inside output."""

    input: float
    cached_input: float
    output: float
    reasoning: float
    source: str

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "input": self.input,
            "cachedInput": self.cached_input,
            "output": self.output,
            "reasoning": self.reasoning,
            "source": self.source,
        }


@frozen
class PriceTable:
    """The prices a run uses: the built-in table, with an override's entries replacing or adding
    models. ``digest`` is the SHA-256 of the effective table's canonical JSON."""

    version: str
    as_of: str
    models: Mapping[str, Price]
    override: Mapping[str, str] | None = None
    """The override file's ``version``, ``asOf`` and own digest (None without ``--prices``)."""

    def document(self) -> dict[str, JsonValue]:
        models: dict[str, JsonValue] = {m: p.to_json() for m, p in sorted(self.models.items())}
        return {
            "format": PRICES_FORMAT,
            "version": self.version,
            "asOf": self.as_of,
            "models": models,
        }

    @property
    def digest(self) -> str:
        return hash_json(self.document())

    def evidence(self) -> dict[str, JsonValue]:
        """What run.json records: which table priced the run's calls."""
        return {
            "version": self.version,
            "asOf": self.as_of,
            "digest": self.digest,
            "override": dict(self.override) if self.override is not None else None,
        }

    def cost(self, model: str, usage: Usage) -> float | None:
        """The call's cost in USD, or None when the model is unpriced or the usage incomplete."""
        price = self.models.get(model)
        if price is None:
            return None
        return usage_cost(price, usage)

    def priced(self, model: str, usage: Usage) -> Usage:
        """``usage`` with ``cost_usd`` computed from this table, unless a cost is already known
        (a host configuration's own prices win); unknown stays unknown."""
        if usage.cost_usd is not None:
            return usage
        cost = self.cost(model, usage)
        return usage if cost is None else evolve(usage, cost_usd=cost)

    def overridden(self, other: PriceTable, digest: str) -> PriceTable:
        """This table with ``other``'s entries replacing or adding models."""
        return PriceTable(
            version=self.version,
            as_of=self.as_of,
            models={**self.models, **other.models},
            override={"version": other.version, "asOf": other.as_of, "digest": digest},
        )


def usage_cost(price: Price, usage: Usage) -> float | None:
    """Uncached input, cache reads, output and reasoning each at their own rate. Needs complete
    usage with input, cached input and output known; unknown reasoning is allowed only when it
    would cost the same as output (it is counted inside output)."""
    tokens = (usage.input_tokens, usage.cached_input_tokens, usage.output_tokens)
    if not usage.complete or None in tokens:
        return None
    total_in, cached, out = (int(t or 0) for t in tokens)
    reasoning = usage.reasoning_tokens
    if reasoning is None:
        if price.reasoning != price.output:
            return None
        reasoning = 0
    if cached > total_in or reasoning > out:
        return None  # inconsistent figures: no honest cost
    cost = (
        (total_in - cached) * price.input
        + cached * price.cached_input
        + (out - reasoning) * price.output
        + reasoning * price.reasoning
    ) / 1_000_000
    return round(cost, 9)


def _table(document: Mapping[str, Any]) -> PriceTable:
    models = {
        model: Price(
            input=float(entry["input"]),
            cached_input=float(entry["cachedInput"]),
            output=float(entry["output"]),
            reasoning=float(entry["reasoning"]),
            source=str(entry["source"]),
        )
        for model, entry in document["models"].items()
    }
    return PriceTable(version=document["version"], as_of=document["asOf"], models=models)


@functools.cache
def builtin_prices() -> PriceTable:
    """The table shipped with sevro_core, schema-checked on load."""
    text = resources.files("sevro_core").joinpath(BUILTIN_PRICES_FILE).read_text("utf-8")
    document = json.loads(text)
    validate_input(PRICES_SCHEMA, document, source=f"sevro_core/{BUILTIN_PRICES_FILE}")
    return _table(document)


def read_prices(path: Path) -> PriceTable:
    """A ``--prices`` file: bounded, strict JSON, schema-checked; exit 64 naming the file and
    pointer. Returns the built-in table overridden by it."""
    document = read_json_file(path, MAX_PRICES_FILE_BYTES, what="prices file")
    validate_input(PRICES_SCHEMA, document, source=path)
    assert isinstance(document, dict)
    return builtin_prices().overridden(_table(document), hash_json(document))


def run_prices(path: Path | None) -> PriceTable:
    """The prices of a run: the built-in table, or it overridden by ``--prices``."""
    return builtin_prices() if path is None else read_prices(path)
