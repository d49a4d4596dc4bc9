"""What lifecycle hooks are told about a run."""

from __future__ import annotations

from pathlib import Path

from attrs import frozen


@frozen
class RunInfo:
    run_id: str
    evaluation_digest: str
    run_dir: Path
    case_ids: tuple[str, ...]
    trials: int
    dry: bool
