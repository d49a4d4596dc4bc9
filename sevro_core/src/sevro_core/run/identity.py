"""Evaluation identity v1: a sha256 over RFC 8785 canonical JSON of the run's dimensions.

Two runs with the same identity evaluated the same thing the same way. Timestamps, temp paths,
run ids and output locations never enter it. See `docs/identity.md`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sevro_core.formats.canonical import canonical_json, hash_json
from sevro_core.models import Route

if TYPE_CHECKING:
    from sevro_core.run.planning import PlannedCase

IDENTITY_ALGORITHM = "sevro.identity.v1"


def identity_digest(dimensions: Mapping[str, Any]) -> str:
    return hashlib.sha256(
        IDENTITY_ALGORITHM.encode() + b"\n" + canonical_json(dict(dimensions))
    ).hexdigest()


def evaluation_identity(
    *,
    runner_build_digest: str,
    project_digest: str,
    configuration_digest: str,
    cases: Sequence[PlannedCase],
    evaluator: Mapping[str, Any],
    graders_active: Sequence[Mapping[str, str]],
    route: Route,
    condition: str,
    trials: int,
    threshold: float,
) -> dict[str, Any]:
    """The 16 dimensions of Sevro's identity v1; per-case digests are hashed as ordered lists."""
    dimensions = {
        "runnerBuildDigest": runner_build_digest,
        "projectDigest": project_digest,
        "configurationDigest": configuration_digest,
        "extensionDigest": None,
        "extensionProtocol": None,
        "caseDigest": hash_json([c.digests["case"] for c in cases]),
        "fixtureDigest": hash_json([c.digests["fixture"] for c in cases]),
        "checksDigest": hash_json([c.digests["checks"] for c in cases]),
        "requiredEvidenceDigest": hash_json([c.digests["requiredEvidence"] for c in cases]),
        "evaluatorDigest": hash_json(dict(evaluator)),
        "graderDigest": hash_json([dict(g) for g in graders_active]),
        "instrumentationDigest": hash_json({"requested": [], "applied": []}),
        "routeDigest": hash_json(route.to_json()),
        "condition": condition,
        "trialCount": trials,
        "passThreshold": threshold,
    }
    return {
        "algorithm": IDENTITY_ALGORITHM,
        "digest": identity_digest(dimensions),
        "dimensions": dimensions,
    }
