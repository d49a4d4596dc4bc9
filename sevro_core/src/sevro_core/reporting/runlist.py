"""``sevro runs``: what the run state knows about the runs in a results root.

Nothing here is taken on trust: a verdict is shown only from a ``run.json`` whose digest the
run state recorded (or, for runs recorded before digests were, one that passes its schema and
names its run), and a run is resumable only while its project still has the digest it ran on.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from sevro_core.errors import InvocationError
from sevro_core.limits import MAX_RESULT_FILE_BYTES
from sevro_core.reporting.output import table
from sevro_core.store.ownership import Liveness, Owner, liveness
from sevro_core.store.runstate import DATABASE_NAME, DEFAULT_STATE_DIR, RunRow, RunState


def _verdict(run_dir: Path, row: RunRow) -> tuple[str | None, str]:
    """The run's verdict and whether ``run.json`` is ``verified``, ``unverified`` or ``missing``."""
    from sevro_core.formats.jsonio import read_bounded

    try:
        data = read_bounded(run_dir / "run.json", MAX_RESULT_FILE_BYTES, what="run evidence")
    except InvocationError:
        return None, "missing"
    try:
        if row.run_sha256 is not None:
            if hashlib.sha256(data).hexdigest() != row.run_sha256:
                return None, "unverified"
            document = json.loads(data)
        else:
            from sevro_core.formats.jsonio import parse_json_text
            from sevro_core.formats.schemas import is_valid

            document = parse_json_text(data, source=run_dir / "run.json")
            if not is_valid("run-evidence.v1", document) or document["runId"] != row.run_id:
                return None, "unverified"
        return str(document["result"]["task"]["verdict"]), "verified"
    except (InvocationError, ValueError, KeyError, TypeError):
        return None, "unverified"


class _ProjectDigests:
    """The current digest of each project root runs were started from, computed once."""

    def __init__(self, results_root: Path) -> None:
        self.results_root = results_root
        self._known: dict[str, str | None] = {}

    def __call__(self, root: str) -> str | None:
        if root not in self._known:
            from sevro_core.run.provenance import project_provenance

            path = Path(root)
            try:
                digest = project_provenance(path, [self.results_root])["digest"]
                self._known[root] = str(digest) if path.is_dir() else None
            except (OSError, InvocationError):
                self._known[root] = None
        return self._known[root]


def _not_resumable(row: RunRow, status: str, moved_from: str | None, digests: Any) -> str | None:
    """Why a run cannot be resumed from here, or None when it can."""
    if status not in ("interrupted", "failed"):
        return status
    if moved_from is not None:
        return f"recorded for results root {moved_from}; this one is a copy or was moved"
    if row.project_root is None or row.identity is None:
        return None  # recorded before projects were: --resume itself checks the identity
    try:
        recorded = json.loads(row.identity)["dimensions"]["projectDigest"]
    except (ValueError, KeyError, TypeError):
        return "identity not readable"
    current = digests(row.project_root)
    if current is None:
        return f"project root {row.project_root} is gone or unreadable"
    if current != recorded:
        return f"project {row.project_root} changed since the run"
    return None


def list_runs(results_root: Path, run_state_root: Path | None) -> list[dict[str, Any]]:
    if not results_root.is_dir():
        raise InvocationError(
            "results root does not exist or is not a directory", source=results_root
        )
    root = (run_state_root or results_root / DEFAULT_STATE_DIR).expanduser().resolve()
    if not (root / DATABASE_NAME).is_file():
        return []
    state = RunState(root)
    digests = _ProjectDigests(results_root)
    try:
        out = []
        for row in state.runs():
            moved_from = None
            if Path(row.results_root) != results_root:
                if run_state_root is not None:
                    continue  # a shared run state: another results root's run
                moved_from = row.results_root  # the state came along with a copied root
            status = row.status
            if status == "active":
                owner = Owner(row.owner_pid, row.owner_host, state.owner_start(row.run_id))
                if liveness(owner) is Liveness.DEAD:
                    status = "interrupted"
            run_dir = results_root / row.run_id
            verdict, evidence = (None, None) if status == "active" else _verdict(run_dir, row)
            reason = _not_resumable(row, status, moved_from, digests)
            out.append(
                {
                    "runId": row.run_id,
                    "evaluationDigest": row.evaluation_digest,
                    "status": status,
                    "attempts": row.attempt,
                    "trialsDone": row.trials_done,
                    "trialsTotal": row.trials_total,
                    "verdict": verdict,
                    "evidence": evidence,
                    "resumable": reason is None,
                    "notResumable": reason if status in ("interrupted", "failed") else None,
                    "recordedResultsRoot": row.results_root,
                    "startedAt": row.started_at,
                    "updatedAt": row.updated_at,
                    "runDir": str(run_dir),
                }
            )
        return out
    finally:
        state.close()


def _resumable_cell(run: dict[str, Any]) -> str:
    if run["resumable"]:
        return "yes"
    reason = run["notResumable"]
    if reason is None:
        return "no"
    if reason.startswith("recorded for"):
        return "no (copied root)"
    if "changed" in reason:
        return "no (project changed)"
    return "no (see --json)"


def render_runs(runs: list[dict[str, Any]]) -> str:
    if not runs:
        return "no runs\n"
    rows = [
        [
            r["runId"],
            r["evaluationDigest"][:12],
            r["status"],
            str(r["attempts"]),
            f"{r['trialsDone']}/{r['trialsTotal']}",
            r["verdict"] or ("unverified" if r["evidence"] == "unverified" else "-"),
            _resumable_cell(r),
            r["startedAt"],
        ]
        for r in runs
    ]
    return table(
        ["run", "evaluation", "status", "attempts", "trials", "verdict", "resumable", "started"],
        rows,
    )
