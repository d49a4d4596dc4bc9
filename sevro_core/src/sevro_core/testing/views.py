"""Trial views for grader tests, built the way the engine builds them.

A grader sees a :class:`~sevro_core.models.TrialView`; :func:`trial_view` fills in what a test
does not care about, and adds the engine's final-message observation exactly as a run would.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path

from sevro_core.formats.jsonio import JsonValue
from sevro_core.isolation.sandbox import Isolation
from sevro_core.models import Observation, TrialView
from sevro_core.states import Completeness
from sevro_core.vocabulary import FINAL_MESSAGE_OBSERVATION

NO_WORKSPACE = Path("/nonexistent-sevro-workspace")
"""The default workspace: a grader that looks at files gets a clear error, never a stale tree."""


def final_message_observation(message: str | None, *, complete: bool = True) -> Observation:
    """``sevro.observation.final-message`` as the engine records it."""
    if message is None:
        return Observation(FINAL_MESSAGE_OBSERVATION, "sevro.engine", Completeness.UNAVAILABLE, {})
    data = message.encode("utf-8", "surrogatepass")
    return Observation(
        FINAL_MESSAGE_OBSERVATION,
        "sevro.engine",
        Completeness.COMPLETE if complete else Completeness.PARTIAL,
        {"sha256": hashlib.sha256(data).hexdigest(), "byteLength": len(data)},
    )


def trial_view(
    final_message: str | None = "",
    *,
    complete: bool = True,
    observations: Iterable[Observation] = (),
    workspace: Path | None = None,
    files: Mapping[str, str | bytes] | None = None,
    baseline: Mapping[str, JsonValue] | None = None,
    fixture_bin_dir: Path | None = None,
    isolation: Isolation | None = None,
    case_id: str = "case",
    trial: int = 1,
) -> TrialView:
    """A valid view of one finished trial.

    ``complete=False`` is a partial final message (the host stopped mid-answer); ``None`` as
    the message means the host produced none. ``files`` are written into ``workspace`` first
    (give a ``tmp_path``). The workspace defaults to the sandbox's (``isolation``, see
    :func:`sevro_core.testing.trial_isolation`), else to a path that does not exist.
    Observations keep their order after the engine's own.
    """
    if workspace is None:
        workspace = isolation.workspace if isolation is not None else NO_WORKSPACE
    if fixture_bin_dir is None and isolation is not None:
        fixture_bin_dir = isolation.fixture_bin_dir
    if files:
        if workspace == NO_WORKSPACE:
            raise ValueError("files need a workspace directory (pass workspace=tmp_path)")
        for relative, content in files.items():
            path = workspace / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content, encoding="utf-8")
    final = final_message_observation(final_message, complete=complete)
    table = {final.id: final}
    for observation in observations:
        if observation.id in table:
            raise ValueError(f"observation {observation.id} appears twice")
        table[observation.id] = observation
    return TrialView(
        case_id=case_id,
        trial=trial,
        final_message=final_message,
        final_message_complete=final.completeness is Completeness.COMPLETE,
        observations=table,
        workspace=workspace,
        baseline=dict(baseline or {}),
        fixture_bin_dir=fixture_bin_dir,
        isolation=isolation,
    )


def observation(
    observation_id: str,
    data: Mapping[str, JsonValue] | None = None,
    *,
    completeness: Completeness = Completeness.COMPLETE,
    source: str = "acme.host.test",
) -> Observation:
    """An observation a host or fixture could have recorded (``complete`` by default)."""
    return Observation(observation_id, source, completeness, dict(data or {}))
