"""Run state: ownership claims and trial checkpoints in an embedded SQLite database.

One live owner per evaluation identity. A claim is one short ``BEGIN IMMEDIATE`` transaction,
so two runners can never both own an evaluation. Owners that are verifiably dead are marked
``interrupted`` (their files stay); owners that cannot be verified block the claim.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import sqlite3
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from attrs import frozen

from sevro_core.errors import InvocationError, PersistenceError, SevroError
from sevro_core.limits import RUN_STATE_BUSY_TIMEOUT_MS
from sevro_core.store.ownership import Liveness, Owner, current_owner, liveness

DATABASE_NAME = "sevro-state.sqlite"
DEFAULT_STATE_DIR = ".sevro-state"
"""Where the run state lives without ``--run-state-root``: under the results root."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    evaluation_digest TEXT NOT NULL,
    results_root TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('active', 'completed', 'interrupted', 'failed')),
    attempt INTEGER NOT NULL,
    trials_total INTEGER NOT NULL,
    owner_pid INTEGER NOT NULL,
    owner_host TEXT NOT NULL,
    owner_start TEXT NOT NULL,
    started_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_by_evaluation ON runs (evaluation_digest, status);
CREATE TABLE IF NOT EXISTS attempts (
    run_id TEXT NOT NULL REFERENCES runs (run_id),
    attempt INTEGER NOT NULL,
    owner_pid INTEGER NOT NULL,
    owner_host TEXT NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    status TEXT NOT NULL,
    PRIMARY KEY (run_id, attempt)
);
CREATE TABLE IF NOT EXISTS trials (
    run_id TEXT NOT NULL REFERENCES runs (run_id),
    case_id TEXT NOT NULL,
    trial INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    path TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    recorded_at TEXT NOT NULL,
    PRIMARY KEY (run_id, case_id, trial)
);
"""
_ADDED_COLUMNS = (
    ("runs", "identity", "TEXT"),  # the identity document (JSON), to name what differs
    ("runs", "project_root", "TEXT"),  # to recompute the project digest for `sevro runs`
    ("runs", "run_sha256", "TEXT"),  # of run.json as written, so `sevro runs` can trust it
    ("trials", "execution", "TEXT"),  # cancelled trials are persisted but not done
)
"""Columns added after the first release; older databases gain them on open (NULL = unknown)."""


class RunStateError(PersistenceError):
    """The run-state database could not be written (disk full, I/O error): exit 70.

    Trials checkpointed before the failure stay recorded, so the run can be resumed.
    """

    code = "sevro.run-state.failed"


class RunStateCorrupt(InvocationError):
    """The file at the run-state path is not a readable sevro run state: exit 64, untouched."""

    code = "sevro.run-state.corrupt"


def _database_error(path: Path, exc: sqlite3.Error, doing: str) -> SevroError:
    if isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError):
        return RunStateCorrupt(
            f"not a usable sevro run-state database ({exc}); it was left as it is: move it "
            "aside or pass another --run-state-root",
            source=path,
        )
    hint = ""
    if doing == "updated":
        hint = "; trials recorded before stay recorded: fix the cause, then use --resume"
    return RunStateError(f"run state {path} could not be {doing}: {exc}{hint}")


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds")


@frozen
class Claim:
    run_id: str
    attempt: int
    resumed: bool
    owner: Owner


@frozen
class TrialCheckpoint:
    case_id: str
    trial: int
    attempt: int
    path: str
    sha256: str
    execution: str | None = None


@frozen
class RunRow:
    run_id: str
    evaluation_digest: str
    results_root: str
    status: str
    attempt: int
    trials_total: int
    trials_done: int
    owner_pid: int
    owner_host: str
    started_at: str
    updated_at: str
    identity: str | None = None
    project_root: str | None = None
    run_sha256: str | None = None


class RunState:
    """The run-state database under ``--run-state-root``; used from one thread."""

    def __init__(self, root: Path) -> None:
        from sevro_core.store.evidence import ensure_private_dir

        try:
            self.root = ensure_private_dir(root)
        except OSError as exc:
            raise InvocationError(f"cannot use as run-state root: {exc}", source=root) from None
        try:
            self.path = self.root / DATABASE_NAME
            self._db = sqlite3.connect(
                self.path, timeout=RUN_STATE_BUSY_TIMEOUT_MS / 1000, isolation_level=None
            )
            self.path.chmod(0o600)
            self._db.execute(f"PRAGMA busy_timeout = {RUN_STATE_BUSY_TIMEOUT_MS}")
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.executescript(_SCHEMA)
            self._migrate()
        except sqlite3.Error as exc:
            raise _database_error(self.path, exc, "opened") from None
        except OSError as exc:
            raise RunStateError(f"cannot open the run state in {root}: {exc}") from None

    def _migrate(self) -> None:
        for table, column, kind in _ADDED_COLUMNS:
            present = {row[1] for row in self._db.execute(f"PRAGMA table_info({table})")}
            if column in present:
                continue
            try:
                self._db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
            except sqlite3.OperationalError as exc:
                if "duplicate column" not in str(exc):  # another process added it first
                    raise

    @contextmanager
    def _guarded(self, doing: str) -> Iterator[None]:
        """SQLite failures become one-line errors that name the state file."""
        try:
            yield
        except sqlite3.Error as exc:
            raise _database_error(self.path, exc, doing) from None

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            if self._db.in_transaction:
                # SQLite rolls back by itself when it cannot; the first error is the one to report
                with contextlib.suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def claim(
        self,
        evaluation_digest: str,
        *,
        results_root: Path,
        trials_total: int,
        resume: bool,
        identity: Mapping[str, Any] | None = None,
        project_root: Path | None = None,
    ) -> Claim:
        """Own the evaluation, resuming its latest interrupted run when asked.

        ``--resume`` with nothing of this evaluation to resume is refused (exit 64), naming
        the interrupted runs of the results root and the identity dimensions that differ.
        """
        with self._guarded("updated"):
            return self._claim(
                evaluation_digest,
                results_root=results_root,
                trials_total=trials_total,
                resume=resume,
                identity=identity,
                project_root=project_root,
            )

    def _claim(
        self,
        evaluation_digest: str,
        *,
        results_root: Path,
        trials_total: int,
        resume: bool,
        identity: Mapping[str, Any] | None,
        project_root: Path | None,
    ) -> Claim:
        """One transaction: free the evaluation from dead owners, then take or resume its run."""
        owner = current_owner()
        now = _now()
        with self._transaction() as db:
            self._interrupt_dead_owners(db, evaluation_digest, now)
            previous = None
            if resume:
                previous = db.execute(
                    "SELECT run_id, attempt FROM runs WHERE evaluation_digest = ? AND "
                    "status IN ('interrupted', 'failed') AND results_root = ? "
                    "ORDER BY updated_at DESC LIMIT 1",
                    (evaluation_digest, str(results_root)),
                ).fetchone()
                if previous is None:
                    raise InvocationError(
                        _nothing_to_resume(db, results_root, identity, evaluation_digest)
                    )
            if previous is not None:
                run_id, attempt = previous[0], previous[1] + 1
                db.execute(
                    "UPDATE runs SET status = 'active', attempt = ?, owner_pid = ?, "
                    "owner_host = ?, owner_start = ?, updated_at = ? WHERE run_id = ?",
                    (attempt, owner.pid, owner.host, owner.start, now, run_id),
                )
            else:
                run_id, attempt = str(uuid.uuid4()), 1
                db.execute(
                    "INSERT INTO runs (run_id, evaluation_digest, results_root, status, attempt, "
                    "trials_total, owner_pid, owner_host, owner_start, started_at, updated_at, "
                    "identity, project_root) VALUES (?, ?, ?, 'active', 1, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        run_id,
                        evaluation_digest,
                        str(results_root),
                        trials_total,
                        owner.pid,
                        owner.host,
                        owner.start,
                        now,
                        now,
                        json.dumps(dict(identity)) if identity is not None else None,
                        str(project_root) if project_root is not None else None,
                    ),
                )
            db.execute(
                "INSERT INTO attempts VALUES (?, ?, ?, ?, ?, NULL, 'active')",
                (run_id, attempt, owner.pid, owner.host, now),
            )
        return Claim(run_id=run_id, attempt=attempt, resumed=previous is not None, owner=owner)

    @classmethod
    def _interrupt_dead_owners(
        cls, db: sqlite3.Connection, evaluation_digest: str, now: str
    ) -> None:
        """Mark the evaluation's runs whose owner is verifiably dead ``interrupted``.

        A live owner, or one that cannot be verified from here (another host), blocks the claim.
        """
        active = db.execute(
            "SELECT run_id, owner_pid, owner_host, owner_start, started_at FROM runs "
            "WHERE evaluation_digest = ? AND status = 'active'",
            (evaluation_digest,),
        ).fetchall()
        for run_id, pid, host, start, started in active:
            state = liveness(Owner(pid, host, start))
            if state is Liveness.ALIVE:
                raise InvocationError(
                    f"an equivalent sevro run is active: run {run_id}, pid {pid} on {host} "
                    f"since {started}; wait for it or stop it"
                )
            if state is Liveness.UNKNOWN:
                raise InvocationError(
                    f"an equivalent sevro run {run_id} is owned by pid {pid} on host {host}, "
                    "which cannot be verified from here; run it there or use another "
                    "--run-state-root"
                )
            cls._end(db, run_id, "interrupted", now)

    @staticmethod
    def _end(db: sqlite3.Connection, run_id: str, status: str, now: str) -> None:
        db.execute(
            "UPDATE runs SET status = ?, updated_at = ? WHERE run_id = ?", (status, now, run_id)
        )
        db.execute(
            "UPDATE attempts SET status = ?, finished_at = ? WHERE run_id = ? AND "
            "finished_at IS NULL",
            (status, now, run_id),
        )

    def checkpoint(self, run_id: str, item: TrialCheckpoint) -> None:
        """Record a persisted trial; replaces what an earlier attempt recorded for it."""
        with self._guarded("updated"), self._transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO trials (run_id, case_id, trial, attempt, path, sha256, "
                "recorded_at, execution) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    item.case_id,
                    item.trial,
                    item.attempt,
                    item.path,
                    item.sha256,
                    _now(),
                    item.execution,
                ),
            )
            db.execute("UPDATE runs SET updated_at = ? WHERE run_id = ?", (_now(), run_id))

    def finish(self, run_id: str, status: str) -> None:
        with self._guarded("updated"), self._transaction() as db:
            self._end(db, run_id, status, _now())

    def record_run_evidence(self, run_id: str, sha256: str) -> None:
        """The digest of run.json as written: `sevro runs` trusts only a run.json that has it."""
        with self._guarded("updated"), self._transaction() as db:
            db.execute("UPDATE runs SET run_sha256 = ? WHERE run_id = ?", (sha256, run_id))

    def checkpoints(self, run_id: str) -> list[TrialCheckpoint]:
        with self._guarded("read"):
            rows = self._db.execute(
                "SELECT case_id, trial, attempt, path, sha256, execution FROM trials "
                "WHERE run_id = ? ORDER BY case_id, trial",
                (run_id,),
            ).fetchall()
        return [TrialCheckpoint(*row) for row in rows]

    def attempts(self, run_id: str) -> list[dict[str, object]]:
        rows = self._db.execute(
            "SELECT attempt, owner_pid, owner_host, started_at, finished_at, status "
            "FROM attempts WHERE run_id = ? ORDER BY attempt",
            (run_id,),
        ).fetchall()
        return [
            {
                "attempt": a,
                "owner": {"pid": pid, "host": host},
                "startedAt": started,
                "finishedAt": finished,
                "status": status,
            }
            for a, pid, host, started, finished, status in rows
        ]

    def owner_start(self, run_id: str) -> str:
        row = self._db.execute(
            "SELECT owner_start FROM runs WHERE run_id = ?", (run_id,)
        ).fetchone()
        return str(row[0]) if row else ""

    def runs(self) -> list[RunRow]:
        """Every run, newest first, with its number of recorded trials that were not cancelled."""
        with self._guarded("read"):
            rows = self._db.execute(
                "SELECT r.run_id, r.evaluation_digest, r.results_root, r.status, r.attempt, "
                "r.trials_total, (SELECT COUNT(*) FROM trials t WHERE t.run_id = r.run_id AND "
                "(t.execution IS NULL OR t.execution != 'cancelled')), "
                "r.owner_pid, r.owner_host, r.started_at, r.updated_at, r.identity, "
                "r.project_root, r.run_sha256 FROM runs r ORDER BY r.started_at DESC",
            ).fetchall()
        return [RunRow(*row) for row in rows]


DIMENSION_NAMES = {
    "runnerBuildDigest": "runner build",
    "projectDigest": "project",
    "configurationDigest": "configuration",
    "extensionDigest": "extension",
    "extensionProtocol": "extension protocol",
    "caseDigest": "cases",
    "fixtureDigest": "fixtures",
    "checksDigest": "checks",
    "requiredEvidenceDigest": "required evidence",
    "evaluatorDigest": "evaluator",
    "graderDigest": "graders",
    "instrumentationDigest": "instrumentation",
    "routeDigest": "route",
    "condition": "condition",
    "trialCount": "trials",
    "passThreshold": "pass threshold",
}
"""Identity dimensions (docs/identity.md) as a user knows them."""


def differing_dimensions(recorded: str | None, current: Mapping[str, Any] | None) -> str:
    """What differs between a stored identity document and the current one, in words."""
    if recorded is None or current is None:
        return "identity not recorded"
    try:
        before = json.loads(recorded)["dimensions"]
    except (ValueError, KeyError, TypeError):
        return "identity not readable"
    now = current.get("dimensions", {})
    names = [DIMENSION_NAMES.get(k, k) for k in now if before.get(k) != now.get(k)]
    names += [DIMENSION_NAMES.get(k, k) for k in before if k not in now]
    return "differs in " + ", ".join(names) if names else "same dimensions, other algorithm"


_NAMED_RUNS = 3


def _nothing_to_resume(
    db: sqlite3.Connection,
    results_root: Path,
    identity: Mapping[str, Any] | None,
    current_digest: str,
) -> str:
    candidates = db.execute(
        "SELECT run_id, identity, status, owner_pid, owner_host, owner_start FROM runs "
        "WHERE results_root = ? AND status IN ('active', 'interrupted', 'failed') "
        "ORDER BY updated_at DESC",
        (str(results_root),),
    ).fetchall()
    rows = [  # an active run whose owner is dead was interrupted (SIGKILL, power loss)
        (run_id, stored)
        for run_id, stored, status, pid, host, start in candidates
        if status != "active" or liveness(Owner(pid, host, start)) is Liveness.DEAD
    ]
    head = f"--resume: no interrupted run of this evaluation in {results_root}"
    tail = "run without --resume to start a new run"
    elsewhere = db.execute(
        "SELECT COUNT(*) FROM runs WHERE evaluation_digest = ? AND results_root != ? AND "
        "status IN ('active', 'interrupted', 'failed')",
        (current_digest, str(results_root)),
    ).fetchone()[0]
    if elsewhere:
        tail = (
            f"{elsewhere} run(s) of this evaluation were recorded for another results root "
            f"(this one is a copy, or was moved) and resume only there; {tail}"
        )
    if not rows:
        return f"{head}; {tail}"
    named = "; ".join(
        f"{run_id} ({differing_dimensions(stored, identity)})"
        for run_id, stored in rows[:_NAMED_RUNS]
    )
    more = f" and {len(rows) - _NAMED_RUNS} more" if len(rows) > _NAMED_RUNS else ""
    return f"{head}; interrupted runs of other evaluations: {named}{more}; {tail}"
