"""Evaluation identity v1: a sha256 over RFC 8785 canonical JSON of the run's dimensions.

Two runs with the same identity evaluated the same thing the same way. Timestamps, temp paths,
run ids and output locations never enter it. See `docs/identity.md`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from attrs import frozen

from sevro_core.formats.canonical import canonical_json, hash_json
from sevro_core.models import Route

PROVENANCE_ONLY = ("runSettings",)
"""Keys of the redacted configuration recorded for the audit but not evaluated: how the values
were given (a run settings file, or the same values as flags) does not change what a run
evaluates, so they stay out of the configuration digest and ``report --compare``."""

IDENTITY_ALGORITHM = "sevro.identity.v1"


def identity_digest(dimensions: Mapping[str, Any]) -> str:
    return hashlib.sha256(
        IDENTITY_ALGORITHM.encode() + b"\n" + canonical_json(dict(dimensions))
    ).hexdigest()


@frozen
class IdentityInputs:
    """What the identity is computed from, gathered by the planner.

    Cases enter only through their digests, so identity needs nothing of the planner's types.
    """

    runner_build_digest: str
    project_digest: str
    configuration_digest: str
    case_digests: Sequence[Mapping[str, str]]
    """Each planned case's digests (``case``, ``fixture``, ``checks``, ...), in run order."""
    evaluator: Mapping[str, Any]
    graders_active: Sequence[Mapping[str, str]]
    route: Route
    condition: str
    trials: int
    threshold: float
    extension: Mapping[str, Any] | None = None
    """The case source's identity (``extensionDigest``, ``extensionProtocol``), or None."""


def evaluation_identity(inputs: IdentityInputs) -> dict[str, Any]:
    """The 16 dimensions of Sevro's identity v1; per-case digests are hashed as ordered lists."""
    cases, extension = inputs.case_digests, inputs.extension
    dimensions = {
        "runnerBuildDigest": inputs.runner_build_digest,
        "projectDigest": inputs.project_digest,
        "configurationDigest": inputs.configuration_digest,
        "extensionDigest": extension.get("extensionDigest") if extension else None,
        "extensionProtocol": extension.get("extensionProtocol") if extension else None,
        "caseDigest": hash_json([c["case"] for c in cases]),
        "fixtureDigest": hash_json([c["fixture"] for c in cases]),
        "checksDigest": hash_json([c["checks"] for c in cases]),
        "requiredEvidenceDigest": hash_json([c["requiredEvidence"] for c in cases]),
        "evaluatorDigest": hash_json(dict(inputs.evaluator)),
        "graderDigest": hash_json([dict(g) for g in inputs.graders_active]),
        "instrumentationDigest": hash_json(
            (extension or {}).get("instrumentation") or {"requested": [], "applied": []}
        ),
        "routeDigest": hash_json(inputs.route.to_json()),
        "condition": inputs.condition,
        "trialCount": inputs.trials,
        "passThreshold": inputs.threshold,
    }
    return {
        "algorithm": IDENTITY_ALGORITHM,
        "digest": identity_digest(dimensions),
        "dimensions": dimensions,
    }
