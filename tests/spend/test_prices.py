"""The price table: the built-in one loads strictly, ``--prices`` overrides it, and a call's
cost is computed only from complete usage of a priced model (unknown stays None, never 0)."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from sevro_core.errors import InvocationError
from sevro_core.formats.schemas import compile_schema, load_schema, validator
from sevro_core.limits import MAX_PRICES_FILE_BYTES
from sevro_core.models import Usage
from sevro_core.prices import (
    BUILTIN_PRICES_FILE,
    Price,
    PriceTable,
    builtin_prices,
    read_prices,
    run_prices,
    usage_cost,
)
from sevro_core.testing import SevroProject

PRICE = {"input": 2.0, "cachedInput": 0.5, "output": 8.0, "reasoning": 8.0, "source": "test"}
COMPLETE = Usage(
    input_tokens=1_000, cached_input_tokens=400, output_tokens=300, reasoning_tokens=100,
    complete=True,
)  # fmt: skip


def prices_file(tmp_path: Path, models: dict[str, Any], **top: Any) -> Path:
    document = {"format": "sevro.prices.v1", "version": "test.1", "asOf": "2026-12-01"}
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({**document, "models": models, **top}))
    return path


def test_the_builtin_table_loads_and_every_entry_validates() -> None:
    text = resources.files("sevro_core").joinpath(BUILTIN_PRICES_FILE).read_text("utf-8")
    document = json.loads(text)
    assert not list(validator("prices.v1").iter_errors(document))
    table = builtin_prices()
    assert table.version == document["version"] and table.as_of == document["asOf"]
    assert len(table.models) == len(document["models"]) >= 10
    assert any(m.startswith("gpt-5") for m in table.models)  # Codex's models
    assert any(m.startswith("claude-") for m in table.models)  # Claude Code's models
    for model, price in table.models.items():
        assert price.source.strip(), model
        assert price.cached_input <= price.input, model  # a cache read never costs more
        assert price.input > 0 and price.output > 0, model


def test_the_schema_is_a_valid_draft_2020_12_schema() -> None:
    from jsonschema import Draft202012Validator

    Draft202012Validator.check_schema(load_schema("prices.v1"))
    compile_schema(load_schema("prices.v1"))


def test_a_complete_usage_is_priced_rate_by_rate() -> None:
    price = Price(2.0, 0.5, 8.0, 12.0, "test")
    # 600 fresh input, 400 cache reads, 200 output proper, 100 reasoning (inside output)
    expected = (600 * 2.0 + 400 * 0.5 + 200 * 8.0 + 100 * 12.0) / 1_000_000
    assert usage_cost(price, COMPLETE) == pytest.approx(expected)
    table = PriceTable("t", "2026-12-01", {"m": price})
    assert table.priced("m", COMPLETE).cost_usd == pytest.approx(expected)


def test_unknown_reasoning_is_priced_only_when_it_costs_as_output() -> None:
    usage = Usage(input_tokens=1_000, cached_input_tokens=0, output_tokens=300, complete=True)
    assert usage_cost(Price(1.0, 0.1, 4.0, 4.0, "t"), usage) == pytest.approx(2_200 / 1e6)
    assert usage_cost(Price(1.0, 0.1, 4.0, 6.0, "t"), usage) is None  # negative control


@pytest.mark.parametrize(
    "usage",
    [
        Usage(input_tokens=1_000, cached_input_tokens=400, output_tokens=300),  # incomplete
        Usage(input_tokens=None, cached_input_tokens=0, output_tokens=300, complete=True),
        Usage(input_tokens=1_000, cached_input_tokens=None, output_tokens=300, complete=True),
        Usage(input_tokens=1_000, cached_input_tokens=0, output_tokens=None, complete=True),
        Usage(input_tokens=10, cached_input_tokens=20, output_tokens=3, complete=True),
        Usage(input_tokens=10, cached_input_tokens=0, output_tokens=3, reasoning_tokens=4,
              complete=True),
        Usage(),
    ],
)  # fmt: skip
def test_incomplete_or_inconsistent_usage_stays_unknown(usage: Usage) -> None:
    table = PriceTable("t", "2026-12-01", {"m": Price(2.0, 0.5, 8.0, 8.0, "t")})
    assert table.priced("m", usage).cost_usd is None  # never 0


def test_an_unpriced_model_stays_unknown() -> None:
    assert builtin_prices().priced("mock-model", COMPLETE).cost_usd is None
    priced = builtin_prices().priced("gpt-5", COMPLETE)  # positive control: the same usage
    assert priced.cost_usd is not None and priced.cost_usd > 0


def test_a_cost_already_known_wins_and_the_reported_cost_is_kept() -> None:
    table = PriceTable("t", "2026-12-01", {"m": Price(2.0, 0.5, 8.0, 8.0, "t")})
    hosts = Usage(input_tokens=1, cached_input_tokens=0, output_tokens=1, cost_usd=7.0,
                  complete=True, reported_cost_usd=9.0)  # fmt: skip
    assert table.priced("m", hosts) == hosts
    reported = Usage(input_tokens=1_000_000, cached_input_tokens=0, output_tokens=0,
                     complete=True, reported_cost_usd=9.0)  # fmt: skip
    both = table.priced("m", reported)
    assert both.cost_usd == 2.0 and both.reported_cost_usd == 9.0


def test_an_override_replaces_and_adds_models(tmp_path: Path) -> None:
    path = prices_file(tmp_path, {"gpt-5": PRICE, "mock-model": {**PRICE, "input": 3}})
    table = read_prices(path)
    assert table.models["gpt-5"].input == 2.0 and table.models["mock-model"].input == 3.0
    assert set(builtin_prices().models) <= set(table.models)
    assert table.version == builtin_prices().version
    assert table.digest != builtin_prices().digest
    evidence = table.evidence()
    assert evidence["override"] == {
        "version": "test.1",
        "asOf": "2026-12-01",
        "digest": evidence["override"]["digest"],  # type: ignore[index]
    }
    assert builtin_prices().evidence()["override"] is None
    assert run_prices(None) is builtin_prices()


BAD: list[tuple[dict[str, Any], dict[str, Any], str]] = [
    ({"m": {**PRICE, "input": -1}}, {}, "/models/m/input"),
    ({"m": {k: v for k, v in PRICE.items() if k != "reasoning"}}, {}, "/models/m"),
    ({"m": {**PRICE, "batch": 1}}, {}, "/models/m/batch"),
    ({"m": {**PRICE, "output": "8"}}, {}, "/models/m/output"),
    ({"m": {**PRICE, "source": ""}}, {}, "/models/m/source"),
    ({"m": PRICE}, {"format": "sevro.prices.v2"}, "/format"),
    ({"m": PRICE}, {"asOf": "yesterday"}, "/asOf"),
    ({"m": PRICE}, {"extra": True}, "/extra"),
    ({"bad model": PRICE}, {}, "/models"),
]


@pytest.mark.parametrize(("models", "top", "pointer"), BAD)
def test_a_bad_override_is_refused_naming_the_place(
    tmp_path: Path, models: dict[str, Any], top: dict[str, Any], pointer: str
) -> None:
    path = prices_file(tmp_path, models, **top)
    with pytest.raises(InvocationError) as raised:
        read_prices(path)
    assert raised.value.source == str(path) and (raised.value.pointer or "") == pointer


@pytest.mark.parametrize("content", [b"", b"{", b'{"a": 1, "a": 2}', b"[]"])
def test_a_malformed_override_is_refused(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "prices.json"
    path.write_bytes(content)
    with pytest.raises(InvocationError):
        read_prices(path)


def test_an_oversized_or_missing_override_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    path.write_bytes(b" " * (MAX_PRICES_FILE_BYTES + 1))
    with pytest.raises(InvocationError, match=r"exceeds|larger|bytes"):
        read_prices(path)
    with pytest.raises(InvocationError, match="does not exist"):
        read_prices(tmp_path / "missing.json")


def test_run_refuses_a_bad_prices_file_before_anything_runs(sevro_project: SevroProject) -> None:
    case = sevro_project.case()
    script = sevro_project.script(default=[[{"reply": {"text": "done"}}]])
    bad = prices_file(sevro_project.root, {"m": {**PRICE, "input": -1}})
    done = sevro_project.run(case, "--host-config", script, "--prices", bad)
    assert done.exit_code == 64, done.stdout + done.stderr
    assert "/models/m/input" in done.stdout + done.stderr and "Traceback" not in done.stderr
    assert not list(sevro_project.results.glob("*/run.json"))  # nothing ran
    good = prices_file(sevro_project.root, {"m": PRICE})  # positive control
    done = sevro_project.run(case, "--host-config", script, "--prices", good)
    assert done.exit_code == 0, done.stdout + done.stderr
    (run_json,) = sevro_project.results.glob("*/run.json")
    recorded = json.loads(run_json.read_text())["prices"]
    assert recorded["digest"] == read_prices(good).digest
    assert recorded["override"]["version"] == "test.1"


def test_a_run_without_prices_records_the_builtin_table(sevro_project: SevroProject) -> None:
    case = sevro_project.case()
    script = sevro_project.script(default=[[{"reply": {"text": "done"}}]])
    done = sevro_project.run(case, "--host-config", script)
    assert done.exit_code == 0, done.stdout + done.stderr
    (run_json,) = sevro_project.results.glob("*/run.json")
    assert json.loads(run_json.read_text())["prices"] == builtin_prices().evidence()
