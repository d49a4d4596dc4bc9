"""The call's spend ceiling (``HostRequest.max_cost_usd``) passed on to Claude Code.

Claude Code 2.1.332 bounds one ``claude -p`` process with ``--max-budget-usd <amount>`` (it
checks after each model response and ends the turn with a result of subtype
``error_max_budget_usd``), while the ``total_cost_usd`` its result reports is the session's
cost so far: a ``--resume`` carries the earlier turns' cost on. So each turn is given the
ceiling less the ``total_cost_usd`` the turn before reported, and the call's reported cost is
its last turn's, not a sum (tests/hosts_claude/test_budget_real_cli.py pins both).
"""

from __future__ import annotations

import math

BUDGET_SUBTYPE = "error_max_budget_usd"
"""The result subtype Claude Code ends a turn with when ``--max-budget-usd`` was reached."""


def dollars(value: float) -> str:
    """``value`` as the plain decimal Claude Code takes (no exponent), cut, never rounded up,
    at a billionth of a dollar."""
    return f"{_cut(value):.9f}".rstrip("0").rstrip(".")


def _cut(value: float) -> float:
    """``value`` cut at a billionth of a dollar, after rounding away float noise below that
    (``1 - 0.6003000000000001`` is 0.3997, not 0.399699999)."""
    return math.floor(round(value * 1e9, 3)) / 1e9


class CallBudget:
    """What is left of one call's ceiling before each of its turns."""

    def __init__(self, ceiling: float | None) -> None:
        self.ceiling = ceiling
        self.spent = 0.0
        """Claude Code's reported cost of the call's session after the latest turn."""
        self.unknown_after: int | None = None
        """A turn whose cost Claude Code did not report (what is left is then unknown)."""

    def settled(self, number: int, reported: float | None) -> None:
        """Turn ``number`` ended and Claude Code reported ``reported`` for the session."""
        if reported is None:
            self.unknown_after = number if self.unknown_after is None else self.unknown_after
        else:
            self.spent = max(self.spent, reported)  # the session's cost never goes down

    def left(self) -> float | None:
        """What the next turn may spend (cut at a billionth); None without a ceiling."""
        if self.ceiling is None:
            return None
        if not math.isfinite(self.ceiling):
            return 0.0  # not an amount: nothing may be spent
        return _cut(self.ceiling - self.spent)

    def refusal(self, number: int) -> str | None:
        """Why turn ``number`` must not start, or None: with a ceiling, a turn starts only
        when what is left is known and more than nothing (an unknown cost could already
        have used the ceiling up)."""
        if self.ceiling is None:
            return None
        ceiling = f"the call's spend ceiling of ${self.ceiling:g}"
        if self.unknown_after is not None:
            return (
                f"turn {number} not started: Claude Code reported no cost for turn "
                f"{self.unknown_after}, so what is left of {ceiling} cannot be known"
            )
        left = self.left()
        if left is not None and left <= 0 and number == 1:
            return f"turn 1 not started: {ceiling} leaves nothing to spend"
        if left is not None and left <= 0:
            return (
                f"turn {number} not started: {ceiling} is used up (Claude Code reported "
                f"${dollars(self.spent)} spent by turn {number - 1})"
            )
        return None

    def flag(self) -> list[str]:
        """``--max-budget-usd <what is left>``, or nothing without a ceiling."""
        left = self.left()
        return [] if left is None else ["--max-budget-usd", dollars(left)]

    def exceeded(self, number: int, reported: float | None) -> str:
        """The reason for a turn Claude Code stopped at its budget."""
        given = self.left()
        assert self.ceiling is not None and given is not None
        spent = f"${dollars(reported)}" if reported is not None else "an unreported amount"
        return (
            f"turn {number}: the call's spend ceiling of ${self.ceiling:g} was reached: "
            f"Claude Code stopped at --max-budget-usd {dollars(given)} "
            f"({BUDGET_SUBTYPE}; it reported {spent} spent by the call)"
        )
