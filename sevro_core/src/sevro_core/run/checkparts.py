"""A check's parts (its assertions) checked and recorded as check outcomes of their own.

A grader that proves several assertions at once (``sevro.verifier``) returns them as
``CheckOutcome.parts``. Each becomes an outcome ``<check>/<part id>`` right after its check, so
evidence, reports and the verdict policy name the assertion that failed. The check keeps its own
outcome, the conjunction; what would contradict it (a failed part beside a passed check, parts
of an unavailable check) or is unbounded is a grading error, never a pass. Parts never count as
declared checks: grading completeness is decided by the declared checks alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from attrs import evolve

from sevro_core.limits import (
    MAX_CHECK_PART_DETAIL_CHARS,
    MAX_CHECK_PART_ID_CHARS,
    MAX_CHECK_PARTS,
)
from sevro_core.models import CheckOutcome
from sevro_core.states import CheckStatus


def parts_problem(outcome: CheckOutcome) -> str | None:
    """Why the outcome's parts cannot be recorded, or None."""
    parts = outcome.parts
    if not parts:
        return None
    if len(parts) > MAX_CHECK_PARTS:
        return f"more than {MAX_CHECK_PARTS} parts for one check"
    if outcome.status is CheckStatus.UNAVAILABLE:
        return "an unavailable check cannot have parts"
    seen: set[str] = set()
    for part in parts:
        if not part.id.strip() or len(part.id) > MAX_CHECK_PART_ID_CHARS:
            return f"a part id is blank or longer than {MAX_CHECK_PART_ID_CHARS} characters"
        if not part.id.isprintable():
            return "a part id is not printable"
        if part.id in seen:
            return f"part id {part.id!r} appears twice"
        seen.add(part.id)
    failed = [p.id for p in parts if not p.passed]
    if failed and outcome.status is CheckStatus.PASSED:
        return f"the check passed beside failed part(s): {', '.join(failed[:5])}"
    return None


def with_parts(outcome: CheckOutcome) -> list[CheckOutcome]:
    """The check's outcome (without its parts), then one outcome per part, in their order."""
    out = [evolve(outcome, parts=())]
    for part in outcome.parts:
        detail = part.detail[:MAX_CHECK_PART_DETAIL_CHARS] if part.detail is not None else None
        out.append(
            CheckOutcome(
                id=f"{outcome.id}/{part.id}",
                grader=outcome.grader,
                status=CheckStatus.PASSED if part.passed else CheckStatus.FAILED,
                detail=detail,
                evidence_refs=outcome.evidence_refs,
                part_of=outcome.id,
            )
        )
    return out


def declared(outcomes: Iterable[CheckOutcome]) -> Sequence[CheckOutcome]:
    """The outcomes of declared checks, without the parts recorded beside them."""
    return [o for o in outcomes if o.part_of is None]
