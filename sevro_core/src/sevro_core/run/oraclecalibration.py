"""Oracle calibration: a case's reference results run as trials, so a weak check is caught.

A case may declare known-good, known-bad and adversarial variants (``calibration``). ``sevro
calibrate`` runs each as a real trial of the scripted host through the normal engine (fixture,
sandbox, graders, judges), one run for all of them, and compares the verdict each got with the
one it expects. Each variant becomes its own case, ``<case>--<variant>``, with the case's
prompts, fixture and checks unchanged, so its check and fixture digests are those ``sevro run``
computes. See docs/oracle-calibration.md.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from attrs import evolve, frozen

from sevro_core.errors import InvocationError, join_pointer
from sevro_core.formats.fileio import read_at_most
from sevro_core.formats.jsonio import JsonValue
from sevro_core.limits import MAX_CALIBRATION_OUTPUT_BYTES, MAX_CASE_ID_LENGTH
from sevro_core.models import CalibrationVariant, Case
from sevro_core.states import ExitCode

SEPARATOR = "--"
"""Between the case id and the variant id in the id of a variant's trial."""
SCRIPTED_FORMAT = "sevro.scripted-host.v1"
CONFIG_SOURCE = "calibration scripts"
"""What the scripted host's configuration is called in a refusal before it is traced back."""


@frozen
class Variant:
    """One variant to run: the case it belongs to and the id its trial runs under."""

    case: Case
    variant: CalibrationVariant
    run_id: str


@frozen
class CalibrationPlan:
    """What ``sevro calibrate`` hands the planner: cases and the scripted host's configuration."""

    variants: tuple[Variant, ...]
    cases: tuple[Case, ...]
    host_config: Mapping[str, JsonValue]


@frozen
class VariantOutcome:
    """A variant compared with what it expects; ``disagreeing`` names checks and statuses."""

    case_id: str
    variant_id: str
    kind: str
    expect: str
    got: str
    agrees: bool
    disagreeing: tuple[str, ...]
    assessed: bool


def calibration_plan(cases: Sequence[Case]) -> CalibrationPlan:
    """Every variant of every case as a case of its own and the script the host runs for it;
    refuses (exit 64) when no case declares a variant or a ``finalOutput`` file is unusable."""
    variants: list[Variant] = []
    seen: dict[str, str] = {}
    scripts: dict[str, JsonValue] = {}
    for case in cases:
        for index, variant in enumerate(case.calibration):
            run_id = f"{case.id}{SEPARATOR}{variant.id}"
            where = join_pointer(case.pointer, "calibration", index, "id")
            if len(run_id) > MAX_CASE_ID_LENGTH:
                raise InvocationError(
                    f"case id and variant id together exceed {MAX_CASE_ID_LENGTH} characters",
                    source=case.source,
                    pointer=where,
                )
            if run_id in seen or any(c.id == run_id for c in cases):
                raise InvocationError(
                    f"variant id {run_id!r} is also another case's or variant's id",
                    source=case.source,
                    pointer=where,
                )
            seen[run_id] = case.id
            scripts[run_id] = _script(case, index, variant)
            variants.append(Variant(case, variant, run_id))
    if not variants:
        raise InvocationError(
            "no case declares calibration variants (see docs/oracle-calibration.md)"
        )
    derived = tuple(evolve(v.case, id=v.run_id, calibration=()) for v in variants)
    config: dict[str, JsonValue] = {"format": SCRIPTED_FORMAT, "cases": scripts}
    return CalibrationPlan(variants=tuple(variants), cases=derived, host_config=config)


def _script(case: Case, index: int, variant: CalibrationVariant) -> JsonValue:
    if variant.script is not None:
        return dict(variant.script)
    assert variant.final_output is not None  # the loader requires exactly one
    pointer = join_pointer(case.pointer, "calibration", index, "finalOutput")
    text = read_final_output(Path(case.source).parent, variant.final_output, case.source, pointer)
    return {"turns": [[{"reply": {"text": text}}]]}


def read_final_output(base: Path, relative: str, source: str, pointer: str) -> str:
    """A regular file (not a symlink) under the case file's directory, bounded, UTF-8."""
    path = base / relative
    try:
        if any(p.is_symlink() for p in [path, *path.parents][: relative.count("/") + 1]):
            raise InvocationError(
                "finalOutput must not be a symlink", source=source, pointer=pointer
            )
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        message = f"finalOutput {relative!r} cannot be read: {exc.strerror or exc}"
        raise InvocationError(message, source=source, pointer=pointer) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InvocationError(
                f"finalOutput {relative!r} is not a regular file", source=source, pointer=pointer
            )
        data = read_at_most(fd, MAX_CALIBRATION_OUTPUT_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_CALIBRATION_OUTPUT_BYTES:
        raise InvocationError(
            f"finalOutput {relative!r} exceeds {MAX_CALIBRATION_OUTPUT_BYTES} bytes",
            source=source,
            pointer=pointer,
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvocationError(
            f"finalOutput {relative!r} is not UTF-8 text", source=source, pointer=pointer
        ) from None


def traced(plan: CalibrationPlan, exc: InvocationError) -> InvocationError:
    """A refusal of the generated scripted-host configuration, pointed at the variant's
    ``script`` in its case file instead (the configuration exists only in memory)."""
    if exc.source != CONFIG_SOURCE or exc.pointer is None:
        return exc
    for variant in plan.variants:
        prefix = join_pointer("/cases", variant.run_id)
        if exc.pointer == prefix or exc.pointer.startswith(prefix + "/"):
            index = variant.case.calibration.index(variant.variant)
            where = join_pointer(variant.case.pointer, "calibration", index, "script")
            rest = exc.pointer[len(prefix) :]
            return InvocationError(exc.message, source=variant.case.source, pointer=where + rest)
    return exc


def compare(plan: CalibrationPlan, result: Mapping[str, Any]) -> list[VariantOutcome]:
    """Each variant's verdict (from the run's result document) against the one it expects."""
    by_id = {c["caseId"]: c for c in result.get("cases", [])}
    return [_outcome(v, by_id.get(v.run_id)) for v in plan.variants]


def _outcome(entry: Variant, summary: Mapping[str, Any] | None) -> VariantOutcome:
    variant = entry.variant
    trials = summary["trials"] if summary is not None else []
    checks = {c["id"]: c["status"] for t in trials for c in t["checks"]}
    got = summary["task"] if summary is not None else "not_assessed"
    assessed = got in ("passed", "failed")
    if variant.failing_checks:
        wanted = {c.id: "passed" for c in entry.case.checks}
        wanted.update({c: "failed" for c in variant.failing_checks})
    elif variant.expect == "passed":
        wanted = {c.id: "passed" for c in entry.case.checks}
    else:
        wanted = {}
    disagreeing = tuple(
        f"{check}: {checks.get(check, 'missing')} (expected {status})"
        for check, status in wanted.items()
        if checks.get(check) != status
    )
    if variant.expect == "failed" and got == "passed" and not disagreeing:
        disagreeing = ("every check passed",)
    agrees = got == variant.expect and not disagreeing
    return VariantOutcome(
        case_id=entry.case.id,
        variant_id=variant.id,
        kind=variant.kind,
        expect=variant.expect,
        got=got,
        agrees=agrees,
        disagreeing=disagreeing,
        assessed=assessed,
    )


def calibration_exit(outcomes: Sequence[VariantOutcome], run_exit: int) -> int:
    """0 when every variant got what it expects; the run's own code (2, 3, 4 or a signal's)
    when a variant could not be assessed; otherwise 1: the checks are too weak or too strict."""
    if any(not o.assessed for o in outcomes) and run_exit not in (
        ExitCode.OK,
        ExitCode.TASK_FAILED,
    ):
        return run_exit
    if run_exit in (ExitCode.SIGINT, ExitCode.SIGTERM):
        return run_exit
    return int(ExitCode.OK if all(o.agrees for o in outcomes) else ExitCode.TASK_FAILED)
