"""The comparator's reasons for each judged pair, read back from its pair-judgement files:
verified as ``sevro report`` verifies them (run, pair, trial digests), each order's reply read
by its recorded digest, every text escaped and bounded for the page."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sevro_core.experiments.pairjudgements import pair_dir, read_pair_judgements
from sevro_core.formats.jsonio import read_json_file
from sevro_core.limits import MAX_RESULT_FILE_BYTES, MAX_VIEWER_TEXT_CHARS
from sevro_core.reporting.viewer.trials import inside, read_blob, visible


def _reply(run_dir: Path, refs: Sequence[Mapping[str, Any]], digest: str | None) -> str | None:
    """The reply whose sha256 the order records, as text (cut at the viewer's bound)."""
    for ref in refs:
        if digest is not None and ref.get("sha256") == digest and ref.get("path"):
            text, cut = read_blob(run_dir, ref, MAX_VIEWER_TEXT_CHARS)
            return visible(text) + ("\n… (cut)" if cut else "")
    return None


def pair_reasons(
    run_dir: Path, run: Mapping[str, Any], control: str, treatment: str
) -> dict[tuple[str, int], dict[str, Any]]:
    """Each judged pair's outcome, flags, reason and both orders' decisions and replies, by
    (case id, repetition); a judgement that does not verify is refused (``InvocationError``)."""
    shown: dict[tuple[str, int], dict[str, Any]] = {}
    for (case_id, number), judged in read_pair_judgements(run_dir, run, control, treatment).items():
        path = pair_dir(run_dir, control, treatment, case_id) / f"pair-{number}.json"
        document = read_json_file(
            inside(run_dir, path.relative_to(run_dir).as_posix()),
            MAX_RESULT_FILE_BYTES,
            what="pair judgement",
        )
        refs = [r for r in document.get("artifactRefs") or [] if isinstance(r, dict)]
        shown[(case_id, number)] = {
            "outcome": judged.outcome,
            "flags": list(judged.flags),
            "reason": visible(judged.reason) if judged.reason else None,
            "orders": [
                {
                    "order": o.order,
                    "decision": o.decision,
                    "mapped": o.mapped,
                    "error": visible(o.error, 2000) if o.error else None,
                    "reply": _reply(run_dir, refs, o.reply_sha256),
                }
                for o in judged.orders
            ],
        }
    return shown
