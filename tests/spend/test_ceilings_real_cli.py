"""Spend ceilings with the real Codex CLI against the mock model reporting usage: each call is
reconciled to the cost computed from the usage the model reported, a call whose usage is
unknown is charged its whole reservation, and the run stops at its ceiling (exit 5)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sevro_core.testing import SevroProject
from sevro_core.testing.mockmodel import Message, reply
from sevro_hosts_codex.testing import require_codex
from tests.e2e.helpers import assert_valid_evidence
from tests.hosts_codex.helpers import run_codex
from tests.hosts_codex.test_real_cli import PRICES_FILE, READY

pytestmark = pytest.mark.slow

PRICES = PRICES_FILE
CALL_COST = 0.000136
"""The mock's usage (100 in, 20 of them cached, 10 out, 3 of them reasoning) at PRICES."""


def spend_run(
    project: SevroProject, codex: str, server: Any, trials: int, *ceilings: str
) -> tuple[Any, list[dict[str, Any]]]:
    case = project.case(checks=[READY])
    prices = project.write_json("prices.json", PRICES)
    done = run_codex(
        project, codex, server, case, "--prices", str(prices), "--trials", str(trials),
        "--jobs", "1", *ceilings, config={"prices": {}},
    )  # fmt: skip
    run_id = done.json()["runId"]
    path = project.results / ".sevro-state" / "spend" / f"{run_id}.jsonl"
    return done, [json.loads(line) for line in path.read_text().splitlines()]


def test_calls_reconcile_to_their_computed_cost_until_the_ceiling(
    sevro_project: SevroProject, mock_model: Callable[..., Any]
) -> None:
    codex = require_codex()
    server = mock_model([reply(Message("ready")) for _ in range(4)])
    done, records = spend_run(
        sevro_project, codex, server, 4,
        "--max-cost-usd", "0.0005", "--max-call-cost-usd", "0.0002", "--accept-exposure",
    )  # fmt: skip
    assert done.exit_code == 5, done.stdout + done.stderr
    # $0.000136 x 3 + $0.0002 for a fourth would pass $0.0005: three calls, three requests
    assert len(server.requests) == 3
    assert [(r["kind"], r["call"]) for r in records] == [
        (kind, f"1:{n}") for n in (1, 2, 3) for kind in ("reserve", "reconcile")
    ]
    assert [r["usd"] for r in records if r["kind"] == "reconcile"] == [pytest.approx(CALL_COST)] * 3
    run = assert_valid_evidence(done.json())
    assert run["status"] == "stopped"
    assert run["spend"]["totals"]["chargedUsd"] == pytest.approx(3 * CALL_COST)
    assert [t["task"] for t in done.json()["cases"][0]["trials"]] == ["passed"] * 3 + [
        "not_assessed"
    ]
    for trial in Path(done.json()["evidencePath"]).parent.glob("cases/*/trial-*.json"):
        usage = json.loads(trial.read_text())["evidence"]["usage"]
        assert usage["costUsd"] == pytest.approx(CALL_COST)


def test_a_call_without_reported_usage_is_charged_its_ceiling(
    sevro_project: SevroProject, mock_model: Callable[..., Any]
) -> None:
    codex = require_codex()
    server = mock_model([reply(Message("ready"), usage=None), reply(Message("ready"))])
    done, records = spend_run(
        sevro_project, codex, server, 2, "--max-cost-usd", "1", "--max-call-cost-usd", "0.25"
    )
    assert done.exit_code == 0, done.stdout + done.stderr
    assert [(r["kind"], r["usd"]) for r in records] == [
        ("reserve", 0.25), ("forfeit", 0.25),
        ("reserve", 0.25), ("reconcile", pytest.approx(CALL_COST)),
    ]  # fmt: skip
    totals = assert_valid_evidence(done.json())["spend"]["totals"]
    assert totals["chargedUsd"] == pytest.approx(0.25 + CALL_COST)
    assert (totals["forfeits"], totals["reconciled"]) == (1, 1)
