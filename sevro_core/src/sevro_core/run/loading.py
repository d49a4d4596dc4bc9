"""Case loading: one case, an array of cases, or a directory of case files.

Loading is strict and bounded and happens before anything runs: every problem is an
:class:`InvocationError` naming the file and the JSON pointer at fault.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import cattrs
from attrs import evolve
from cattrs.gen import make_dict_structure_fn, override

from sevro_core.errors import InvocationError, join_pointer
from sevro_core.formats.jsonio import read_json_file
from sevro_core.formats.schemas import validate_input
from sevro_core.limits import (
    MAX_CASE_FILE_BYTES,
    MAX_CASE_FILES_IN_DIRECTORY,
    MAX_CASES_PER_RUN,
    MAX_PROMPT_BYTES,
)
from sevro_core.models import CalibrationVariant, Case, CheckDeclaration
from sevro_core.run.evaluator import read_evaluator

_converter = cattrs.Converter(forbid_extra_keys=True)
_converter.register_structure_hook(
    Case,
    make_dict_structure_fn(
        Case,
        _converter,
        _cattrs_forbid_extra_keys=True,
        follow_up_prompt=override(rename="followUpPrompt"),
        required_evidence=override(rename="requiredEvidence"),
        source=override(omit=True),
        pointer=override(omit=True),
        review_questions=override(omit=True),
        expected_output=override(omit=True),
        evaluator=override(omit=True),
        calibration=override(omit=True),
    ),
)
_converter.register_structure_hook(
    CheckDeclaration, make_dict_structure_fn(CheckDeclaration, _converter)
)


def case_files(paths: Sequence[Path]) -> Iterator[Path]:
    """Expand directories into their ``*.json`` files (sorted, not recursive, no symlinks)."""
    for path in paths:
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            raise InvocationError("case file does not exist", source=path) from None
        if stat.S_ISLNK(info.st_mode):
            target = path.resolve()
            if not target.exists():
                raise InvocationError("case file is a dangling symlink", source=path)
            info = os.stat(target)
        if not stat.S_ISDIR(info.st_mode):
            yield path
            continue
        entries = sorted(
            entry
            for entry in path.iterdir()
            if entry.suffix == ".json" and not entry.name.startswith(".")
        )
        if not entries:
            raise InvocationError("directory holds no *.json case files", source=path)
        if len(entries) > MAX_CASE_FILES_IN_DIRECTORY:
            raise InvocationError(
                f"directory holds more than {MAX_CASE_FILES_IN_DIRECTORY} case files", source=path
            )
        for entry in entries:
            if entry.is_symlink():
                raise InvocationError(
                    "case files inside a directory must not be symlinks", source=entry
                )
            yield entry


def load_cases(paths: Sequence[Path]) -> list[Case]:
    """Load, validate and structure every case; ids must be unique across the run."""
    if not paths:
        raise InvocationError("no case file given; pass one or more case files or directories")
    cases: list[Case] = []
    seen: dict[str, str] = {}
    for path in case_files(paths):
        document = read_json_file(path, MAX_CASE_FILE_BYTES, what="case file")
        if isinstance(document, list):
            if not document:
                raise InvocationError("case array is empty", source=path)
            items = [(join_pointer("", i), item) for i, item in enumerate(document)]
        elif isinstance(document, dict):
            items = [("", document)]
        else:
            raise InvocationError(
                "a case file holds one case object or an array of cases", source=path
            )
        for pointer, item in items:
            case = load_case(item, source=path, pointer=pointer)
            where = f"{path}#{pointer}" if pointer else str(path)
            if case.id in seen:
                raise InvocationError(
                    f"duplicate case id {case.id!r} (first defined at {seen[case.id]})",
                    source=path,
                    pointer=join_pointer(pointer, "id"),
                )
            seen[case.id] = where
            cases.append(case)
            if len(cases) > MAX_CASES_PER_RUN:
                raise InvocationError(f"more than {MAX_CASES_PER_RUN} cases in one run")
    return cases


def load_case(document: Any, *, source: str | Path, pointer: str = "") -> Case:
    """Validate one case document against ``case.v1`` and structure it."""
    if not isinstance(document, dict):
        raise InvocationError("a case must be a JSON object", source=source, pointer=pointer)
    _check_prompt_form(document, source, pointer)
    validate_input("case.v1", document, source=source, base=pointer)
    texts = [(join_pointer(pointer, k), document.get(k)) for k in ("prompt", "followUpPrompt")]
    texts += [
        (join_pointer(pointer, "turns", i), t) for i, t in enumerate(document.get("turns", []))
    ]
    for where, text in texts:
        if isinstance(text, str) and len(text.encode("utf-8")) > MAX_PROMPT_BYTES:
            raise InvocationError(
                f"longer than {MAX_PROMPT_BYTES} bytes", source=source, pointer=where
            )
    turns = len(document.get("turns", [])) or (2 if "followUpPrompt" in document else 1)
    check_ids: dict[str, int] = {}
    for index, check in enumerate(document["checks"]):
        if check["id"] in check_ids:
            raise InvocationError(
                f"duplicate check id {check['id']!r} (also /checks/{check_ids[check['id']]})",
                source=source,
                pointer=join_pointer(pointer, "checks", index, "id"),
            )
        check_ids[check["id"]] = index
        if check.get("turn", 1) > turns:
            raise InvocationError(
                f"turn {check['turn']} does not exist: the case has {turns} turn(s)",
                source=source,
                pointer=join_pointer(pointer, "checks", index, "turn"),
            )
    evaluator = read_evaluator(document.get("evaluator", {}), source=source, pointer=pointer)
    variants = _calibration(document, turns, source, pointer)
    document = {k: v for k, v in document.items() if k not in ("evaluator", "calibration")}
    if "turns" in document:
        document = {**document, "prompt": document["turns"][0]}
    case = _converter.structure(document, Case)
    return evolve(_with_origin(case, str(source), pointer, variants), evaluator=evaluator)


def _calibration(
    document: dict[str, Any], turns: int, source: str | Path, pointer: str
) -> tuple[CalibrationVariant, ...]:
    """The case's calibration variants, checked beyond the schema (docs/oracle-calibration.md):
    unique ids, one reference result each, a verdict that fits the kind, known check ids."""
    checks = {check["id"] for check in document["checks"]}
    seen: set[str] = set()
    out = []
    for index, item in enumerate(document.get("calibration", [])):

        def refuse(message: str, *where: str | int, index: int = index) -> InvocationError:
            at = join_pointer(pointer, "calibration", index, *where)
            return InvocationError(message, source=source, pointer=at)

        if item["id"] in seen:
            raise refuse(f"duplicate calibration variant id {item['id']!r}", "id")
        seen.add(item["id"])
        if ("script" in item) == ("finalOutput" in item):
            raise refuse("a calibration variant needs exactly one of 'script' and 'finalOutput'")
        wanted = {"good": "passed", "bad": "failed"}.get(item["kind"])
        if wanted is not None and item["expect"] != wanted:
            raise refuse(f"a {item['kind']} variant must expect {wanted}", "expect")
        failing = item.get("failingChecks", [])
        if failing and item["expect"] != "failed":
            raise refuse("failingChecks needs expect failed", "failingChecks")
        unknown = [c for c in failing if c not in checks]
        if unknown:
            raise refuse(
                f"failingChecks names no check of this case: {unknown[0]!r}", "failingChecks"
            )
        if "script" in item and len(item["script"]["turns"]) != turns:
            raise refuse(
                f"script has {len(item['script']['turns'])} turn(s) but the case has {turns}",
                "script",
                "turns",
            )
        output = item.get("finalOutput")
        if output is not None and turns != 1:
            raise refuse(f"finalOutput needs a one-turn case; this one has {turns}: use a script")
        parts = (output or "x").split("/")
        if output is not None and (output.startswith("/") or ".." in parts or "" in parts):
            raise refuse("finalOutput must be a relative path without '..'", "finalOutput")
        out.append(
            CalibrationVariant(
                id=item["id"],
                kind=item["kind"],
                expect=item["expect"],
                script=item.get("script"),
                final_output=output,
                failing_checks=tuple(failing),
            )
        )
    return tuple(out)


def _check_prompt_form(document: dict[str, Any], source: str | Path, pointer: str) -> None:
    """Exactly one way to say what the agent is asked: ``prompt`` (and ``followUpPrompt``)
    or ``turns``; the schema alone would report this as an opaque alternative."""
    if "turns" in document:
        for key in ("prompt", "followUpPrompt"):
            if key in document:
                raise InvocationError(
                    f"declare either turns or {key}, not both",
                    source=source,
                    pointer=join_pointer(pointer, key),
                )
    elif "prompt" not in document:
        raise InvocationError(
            "a case needs 'prompt' (one turn, optionally 'followUpPrompt') or 'turns'",
            source=source,
            pointer=pointer or None,
        )


def _with_origin(
    case: Case, source: str, pointer: str, calibration: tuple[CalibrationVariant, ...] = ()
) -> Case:
    from attrs import evolve

    checks = tuple(
        CheckDeclaration(c.id, c.grader, c.configuration, c.turn, c.arm) for c in case.checks
    )
    return evolve(
        case,
        checks=checks,
        turns=tuple(case.turns),
        required_evidence=tuple(case.required_evidence),
        source=source,
        pointer=pointer,
        calibration=calibration,
    )
