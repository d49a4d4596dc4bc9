"""The evidence store: private, atomic, schema-validated files under ``<results-root>/<run-id>``.

Layout (paths inside documents are relative to the run directory, so a run can be moved)::

    run.json
    cases/<case-id>/trial-<n>.json
    cases/<case-id>/trial-<n>-raw.txt
    cases/<case-id>/trial-<n>-<artifact-id>.bin
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sevro_core.formats.jsonio import dumps_pretty, write_private_atomic
from sevro_core.formats.schemas import LARGE_DOCUMENT_ITEMS, validate_output
from sevro_core.models import unit_key

TRIAL_FORMAT = "sevro.trial-evidence.v1"
RUN_FORMAT = "sevro.run-evidence.v1"


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) as 0700 directories; refuse a symlinked final component."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    if path.is_symlink() or not path.is_dir():
        raise NotADirectoryError(f"{path} is not a plain directory")
    return path.resolve()


class EvidenceStore:
    """Writes one run's files. Every write is temp-file-plus-rename with mode 0600."""

    def __init__(
        self, results_root: Path, run_id: str, *, attempt: int = 1, reopen: bool = False
    ) -> None:
        self.results_root = ensure_private_dir(results_root)
        self.run_dir = self.results_root / run_id
        if not reopen:
            os.mkdir(self.run_dir, 0o700)
            os.mkdir(self.run_dir / "cases", 0o700)
        elif not (self.run_dir / "cases").is_dir() or self.run_dir.is_symlink():
            raise FileNotFoundError(f"run directory {self.run_dir} is missing; cannot resume it")
        self.run_id = run_id
        self.attempt = attempt
        self._case_dirs: dict[str, Path] = {}

    def case_dir(self, case_id: str) -> Path:
        path = self.run_dir / "cases" / case_id
        if case_id not in self._case_dirs:
            path.mkdir(mode=0o700, exist_ok=True)
            self._case_dirs[case_id] = path
        return path

    def relative(self, path: Path) -> str:
        return path.relative_to(self.run_dir).as_posix()

    def write_blob(self, case_id: str, name: str, data: bytes) -> dict[str, Any]:
        """Store raw bytes and return their reference ``{path, sha256, byteLength}``."""
        path = self.case_dir(case_id) / name
        write_private_atomic(path, data)
        return {
            "path": self.relative(path),
            "sha256": hashlib.sha256(data).hexdigest(),
            "byteLength": len(data),
        }

    def write_trial(self, document: Mapping[str, Any]) -> tuple[Path, str]:
        """Validate and write a trial document; return its path and sha256."""
        validate_output("trial-evidence.v1", document)
        unit = unit_key(document["caseId"], document.get("arm"))
        path = self.case_dir(unit) / f"trial-{document['trial']}.json"
        data = dumps_pretty(document).encode("utf-8")
        write_private_atomic(path, data)
        return path, hashlib.sha256(data).hexdigest()

    def supersede(self, case_id: str, trial: int) -> None:
        """Move an earlier attempt's files of a trial aside before the trial runs again."""
        case_dir = self.run_dir / "cases" / case_id
        if not case_dir.is_dir():
            return
        names = [
            p
            for p in case_dir.iterdir()
            if p.name == f"trial-{trial}.json" or p.name.startswith(f"trial-{trial}-")
        ]
        if not names:
            return
        target = case_dir / "superseded" / f"before-attempt-{self.attempt}"
        target.mkdir(mode=0o700, parents=True, exist_ok=True)
        (case_dir / "superseded").chmod(0o700)
        for path in names:
            os.replace(path, target / path.name)

    def write_run(self, document: Mapping[str, Any]) -> Path:
        large = len(document["trials"]) > LARGE_DOCUMENT_ITEMS
        validate_output("run-evidence.v1", document, compiled=large)
        path = self.run_dir / "run.json"
        write_private_atomic(path, dumps_pretty(document).encode("utf-8"))
        return path
