"""The live display of a run on a terminal, driven with an in-memory rich console."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest
from rich.console import Console

from sevro_core.models import TrialStates
from sevro_core.reporting.live import LiveDisplay, Tally, clock, outcome, remaining
from sevro_core.reporting.output import TrialProgress, live_terminal
from sevro_core.run.records import TrialRecord
from sevro_core.states import Execution, Grading, Verdict

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def record(
    arm: str | None,
    verdict: str = "passed",
    *,
    execution: str = "completed",
    grading: str = "completed",
    cost: float | None = None,
    tokens: int | None = None,
) -> TrialRecord:
    usage = {"costUsd": cost, "inputTokens": tokens, "outputTokens": tokens}
    return TrialRecord(
        case_id="greeting",
        trial=1,
        states=TrialStates(Execution(execution), Grading(grading), Verdict(verdict)),
        checks=(),
        path=None,
        arm=arm,
        document={"evidence": {"usage": usage}},
    )


def terminal() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=True, width=120, no_color=True), out


def text(out: io.StringIO) -> str:
    return ANSI.sub("", out.getvalue())


def frame(display: LiveDisplay) -> str:
    console, out = terminal()
    console.print(display.render(final=False))
    return text(out)


def row(screen: str, label: str) -> list[str]:
    line = next(line for line in screen.splitlines() if line.split()[:1] == [label])
    return line.split()[1:]


def test_counts_per_arm_update_as_trials_finish() -> None:
    display = LiveDisplay({"baseline": 3, "candidate": 3})
    assert row(frame(display), "baseline") == ["0/3", "0", "0", "0"]
    display.advance(record("baseline", "failed"))
    display.advance(record("candidate", "passed"))
    display.advance(record("candidate", "not_assessed", execution="failed"))
    screen = frame(display)
    assert row(screen, "baseline") == ["1/3", "0", "1", "0"]
    assert row(screen, "candidate") == ["2/3", "1", "0", "1"]
    assert "3/6 trials" in screen
    display.advance(record("baseline", "passed"))
    assert row(frame(display), "baseline") == ["2/3", "1", "1", "0"]
    assert "4/6 trials" in frame(display)


def test_a_run_without_arms_has_one_row() -> None:
    display = LiveDisplay({None: 2})
    display.advance(record(None, "failed", grading="error"))
    screen = frame(display)
    assert row(screen, "run") == ["1/2", "0", "0", "1"]
    assert "arm" not in screen


def test_remaining_time_is_unknown_until_a_trial_finishes(monkeypatch: Any) -> None:
    display = LiveDisplay({None: 4})
    display.started = 1000.0
    monkeypatch.setattr("sevro_core.reporting.live.time.monotonic", lambda: 1030.0)
    assert "remaining unknown" in frame(display) and "left" not in frame(display)
    display.advance(record(None))
    screen = frame(display)  # 30 s for one trial, three to go
    assert "30.0s elapsed" in screen and "~1m30s left" in screen
    assert "remaining unknown" not in screen
    assert remaining(30.0, 1, 4) == 90.0 and remaining(30.0, 0, 4) is None
    assert remaining(30.0, 4, 4) == 0.0


def test_spend_is_shown_only_when_known_and_says_what_is_unknown() -> None:
    display = LiveDisplay({None: 3})
    display.advance(record(None, tokens=None))
    assert "cost" not in frame(display) and "tokens" not in frame(display)
    display.advance(record(None, cost=0.25, tokens=1000))
    screen = frame(display)
    assert "cost $0.2500 (1 trial(s) unknown)" in screen and "2,000 tokens" in screen
    display.advance(record(None, cost=0.5, tokens=None))
    assert "cost $0.7500 (1 trial(s) unknown)" in frame(display)
    tally = Tally({None: 1})
    tally.add(record(None, cost=True))  # type: ignore[arg-type]  # not a number: not a cost
    assert tally.costed == 0


def test_arm_names_are_escaped_and_bounded() -> None:
    display = LiveDisplay({"evil\x1b[2J" + "x" * 100: 1})
    screen = frame(display)
    assert "\x1b[2J" not in screen and "\\x1b" in screen
    assert "x" * 60 not in screen


def test_the_live_table_is_cleared_and_the_final_table_stays() -> None:
    console, out = terminal()
    display = LiveDisplay({"baseline": 1, "candidate": 1}, console)
    display.start()
    display.advance(record("baseline"))
    display.advance(record("candidate", "failed"))
    display.stop(summary=True)
    raw = out.getvalue()
    assert raw.startswith("\x1b[?25l")  # cursor hidden while live ...
    assert "\x1b[?25h" in raw  # ... and shown again
    final = ANSI.sub("", raw[raw.rindex("\x1b[?25h") :])
    assert "sevro run finished" in final and "left" not in final
    assert row(final, "candidate") == ["1/1", "0", "1", "0"]


def test_a_stopped_run_says_so_and_an_exception_prints_no_table() -> None:
    console, out = terminal()
    display = LiveDisplay({None: 2}, console)
    display.start()
    display.advance(record(None))
    display.stop(summary=True)
    assert "sevro run stopped" in text(out)
    console, out = terminal()
    with pytest.raises(KeyboardInterrupt), TrialProgress(2, enabled=True, console=console):
        raise KeyboardInterrupt
    assert "\x1b[?25h" in out.getvalue() and "stopped" not in text(out)


def test_trial_progress_feeds_the_display_only_when_enabled() -> None:
    console, out = terminal()
    with TrialProgress(2, enabled=True, console=console, status_interval=0) as progress:
        progress.advance(record(None))
        progress.advance(record(None, "failed"))
    assert row(text(out)[text(out).rindex("sevro run finished") :], "run") == [
        "2/2",
        "1",
        "1",
        "0",
    ]
    console, out = terminal()
    with TrialProgress(2, enabled=False, console=console, status_interval=0) as progress:
        progress.advance(record(None))
    assert out.getvalue() == ""


def test_live_terminal_needs_a_tty_that_can_redraw(monkeypatch: Any) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setenv("TERM", "xterm-256color")
    assert live_terminal(Tty())
    assert not live_terminal(io.StringIO())
    for term in ("dumb", "unknown"):
        monkeypatch.setenv("TERM", term)
        assert not live_terminal(Tty())


def test_outcome_and_clock() -> None:
    assert outcome(record(None)) == "passed"
    assert outcome(record(None, "failed")) == "failed"
    assert outcome(record(None, "not_assessed", execution="cancelled")) == "error"
    assert outcome(record(None, "failed", grading="error")) == "error"
    assert [clock(s) for s in (5.0, 125.0, 7380.0)] == ["5.0s", "2m05s", "2h03m"]
