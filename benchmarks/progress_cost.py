"""What the live display of a run on a terminal costs per finished trial.

Per shape (a plain run, one row; an experiment with 2 and with 10 arms):

* ``update``: :meth:`LiveDisplay.advance` while the display is live on a terminal console (an
  in-memory file with ``force_terminal``) and rich's refresh thread redraws it
  ``LIVE_REFRESH_PER_SECOND`` times a second: what the run's thread pays per finished trial
  (updates are spaced by ``--gap-ms`` so redraws happen among them);
* ``redraw``: drawing the whole table once, which the refresh thread does at most
  ``LIVE_REFRESH_PER_SECOND`` times a second however fast trials finish; its share of one core
  is printed beside it.

Medians and 95th percentiles in milliseconds, shapes interleaved round by round (the machine is
shared and noisy). The budget is 0.5 ms per update (``--check`` exits 1 above it).
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import time
from typing import Any

BUDGET_MS = 0.5


def records(arms: list[str | None], count: int) -> list[Any]:
    from sevro_core.models import TrialStates
    from sevro_core.run.records import TrialRecord
    from sevro_core.states import Execution, Grading, Verdict

    verdicts = [Verdict.PASSED, Verdict.FAILED, Verdict.PASSED]
    usage = {"costUsd": 0.0123, "inputTokens": 1200, "outputTokens": 300}
    return [
        TrialRecord(
            case_id=f"case-{index % 40}",
            trial=index,
            states=TrialStates(Execution.COMPLETED, Grading.COMPLETED, verdicts[index % 3]),
            checks=(),
            path=None,
            arm=arms[index % len(arms)],
            document={"evidence": {"usage": usage}},
        )
        for index in range(count)
    ]


def updates(arms: list[str | None], count: int, gap_ms: float) -> list[float]:
    """Each ``advance`` of a live display, ``gap_ms`` apart."""
    from rich.console import Console

    from sevro_core.reporting.live import LiveDisplay

    console = Console(file=io.StringIO(), force_terminal=True, width=100)
    display = LiveDisplay(dict.fromkeys(arms, count), console)
    display.start()
    timings = []
    try:
        for record in records(arms, count):
            started = time.perf_counter()
            display.advance(record)
            timings.append((time.perf_counter() - started) * 1000)
            time.sleep(gap_ms / 1000)
    finally:
        display.stop(summary=False)
    return timings


def redraws(arms: list[str | None], count: int) -> list[float]:
    """Drawing the table ``count`` times, a trial counted before each."""
    from rich.console import Console

    from sevro_core.reporting.live import LiveDisplay

    display = LiveDisplay(dict.fromkeys(arms, count))
    timings = []
    for record in records(arms, count):
        display.advance(record)
        console = Console(file=io.StringIO(), force_terminal=True, width=100)
        started = time.perf_counter()
        console.print(display.render(final=False))
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def main() -> int:
    from sevro_core.limits import LIVE_REFRESH_PER_SECOND

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=1000)
    parser.add_argument("--redraws", type=int, default=200)
    parser.add_argument("--gap-ms", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--check", action="store_true", help="exit 1 over the budget")
    options = parser.parse_args()
    shapes: dict[str, list[str | None]] = {
        "plain run": [None],
        "2 arms": ["baseline", "candidate"],
        "10 arms": [f"arm-{index}" for index in range(10)],
    }
    found: dict[tuple[str, str], list[float]] = {}
    for _ in range(options.rounds):
        for name, arms in shapes.items():
            found.setdefault((name, "update"), []).extend(
                updates(arms, options.updates, options.gap_ms)
            )
            found.setdefault((name, "redraw"), []).extend(redraws(arms, options.redraws))
    over = False
    print(f"{'shape':<10}  {'measure':<7}  {'median ms':>9}  {'p95 ms':>7}  share of a core")
    for (name, measure), timings in found.items():
        median = statistics.median(timings)
        p95 = statistics.quantiles(timings, n=20)[-1]
        share = ""
        if measure == "redraw":
            share = f"{median * LIVE_REFRESH_PER_SECOND / 10:.1f}% at {LIVE_REFRESH_PER_SECOND}/s"
        else:
            over = over or median > BUDGET_MS
        print(f"{name:<10}  {measure:<7}  {median:>9.4f}  {p95:>7.4f}  {share}")
    print(f"budget: median update <= {BUDGET_MS} ms" + (" (EXCEEDED)" if over else " (met)"))
    return 1 if options.check and over else 0


if __name__ == "__main__":
    sys.exit(main())
