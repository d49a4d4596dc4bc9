"""Reading back the comparator's persisted pair judgements, verified against the run's trials.

``sevro run`` writes one file per judged pair (``run/pairjudging``): the judgement and the
digests of the two trial files it judged. ``sevro report`` recounts a stored ``judged`` block
from these files, as it recounts the objective counts from the trial files; a judgement is
counted only when its trial digests are the ones ``run.json`` records, so a judgement of other
trials (or an edited file) can never enter the counts unnoticed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from sevro_core.errors import InvocationError
from sevro_core.fixtures.workspace import WorkspaceEscapeError, read_confined
from sevro_core.formats.schemas import describe_first_error, validator
from sevro_core.judges.comparator import PairJudgement
from sevro_core.limits import MAX_RESULT_FILE_BYTES
from sevro_core.models import Usage, unit_key

PAIR_FORMAT: Final = "sevro.pair-judgement.v1"
PAIR_SCHEMA: Final = "pair-judgement.v1"
COMPARISONS_DIR: Final = "comparisons"
_PAIR_FILE = re.compile(r"^pair-([1-9][0-9]*)\.json$")


def pair_dir(run_dir: Path, control: str, treatment: str, case_id: str) -> Path:
    """Where the judgements of one comparison's pairs of one case are kept."""
    return run_dir / COMPARISONS_DIR / f"{control}..{treatment}" / case_id


def schema_problem(document: object) -> str | None:
    """Why ``document`` is not a ``pair-judgement.v1`` document (pointer: message), or None."""
    found = describe_first_error(validator(PAIR_SCHEMA).iter_errors(document))
    return None if found is None else f"{found[0] or '/'}: {found[1]}"


def call_usage(document: Mapping[str, Any]) -> tuple[Usage, ...]:
    """The usage of each judge call a validated pair judgement records."""
    return tuple(Usage.from_json(call["usage"]) for call in document["calls"])


def _document(run_dir: Path, relative: str) -> Mapping[str, Any]:
    try:
        data, size = read_confined(run_dir, relative, MAX_RESULT_FILE_BYTES)
        document = json.loads(data) if size <= MAX_RESULT_FILE_BYTES else None
    except (OSError, WorkspaceEscapeError, ValueError) as exc:
        raise InvocationError(f"pair judgement {relative} is unreadable: {exc}") from None
    if not isinstance(document, dict):
        raise InvocationError(f"pair judgement {relative} is not a JSON object")
    problem = schema_problem(document)
    if problem is not None:
        raise InvocationError(
            f"pair judgement {relative} is not a {PAIR_SCHEMA} document: {problem}"
        )
    return document


def _verified(
    document: Mapping[str, Any],
    expected: Mapping[str, Any],
    digests: Mapping[tuple[str, int], str | None],
    relative: str,
) -> PairJudgement:
    """The judgement, when the file is the one its place names and judged the run's trials."""
    if any(document.get(key) != value for key, value in expected.items()):
        raise InvocationError(f"pair judgement {relative} belongs to another run or pair")
    case, r = expected["caseId"], expected["repetition"]
    recorded = {
        "control": digests.get((unit_key(case, expected["control"]), r)),
        "treatment": digests.get((unit_key(case, expected["treatment"]), r)),
    }
    if document.get("trials") != recorded or None in recorded.values():
        raise InvocationError(f"pair judgement {relative} does not match the trials it judged")
    try:
        return PairJudgement.from_json(document["judgement"])
    except (KeyError, TypeError, ValueError):
        raise InvocationError(f"pair judgement {relative} is malformed") from None


def read_pair_judgements(
    run_dir: Path, run: Mapping[str, Any], control: str, treatment: str
) -> dict[tuple[str, int], PairJudgement]:
    """Every persisted judgement of the comparison (control, treatment) of the run whose
    ``run.json`` is ``run``, by (case id, repetition); ``InvocationError`` on a file that is
    not what ``sevro run`` wrote for that run's trials."""
    return {
        key: judged for key, (judged, _) in read_pairs(run_dir, run, control, treatment).items()
    }


def read_pairs(
    run_dir: Path, run: Mapping[str, Any], control: str, treatment: str
) -> dict[tuple[str, int], tuple[PairJudgement, tuple[Usage, ...]]]:
    """:func:`read_pair_judgements` with the usage of each judge call of every pair."""
    digests = {
        (unit_key(ref["caseId"], ref.get("arm")), ref["trial"]): ref.get("sha256")
        for ref in run.get("trials", [])
    }
    top = run_dir / COMPARISONS_DIR / f"{control}..{treatment}"
    if top.is_symlink() or not top.is_dir():
        return {}
    found: dict[tuple[str, int], tuple[PairJudgement, tuple[Usage, ...]]] = {}
    for case_dir in sorted(top.iterdir()):
        if case_dir.is_symlink() or not case_dir.is_dir():
            continue
        for entry in sorted(case_dir.iterdir()):
            match = _PAIR_FILE.match(entry.name)
            if match is None:
                continue
            relative = entry.relative_to(run_dir).as_posix()
            expected = {
                "format": PAIR_FORMAT,
                "runId": run.get("runId"),
                "control": control,
                "treatment": treatment,
                "caseId": case_dir.name,
                "repetition": int(match.group(1)),
            }
            document = _document(run_dir, relative)
            judged = _verified(document, expected, digests, relative)
            found[(case_dir.name, int(match.group(1)))] = (judged, call_usage(document))
    return found
