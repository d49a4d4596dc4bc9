"""Human output: progress (a live table on a terminal, lines elsewhere), then a summary table.

rich is imported only when a terminal is attached; pipes and ``--json`` never load it.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from sevro_core.limits import DEFAULT_STATUS_INTERVAL_SECONDS
from sevro_core.plugin.manager import PluginInfo
from sevro_core.reporting.failures import escape_text
from sevro_core.store.spendgate import SPEND_STOP_CODE


class TrialProgress:
    """Progress on stderr: a live table on a terminal (:mod:`~sevro_core.reporting.live`), plain
    lines everywhere else.

    Off a terminal (CI logs, pipes, ``--json``) it prints one line per finished trial at ``-v``
    and, by default, a status line every ``status_interval`` seconds, so a long run is never
    silent while a short one prints nothing. Lines are written with one ``os.write`` each, so
    they never interleave and never wait on a lock a signal handler could hold.
    """

    def __init__(
        self,
        total: int,
        *,
        enabled: bool,
        verbose: int = 0,
        status_interval: float = DEFAULT_STATUS_INTERVAL_SECONDS,
        json_lines: bool = False,
        arms: Mapping[str | None, int] | None = None,
        console: Any = None,
    ) -> None:
        self.total = total
        self.arms = arms
        self.console = console
        self.json_lines = json_lines
        self.enabled = enabled
        self.verbose = verbose
        self.status_interval = status_interval
        self.finished = 0
        self.passed = 0
        self._live: Any = None
        self._started = time.monotonic()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def __enter__(self) -> TrialProgress:
        self._started = time.monotonic()
        if self.enabled:
            from sevro_core.reporting.live import LiveDisplay

            self._live = LiveDisplay(self.arms or {None: self.total}, self.console)
            self._live.start()
        elif self.status_interval > 0:
            self._ticker = threading.Thread(target=self._tick, name="sevro-status", daemon=True)
            self._ticker.start()
        return self

    def advance(self, record: Any) -> None:
        self.finished += 1
        passed = record.states.verdict.value == "passed"
        self.passed += passed
        if self._live is not None:
            self._live.advance(record)
        elif self.verbose >= 1:
            line = (
                f"trial {self.finished}/{self.total} finished: {escape_text(record.case_id)} "
                f"#{record.trial} {record.states.verdict.value} "
                f"(execution {record.states.execution.value}, "
                f"grading {record.states.grading.value}) after {self._elapsed()}"
            )
            reason = None if passed else _record_reason(record)
            self._emit(
                line + (f": {reason}" if reason else ""),
                event="trial progress",
                finished=self.finished,
                total=self.total,
                case=record.case_id,
                trial=record.trial,
                execution=record.states.execution.value,
                grading=record.states.grading.value,
                task=record.states.verdict.value,
                reason=reason,
            )

    def reused(self, records: Sequence[Any]) -> None:
        """Count the trials a resumed run keeps from its earlier attempt as done (the table's
        counts and its "finished" title stay true), without a line for each off a terminal."""
        self.finished += len(records)
        self.passed += sum(r.states.verdict.value == "passed" for r in records)
        if self._live is not None:
            self._live.reused(records)

    def _elapsed(self) -> str:
        seconds = time.monotonic() - self._started
        if seconds < 60:
            return f"{seconds:.1f}s"
        whole = int(seconds)
        return f"{whole // 60}m{whole % 60:02d}s"

    def _tick(self) -> None:
        while not self._stop.wait(self.status_interval):
            self._emit(
                f"{self.finished}/{self.total} trials finished ({self.passed} passed), "
                f"{self._elapsed()} elapsed",
                event="run status",
                finished=self.finished,
                total=self.total,
                passed=self.passed,
                elapsed_s=round(time.monotonic() - self._started, 1),
            )

    def _emit(self, line: str, *, event: str, **fields: Any) -> None:
        """A text line, or with ``--log-format json`` a JSON event like the log's own."""
        if not self.json_lines:
            _write_line(f"sevro: {line}")
            return
        import datetime
        import json

        now = datetime.datetime.now(datetime.UTC).isoformat()
        document = {"event": event, "level": "info", "timestamp": now, **fields}
        _write_line(json.dumps(document, sort_keys=True))

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join(timeout=1.0)
        if self._live is not None:  # the final table only after a run that returned
            self._live.stop(summary=exc_type is None)


def live_terminal(stream: Any) -> bool:
    """Whether ``stream`` is a terminal that can redraw in place (``TERM=dumb`` cannot; rich
    treats ``unknown`` the same)."""
    try:
        tty = bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
    return tty and os.environ.get("TERM", "").lower() not in ("dumb", "unknown")


def _record_reason(record: Any) -> str | None:
    from sevro_core.reporting.failures import trial_reason

    document = record.document
    if document is None:
        return None
    try:
        return trial_reason(document["evidence"])
    except (KeyError, TypeError):
        return None


def _write_line(line: str) -> None:
    """One whole line on stderr in one write (no Python-level lock is taken)."""
    data = f"{line}\n".encode("utf-8", "replace")
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        sys.stderr.write(data.decode())
        return
    try:
        while data:
            data = data[os.write(fd, data) :]
    except OSError:
        pass  # a closed stderr must not cost the run


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A plain, aligned text table (readable in logs, pipes and terminals alike)."""
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)
    ]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join(lines) + "\n"


def render_summary(
    result: dict[str, Any],
    statistics: Mapping[str, Any] | None = None,
    skill_eval: Mapping[str, Any] | None = None,
    *,
    advisory: bool = False,
) -> str:
    """The run's table (an experiment's rows are ``case@arm``), its states, failures and, for an
    experiment, each comparison's verdict in one sentence; for a skill-eval definition what was
    not selected and each comparison's transitions; with ``advisory`` (the run had an advisory
    judge) each trial's review, labelled advice."""
    from sevro_core.models import unit_key

    rows = []
    for case in result["cases"]:
        rate = "unknown" if case["passRate"] is None else f"{case['passRate'] * 100:.0f}%"
        rows.append(
            [
                unit_key(case["caseId"], case.get("arm")),
                str(case["trialCount"]),
                f"{case['passedTrials']}/{case['trialCount']}",
                rate,
                case["execution"],
                case["grading"],
                case["task"],
            ]
        )
    out = table(["case", "trials", "passed", "rate", "execution", "grading", "task"], rows)
    out += (
        f"\nexecution={result['execution']['status']} grading={result['grading']['status']} "
        f"task={result['task']['verdict']}\n"
    )
    if result["task"]["verdict"] == "not_assessed" and result["exitCode"] == 0:
        out += "note: nothing was assessed (dry run or no checks); exit 0 is not a pass\n"
    out += _failure_lines(result)
    if advisory:
        out += _advisory_lines(result)
    if statistics is not None:
        from sevro_core.reporting.experiment import (
            judge_cost_sentences,
            judged_sentences,
            verdict_sentence,
        )

        run_dir = escape_text(str(Path(result["evidencePath"]).parent), 4096)
        out += f"\nexperiment (details: sevro report {run_dir}):\n"
        for comparison in statistics["comparisons"]:
            out += f"  {verdict_sentence(comparison)}\n"
            if "judged" in comparison:  # the model judge's opinion, on its own line
                out += f"  {judged_sentences(comparison)[1]}\n"
                cost = judge_cost_sentences(comparison["judged"].get("usage"))
                out += "".join(f"  {line}\n" for line in cost)
        if not statistics["comparisons"]:
            out += "  one arm, nothing compared: compare it with sevro report --compare A B\n"
        if "triggers" in statistics:
            from sevro_core.reporting.experiment import trigger_change_sentences, trigger_sentences

            triggers = statistics["triggers"]
            lines = [*trigger_sentences(triggers), *trigger_change_sentences(triggers)]
            out += "".join(f"  {line}\n" for line in lines)
    if skill_eval is not None:
        from sevro_core.reporting.skilleval import skilleval_lines

        out += skilleval_lines(skill_eval, statistics)
    if "diagnostic" in result and result["diagnostic"]["code"] == "sevro.experiment.regressed":
        out += f"exit 1: {result['diagnostic']['message']}\n"
    if "diagnostic" in result and result["diagnostic"]["code"] == SPEND_STOP_CODE:
        message = escape_text(result["diagnostic"]["message"], 1000)
        out += (
            f"exit 5: stopped at the spend ceiling: {message}; the finished trials are kept "
            "(resume with --resume and a higher --max-cost-usd to go on)\n"
        )
    out += f"evidence={result['evidencePath']}\n"
    return out


def spend_line(spend: Mapping[str, Any]) -> str:
    """One line on what the run's journal charged against its ceiling (docs/spend.md)."""
    totals, ceiling = spend["totals"], spend["ceilings"]["run"]
    of = f" of the ${ceiling:g} ceiling" if ceiling is not None else ""
    forfeits = totals["forfeits"]
    return (
        f"spend: ${totals['chargedUsd']:.4f} charged{of} over {totals['reservations']} calls; "
        f"{forfeits} forfeited (${totals['forfeitedUsd']:.4f} charged at their ceiling)\n"
    )


def _failure_lines(result: dict[str, Any]) -> str:
    """Why each failed or errored case did not pass: its first failing check or error."""
    from sevro_core.limits import MAX_SUMMARY_FAILED_CASES, MAX_SUMMARY_REASONS_PER_CASE
    from sevro_core.reporting.failures import render_failures, result_failures

    failures, more = result_failures(result, MAX_SUMMARY_FAILED_CASES)
    if not failures and not more:
        return ""
    run_dir = Path(result["evidencePath"]).parent
    lines = render_failures(failures, max_reasons=MAX_SUMMARY_REASONS_PER_CASE)
    if more:
        lines.append(f"  … and {more} more case(s)")
    lines.append(f"  (all reasons: sevro report --details {escape_text(str(run_dir), 4096)})")
    return "\nwhy cases did not pass (first failing check or error per trial):\n" + (
        "\n".join(lines) + "\n"
    )


def _advisory_lines(result: Mapping[str, Any]) -> str:
    """Each trial's advisory findings and answers, bounded (the rest: ``sevro report``)."""
    from sevro_core.limits import MAX_SUMMARY_ADVISORY_LINES, MAX_SUMMARY_TRIAL_FILES
    from sevro_core.models import unit_key
    from sevro_core.reporting.advisory import LABEL, advisory_lines, advisory_trials
    from sevro_core.reporting.failures import read_trial_evidence

    run_dir = Path(result["evidencePath"]).parent
    lines: list[str] = []
    budget = MAX_SUMMARY_TRIAL_FILES
    for case in result["cases"]:
        read = []
        for trial in case["trials"]:
            if not trial.get("artifactPath") or budget <= 0:
                continue
            budget -= 1
            evidence = read_trial_evidence(run_dir / trial["artifactPath"])
            if evidence is not None:
                read.append((trial["trial"], evidence))
        try:
            reviewed = advisory_trials(read)
        except (KeyError, TypeError):  # a file outside the schema explains nothing here
            continue
        lines += advisory_lines(escape_text(unit_key(case["caseId"], case.get("arm"))), reviewed)
    if not lines:
        return ""
    shown = lines[:MAX_SUMMARY_ADVISORY_LINES]
    if len(lines) > len(shown):
        shown.append(f"… and {len(lines) - len(shown)} more line(s)")
    shown.append(f"(all reviews: sevro report {escape_text(str(run_dir), 4096)})")
    return f"\n{LABEL}:\n" + "".join(f"  {line}\n" for line in shown)


def render_plugins(plugins: Sequence[PluginInfo]) -> str:
    rows = []
    for info in plugins:
        dist = f"{info.distribution} {info.version}" if info.distribution else info.module
        items = [(r.kind, r.id, ", ".join(r.capabilities) or "-") for r in info.registrations]
        items += [("command", name, "-") for name in info.commands]
        if not items:
            rows.append([info.name, dist, "-", "-", "-"])
        for kind, object_id, caps in items:
            rows.append([info.name, dist, kind, object_id, caps])
    return table(["plugin", "distribution", "kind", "id", "capabilities"], rows)
