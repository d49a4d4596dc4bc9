"""The run-state database: migration of older files, and naming what differs on --resume."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from sevro_core.errors import InvocationError
from sevro_core.store.runstate import _SCHEMA, DATABASE_NAME, RunState, differing_dimensions

DIMENSIONS = {"projectDigest": "a" * 64, "caseDigest": "b" * 64, "trialCount": 2}


def _identity(**changes: object) -> dict[str, object]:
    return {
        "algorithm": "sevro.identity.v1",
        "digest": "d",
        "dimensions": {**DIMENSIONS, **changes},
    }


def _old_database(root: Path, status: str) -> None:
    """A run state as the first release wrote it: no identity, project or execution columns."""
    root.mkdir(mode=0o700)
    db = sqlite3.connect(root / DATABASE_NAME)
    db.executescript(_SCHEMA)
    db.execute(
        "INSERT INTO runs VALUES ('r1', 'e1', ?, ?, 1, 4, 1, 'h', 's', '2026', '2026')",
        (str(root.parent), status),
    )
    db.execute("INSERT INTO trials VALUES ('r1', 'c', 1, 1, 'cases/c/trial-1.json', 'x', 'now')")
    db.commit()
    db.close()


def test_an_older_database_gains_the_new_columns_and_keeps_its_runs(tmp_path: Path) -> None:
    _old_database(tmp_path / "state", "interrupted")
    state = RunState(tmp_path / "state")
    try:
        (row,) = state.runs()
        assert (row.run_id, row.trials_done, row.identity, row.project_root) == (
            "r1",
            1,
            None,
            None,
        )
        claim = state.claim("e1", results_root=tmp_path, trials_total=4, resume=True)
        assert (claim.run_id, claim.attempt, claim.resumed) == ("r1", 2, True)
    finally:
        state.close()
    again = RunState(tmp_path / "state")  # opening twice migrates nothing twice
    again.close()


def test_resume_refusal_names_runs_without_a_recorded_identity(tmp_path: Path) -> None:
    _old_database(tmp_path / "state", "failed")
    state = RunState(tmp_path / "state")
    try:
        with pytest.raises(InvocationError) as refused:
            state.claim(
                "e2", results_root=tmp_path, trials_total=4, resume=True, identity=_identity()
            )
        assert "r1 (identity not recorded)" in refused.value.one_line()
        assert state.runs()[0].status == "failed", "the refusal changed nothing"
    finally:
        state.close()


def test_differing_dimensions_in_words() -> None:
    stored = json.dumps(_identity())
    assert differing_dimensions(stored, _identity(projectDigest="c" * 64)) == ("differs in project")
    assert differing_dimensions(stored, _identity(trialCount=3, caseDigest="e" * 64)) == (
        "differs in cases, trials"
    )
    assert differing_dimensions(stored, _identity()) == "same dimensions, other algorithm"
    assert differing_dimensions("{", _identity()) == "identity not readable"
    assert differing_dimensions(None, _identity()) == "identity not recorded"
