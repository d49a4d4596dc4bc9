"""``--junit FILE`` and ``--github-summary``: what CI systems read, from verified evidence.

Both are built from the ``sevro.report.v1`` document ``sevro report`` builds (so a run's CI
outputs are those of its retained evidence, verified), checked before anything runs (a file
that cannot be written is refused with exit 64, not found out after an hour of trials) and
written so that a reader never sees half of them: JUnit atomically, the summary appended in one
bounded write.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from attrs import frozen

from sevro_core.errors import InvocationError
from sevro_core.limits import MAX_GITHUB_SUMMARY_BYTES

SUMMARY_VARIABLE = "GITHUB_STEP_SUMMARY"
NO_SUMMARY_NOTE = f"--github-summary: ${SUMMARY_VARIABLE} is not set; no summary written"


@frozen
class CiOutputs:
    """The CI outputs one command was asked for."""

    junit: Path | None = None
    github_summary: bool = False

    @property
    def wanted(self) -> bool:
        return self.junit is not None or self.github_summary


def check_writable_file(path: Path, flag: str) -> None:
    """Refuse (exit 64) a path that is a directory or whose parent is missing or not writable."""
    parent = path.parent
    if path.is_dir():
        raise InvocationError(f"{flag} must name a file, not a directory", source=str(path))
    if not parent.is_dir():
        raise InvocationError(f"{flag}: the directory {parent} does not exist", source=str(path))
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InvocationError(f"{flag}: the directory {parent} is not writable", source=str(path))
    if path.exists() and not os.access(path, os.W_OK):
        raise InvocationError(f"{flag}: the file is not writable", source=str(path))


def summary_path(environ: Mapping[str, str]) -> Path | None:
    """The step summary file GitHub Actions names, or None outside GitHub Actions."""
    value = environ.get(SUMMARY_VARIABLE, "")
    return Path(value) if value else None


def check_ci_outputs(outputs: CiOutputs, environ: Mapping[str, str] = os.environ) -> None:
    """Everything about the CI outputs that can be refused before anything runs."""
    if outputs.junit is not None:
        check_writable_file(outputs.junit, "--junit")
    path = summary_path(environ) if outputs.github_summary else None
    if path is not None:
        check_writable_file(path, f"--github-summary (${SUMMARY_VARIABLE})")


def write_junit(path: Path, report: Mapping[str, Any]) -> None:
    """Write the report's JUnit XML to ``path`` atomically (a reader never sees half of it)."""
    from sevro_core.formats.jsonio import write_private_atomic
    from sevro_core.reporting.junit import junit_document

    write_private_atomic(path, junit_document(report))


def bounded_summary(markdown: str, room: int) -> bytes:
    """``markdown`` as UTF-8 in at most ``room`` bytes, cut at a line with a note saying so."""
    data = markdown.encode("utf-8")
    if len(data) <= room:
        return data
    note = b"\n\n*Summary cut at GitHub's size limit; the full report: `sevro report RUN_DIR`.*\n"
    if room <= len(note):
        return b""
    kept = data[: room - len(note)]
    cut = kept.rfind(b"\n")
    return kept[: max(cut, 0)] + note


def append_github_summary(markdown: str, path: Path) -> int:
    """Append ``markdown`` to the step summary in one write, within GitHub's cap for the whole
    file (what the step wrote before counts); returns the bytes appended (0: no room left)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        room = MAX_GITHUB_SUMMARY_BYTES - os.fstat(fd).st_size
        data = bounded_summary(markdown if markdown.endswith("\n") else markdown + "\n", room)
        if data:
            from sevro_core.formats.fileio import write_all

            write_all(fd, data)
        return len(data)
    finally:
        os.close(fd)


def write_ci_outputs(
    outputs: CiOutputs,
    report: Mapping[str, Any],
    render_markdown: Callable[[Mapping[str, Any]], str],
    on_note: Callable[[str], object],
    environ: Mapping[str, str] = os.environ,
) -> None:
    """Write the JUnit file and append the step summary asked for; a summary without
    ``$GITHUB_STEP_SUMMARY`` is a note, not an error (the same command runs outside CI)."""
    if outputs.junit is not None:
        write_junit(outputs.junit, report)
    if not outputs.github_summary:
        return
    path = summary_path(environ)
    if path is None:
        on_note(NO_SUMMARY_NOTE)
    elif append_github_summary(render_markdown(report), path) == 0:
        on_note(f"--github-summary: {path} is at GitHub's size limit; no summary appended")


def run_ci_outputs(
    outputs: CiOutputs,
    run_json: Path,
    render_markdown: Callable[[Mapping[str, Any]], str],
    on_note: Callable[[str], object],
) -> None:
    """The CI outputs of a run that just finished, from its retained, verified evidence."""
    from sevro_core.reporting.report import build_report

    report = build_report([run_json], details=True, on_note=on_note)
    write_ci_outputs(outputs, report, render_markdown, on_note)
