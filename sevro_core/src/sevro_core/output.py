"""Human output: a live progress bar on a terminal, then a summary table.

rich is imported only when a terminal is attached; pipes and ``--json`` never load it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from sevro_core.failures import escape_text
from sevro_core.plugins import PluginInfo


class TrialProgress:
    """Counts finished trials on stderr; a no-op when not on a terminal."""

    def __init__(self, total: int, *, enabled: bool) -> None:
        self.total = total
        self.enabled = enabled
        self._progress: Any = None
        self._task: Any = None

    def __enter__(self) -> TrialProgress:
        if self.enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

            self._progress = Progress(
                "[progress.description]{task.description}",
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            self._progress.start()
            self._task = self._progress.add_task("trials", total=self.total)
        return self

    def advance(self, record: Any) -> None:
        if self._progress is not None:
            self._progress.update(
                self._task, advance=1, description=f"{record.case_id} #{record.trial}"
            )

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._progress is not None:
            self._progress.stop()


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A plain, aligned text table (readable in logs, pipes and terminals alike)."""
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)
    ]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join(lines) + "\n"


def render_summary(result: dict[str, Any]) -> str:
    rows = []
    for case in result["cases"]:
        rate = "unknown" if case["passRate"] is None else f"{case['passRate'] * 100:.0f}%"
        rows.append(
            [
                case["caseId"],
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
    out += f"evidence={result['evidencePath']}\n"
    return out


def _failure_lines(result: dict[str, Any]) -> str:
    """Why each failed or errored case did not pass: its first failing check or error."""
    from sevro_core.failures import render_failures, result_failures
    from sevro_core.limits import MAX_SUMMARY_FAILED_CASES, MAX_SUMMARY_REASONS_PER_CASE

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
