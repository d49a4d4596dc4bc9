"""What is left of a call's spend ceiling, and how a budget stop parses (no CLI needed).

The real CLI's behaviour is in test_budget_real_cli.py; these cover what it cannot produce:
a turn whose cost Claude Code did not report, and amounts at the edge of a billionth.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from sevro_hosts_claude.budget import CallBudget, dollars
from sevro_hosts_claude.events import parse_turn
from tests.hosts_claude.test_events import INIT, result, stream

PROCESS = {
    "claude-sonnet-4-5": {
        "inputTokens": 1000,
        "outputTokens": 7,
        "cacheReadInputTokens": 30,
        "cacheCreationInputTokens": 5,
        "thinkingTokens": 2,
        "costUSD": 0.5,
    }
}
ZERO = {"input_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}


def stopped(**fields: Any) -> bytes:
    """A result as 2.1.332 ends a turn at its budget: is_error, zero usage, per-model usage."""
    event = result(
        subtype="error_max_budget_usd",
        is_error=True,
        errors=["Reached maximum budget ($0.01)"],
        usage={**ZERO, "output_tokens": 0},
        model_usage_since_last_result=PROCESS,
    )
    event.update(fields)
    del event["result"]  # a budget stop has no result text
    return stream(INIT, event)


def test_without_a_ceiling_there_is_no_flag_and_nothing_is_refused() -> None:
    budget = CallBudget(None)
    budget.settled(1, None)  # even an unknown cost refuses nothing without a ceiling
    assert budget.flag() == [] and budget.refusal(2) is None and budget.left() is None


def test_each_turn_gets_the_ceiling_less_the_sessions_reported_cost() -> None:
    budget = CallBudget(1.0)
    assert budget.flag() == ["--max-budget-usd", "1"] and budget.refusal(1) is None
    budget.settled(1, 0.30015000000000003)
    assert budget.flag() == ["--max-budget-usd", "0.69985"]
    budget.settled(2, 0.6003000000000001)  # cumulative, as Claude Code reports it
    assert budget.flag() == ["--max-budget-usd", "0.3997"] and budget.refusal(3) is None


def test_a_lower_reported_total_never_gives_back_what_was_spent() -> None:
    budget = CallBudget(1.0)
    budget.settled(1, 0.6)
    budget.settled(2, 0.1)
    assert budget.flag() == ["--max-budget-usd", "0.4"]


def test_an_unreported_cost_refuses_every_later_turn() -> None:
    budget = CallBudget(5.0)
    budget.settled(1, None)
    budget.settled(2, 0.1)
    refusal = budget.refusal(3)
    assert refusal == (
        "turn 3 not started: Claude Code reported no cost for turn 1, so what is left of "
        "the call's spend ceiling of $5 cannot be known"
    )


@pytest.mark.parametrize("spent", [0.25, 0.3, 0.2499999999])  # the last leaves < $1e-9
def test_a_used_up_ceiling_refuses_the_next_turn(spent: float) -> None:
    budget = CallBudget(0.25)
    budget.settled(1, spent)
    refusal = budget.refusal(2)
    assert refusal is not None and refusal.startswith(
        "turn 2 not started: the call's spend ceiling of $0.25 is used up"
    )


def test_negative_control_a_billionth_left_still_runs() -> None:
    budget = CallBudget(0.25)
    budget.settled(1, 0.249999999)
    assert budget.refusal(2) is None and budget.flag() == ["--max-budget-usd", "0.000000001"]


@pytest.mark.parametrize("ceiling", [0.0, -1.0, math.inf, math.nan])
def test_a_ceiling_that_is_no_positive_amount_refuses_the_first_turn(ceiling: float) -> None:
    refusal = CallBudget(ceiling).refusal(1)
    assert refusal is not None and refusal.startswith("turn 1 not started:")


def test_amounts_are_plain_decimals_cut_never_rounded_up() -> None:
    assert dollars(1e-9) == "0.000000001" and dollars(1e-10) == "0"
    assert dollars(0.1 + 0.2) == "0.3" and dollars(2.0) == "2"
    assert dollars(0.1234567899) == "0.123456789"


def test_a_budget_stop_is_marked_and_keeps_the_processs_usage() -> None:
    turn = parse_turn(stopped(total_cost_usd=0.75))
    assert turn.budget_exhausted and not turn.completed
    assert turn.failure == "error_max_budget_usd: Reached maximum budget ($0.01)"
    usage = turn.usage
    assert usage.input_tokens == 1035 and usage.cached_input_tokens == 30
    assert usage.output_tokens == 7 and usage.reasoning_tokens == 2 and usage.complete
    assert usage.reported_cost_usd == 0.75


@pytest.mark.parametrize(
    "by_model",
    [
        None,
        {},
        {**PROCESS, "claude-haiku-4-5": PROCESS["claude-sonnet-4-5"]},  # two models
        {"claude-sonnet-4-5": {**PROCESS["claude-sonnet-4-5"], "inputTokens": -1}},
        {"claude-sonnet-4-5": {"inputTokens": 0, "cacheReadInputTokens": 0, "outputTokens": 1}},
    ],
)
def test_negative_control_per_model_usage_that_cannot_be_used_stays_unknown(
    by_model: object,
) -> None:
    turn = parse_turn(stopped(model_usage_since_last_result=by_model, total_cost_usd=0.75))
    assert turn.usage.input_tokens is None and not turn.usage.complete
    assert turn.usage.reported_cost_usd == 0.75


def test_negative_control_measured_usage_wins_over_the_per_model_figures() -> None:
    turn = parse_turn(stream(INIT, result(model_usage_since_last_result=PROCESS)))
    assert turn.usage.input_tokens == 105 and not turn.budget_exhausted


def test_negative_control_another_failure_is_no_budget_stop() -> None:
    turn = parse_turn(stream(INIT, result(subtype="error_max_turns", is_error=True)))
    assert not turn.budget_exhausted and not turn.completed
