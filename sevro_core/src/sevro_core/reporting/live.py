"""The live display of a run on a terminal: counts per arm, elapsed and remaining time, spend.

Only :class:`~sevro_core.reporting.output.TrialProgress` uses it, and only when stderr is a
terminal that can redraw (not ``TERM=dumb``) and ``--json`` is off, so pipes never import rich.
The run thread only counts (:meth:`LiveDisplay.advance`); rich's refresh thread draws a few times a
second, so a burst of fast trials costs microseconds each, not a redraw each.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

from sevro_core.limits import LIVE_REFRESH_PER_SECOND, MAX_LIVE_LABEL_CHARS
from sevro_core.reporting.failures import escape_text

RUN_ROW = "run"
"""The one row of a run without arms."""


def clock(seconds: float) -> str:
    """``12.3s`` under a minute, ``4m05s`` under an hour, ``2h03m`` beyond."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    whole = int(seconds)
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def outcome(record: Any) -> str:
    """``passed``, ``failed`` or ``error`` (the agent or a grader did not complete)."""
    if record.states.verdict.value == "passed":
        return "passed"
    if record.states.execution.value != "completed" or record.states.grading.value == "error":
        return "error"
    return "failed"


class Tally:
    """Finished trials per arm (``None``: a run without arms) and their known spend."""

    def __init__(self, totals: Mapping[str | None, int]) -> None:
        self.totals = dict(totals)
        self.counts: dict[str | None, dict[str, int]] = {
            arm: {"passed": 0, "failed": 0, "error": 0} for arm in self.totals
        }
        self.cost_usd = 0.0
        self.costed = 0
        self.tokens = 0
        self.lock = threading.Lock()

    def add(self, record: Any) -> None:
        usage = _usage(record)
        with self.lock:
            arm = record.arm
            if arm not in self.counts:  # a unit the plan did not announce still counts
                self.counts[arm] = {"passed": 0, "failed": 0, "error": 0}
                self.totals[arm] = 0
            self.counts[arm][outcome(record)] += 1
            cost = usage.get("costUsd")
            if isinstance(cost, int | float) and not isinstance(cost, bool):
                self.cost_usd += cost
                self.costed += 1
            for key in ("inputTokens", "outputTokens"):
                value = usage.get(key)
                if isinstance(value, int) and not isinstance(value, bool):
                    self.tokens += value

    def snapshot(self) -> tuple[list[tuple[str | None, int, dict[str, int]]], float, int, int]:
        """Rows (arm, total, counts), cost, trials with a known cost, tokens: one consistent read
        for the refresh thread."""
        with self.lock:
            rows = [(arm, self.totals[arm], dict(c)) for arm, c in self.counts.items()]
            return rows, self.cost_usd, self.costed, self.tokens


def _usage(record: Any) -> Mapping[str, Any]:
    document = record.document
    try:
        usage = document["evidence"]["usage"]
    except (KeyError, TypeError):
        return {}
    return usage if isinstance(usage, Mapping) else {}


def remaining(elapsed: float, done: int, total: int) -> float | None:
    """The time left at the pace so far; None before the first trial has finished."""
    if done <= 0:
        return None
    return elapsed / done * max(total - done, 0)


class LiveDisplay:
    """A table redrawn in place on stderr while the run lasts, then a final table that stays."""

    def __init__(self, totals: Mapping[str | None, int], console: Any = None) -> None:
        self.tally = Tally(totals)
        self.console = console
        self.started = time.monotonic()
        self.ended: float | None = None
        self._live: Any = None

    def start(self) -> None:
        from rich.console import Console
        from rich.live import Live

        if self.console is None:
            self.console = Console(stderr=True)
        self.started = time.monotonic()
        self._live = Live(
            self,
            console=self.console,
            refresh_per_second=LIVE_REFRESH_PER_SECOND,
            transient=True,
        )
        self._live.start()

    def advance(self, record: Any) -> None:
        self.tally.add(record)

    def stop(self, *, summary: bool) -> None:
        """Clear the live table (and restore the cursor); with ``summary``, print the final one."""
        self.ended = time.monotonic()
        if self._live is not None:
            self._live.stop()
            self._live = None
        if summary and self.console is not None:
            self.console.print(self.render(final=True))

    def __rich__(self) -> Any:
        return self.render(final=False)

    def render(self, *, final: bool) -> Any:
        """The table: a row per arm (one ``run`` row without arms), then a line with the times
        and spend."""
        from rich import box
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        rows, cost, costed, tokens = self.tally.snapshot()
        done = sum(sum(c.values()) for _, _, c in rows)
        total = sum(t for _, t, _ in rows)
        elapsed = (self.ended or time.monotonic()) - self.started
        table = Table(
            "arm" if any(arm is not None for arm, _, _ in rows) else "",
            "trials",
            "passed",
            "failed",
            "errors",
            title=Text(_title(final, done, total)),
            title_justify="left",
            box=box.SIMPLE_HEAD,
        )
        for arm, arm_total, counts in rows:
            label = RUN_ROW if arm is None else escape_text(arm, MAX_LIVE_LABEL_CHARS)
            table.add_row(
                Text(label),
                f"{sum(counts.values())}/{arm_total}",
                str(counts["passed"]),
                str(counts["failed"]),
                str(counts["error"]),
            )
        return Group(table, Text(_status(final, elapsed, done, total, (cost, costed, tokens))))


def _title(final: bool, done: int, total: int) -> str:
    if not final:
        return "sevro run"
    return "sevro run finished" if done >= total else "sevro run stopped"


def _status(
    final: bool, elapsed: float, done: int, total: int, spend: tuple[float, int, int]
) -> str:
    parts = [f"{done}/{total} trials", f"{clock(elapsed)} elapsed"]
    if not final:
        left = remaining(elapsed, done, total)
        parts.append("remaining unknown" if left is None else f"~{clock(left)} left")
    cost, costed, tokens = spend
    if costed:
        unknown = done - costed
        parts.append(f"cost ${cost:.4f}" + (f" ({unknown} trial(s) unknown)" if unknown else ""))
    if tokens:
        parts.append(f"{tokens:,} tokens")
    return " · ".join(parts)
