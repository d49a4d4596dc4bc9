"""``sevro runs``: what the run state knows about the runs in a results root."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sevro_core.output import table
from sevro_core.ownership import Liveness, Owner, liveness
from sevro_core.runstate import DATABASE_NAME, RunState


def _verdict(run_dir: Path) -> str | None:
    try:
        document = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
        return str(document["result"]["task"]["verdict"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def list_runs(results_root: Path, run_state_root: Path | None) -> list[dict[str, Any]]:
    from sevro_core.runner import DEFAULT_STATE_DIR

    root = (run_state_root or results_root / DEFAULT_STATE_DIR).expanduser().resolve()
    if not (root / DATABASE_NAME).is_file():
        return []
    state = RunState(root)
    try:
        rows = state.runs()
        out = []
        for row in rows:
            if Path(row.results_root) != results_root:
                continue
            status = row.status
            if status == "active":
                owner = Owner(row.owner_pid, row.owner_host, state.owner_start(row.run_id))
                if liveness(owner) is Liveness.DEAD:
                    status = "interrupted"
            run_dir = results_root / row.run_id
            out.append(
                {
                    "runId": row.run_id,
                    "evaluationDigest": row.evaluation_digest,
                    "status": status,
                    "attempts": row.attempt,
                    "trialsDone": row.trials_done,
                    "trialsTotal": row.trials_total,
                    "verdict": _verdict(run_dir) if status != "active" else None,
                    "resumable": status in ("interrupted", "failed"),
                    "startedAt": row.started_at,
                    "updatedAt": row.updated_at,
                    "runDir": str(run_dir),
                }
            )
        return out
    finally:
        state.close()


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
            r["verdict"] or "-",
            "yes" if r["resumable"] else "no",
            r["startedAt"],
        ]
        for r in runs
    ]
    return table(
        ["run", "evaluation", "status", "attempts", "trials", "verdict", "resumable", "started"],
        rows,
    )
