"""Resuming an interrupted run: which persisted trials can be trusted, and which run again.

A trial is reused only when its file still has the digest recorded at checkpoint time, passes
its schema, belongs to this run and evaluation, was not cancelled nor lost with its remote
worker, and every blob it references still matches. Anything else is rerun, never trusted;
the earlier files are moved aside.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import structlog

from sevro_core.fixtures.workspace import WorkspaceEscapeError, read_confined
from sevro_core.formats.schemas import is_valid
from sevro_core.limits import MAX_ARTIFACT_BYTES, MAX_FINAL_MESSAGE_BYTES, MAX_RESULT_FILE_BYTES
from sevro_core.models import unit_key
from sevro_core.run.planning import RunPlan
from sevro_core.run.records import EXECUTOR_LOST_CODE, TrialRecord
from sevro_core.store.evidence import EvidenceStore
from sevro_core.store.runstate import RunState, TrialCheckpoint

log = structlog.get_logger("sevro.resume")


def referenced_blobs(evidence: Mapping[str, Any]) -> list[tuple[Mapping[str, Any], int]]:
    """Every file a trial document references (its raw final message and artifacts), each
    with the bound it was written under: what must match before the trial is trusted."""
    blobs = [(evidence["rawResult"], MAX_FINAL_MESSAGE_BYTES)] if evidence["rawResult"] else []
    return blobs + [(ref, MAX_ARTIFACT_BYTES) for ref in evidence["artifactRefs"]]


def _blob_ok(run_dir: Path, ref: Mapping[str, Any], limit: int) -> bool:
    try:
        data, size = read_confined(run_dir, str(ref["path"]), limit)
    except (OSError, WorkspaceEscapeError):
        return False
    return bool(size == ref["byteLength"] and hashlib.sha256(data).hexdigest() == ref["sha256"])


def _verified(
    plan: RunPlan, store: EvidenceStore, checkpoint: TrialCheckpoint
) -> TrialRecord | str:
    """The reusable record, or why the trial must run again."""
    try:
        data, size = read_confined(store.run_dir, checkpoint.path, MAX_RESULT_FILE_BYTES)
    except (OSError, WorkspaceEscapeError) as exc:
        return f"unreadable ({exc})"
    if size > MAX_RESULT_FILE_BYTES or hashlib.sha256(data).hexdigest() != checkpoint.sha256:
        return "its file changed since it was recorded"
    try:
        document = json.loads(data)
    except ValueError:
        return "its file is not JSON"
    if not is_valid("trial-evidence.v1", document):
        return "its file does not match the trial evidence schema"
    evidence = document["evidence"]
    if (
        document["runId"],
        unit_key(document["caseId"], document.get("arm")),
        document["trial"],
    ) != (
        store.run_id,
        checkpoint.case_id,
        checkpoint.trial,
    ) or evidence["evaluationDigest"] != plan.identity["digest"]:
        return "it belongs to another run, case, trial or evaluation"
    if evidence["execution"]["status"] == "cancelled":
        return "it was cancelled"
    if evidence["execution"].get("errorCode") == EXECUTOR_LOST_CODE:
        return "the worker running it was lost"
    if not all(_blob_ok(store.run_dir, ref, limit) for ref, limit in referenced_blobs(evidence)):
        return "a file it references is missing or changed"
    return TrialRecord.from_document(document, store.run_dir / checkpoint.path, checkpoint.sha256)


_STALE_TEMP = re.compile(r"^\..+\.[0-9a-f]{32}\.tmp$")
"""What ``write_private_atomic`` names a file until it is renamed into place."""


def remove_stale_temp_files(run_dir: Path) -> int:
    """Delete half-written temporary files a killed attempt left in the run directory.

    Nothing refers to them (a file becomes evidence only when renamed into place), and no
    other process writes into a run it does not own. Symlinks are never followed.
    """
    removed = 0
    for dirpath, _dirnames, filenames in os.walk(run_dir):
        for name in filenames:
            path = Path(dirpath) / name
            if _STALE_TEMP.match(name) and stat.S_ISREG(os.lstat(path).st_mode):
                path.unlink()
                removed += 1
    return removed


def recover(
    plan: RunPlan, store: EvidenceStore, state: RunState
) -> dict[tuple[str, int], TrialRecord]:
    """Trials of ``store``'s run that this attempt can reuse; the rest are moved aside."""
    stale = remove_stale_temp_files(store.run_dir)
    if stale:
        log.info("removed stale temporary files", run_id=store.run_id, files=stale)
    wanted = {(p.unit, t) for p in plan.cases for t in range(1, plan.settings.trials + 1)}
    reused: dict[tuple[str, int], TrialRecord] = {}
    for checkpoint in state.checkpoints(store.run_id):
        key = (checkpoint.case_id, checkpoint.trial)
        if key not in wanted:
            continue
        outcome = _verified(plan, store, checkpoint)
        if isinstance(outcome, str):
            log.warning("rerunning trial", case=key[0], trial=key[1], reason=outcome)
        else:
            reused[key] = outcome
    for case_id, trial in sorted(wanted - set(reused)):
        store.supersede(case_id, trial)
    log.info(
        "resuming run",
        run_id=store.run_id,
        attempt=store.attempt,
        reused=len(reused),
        rerun=len(wanted) - len(reused),
    )
    return reused
