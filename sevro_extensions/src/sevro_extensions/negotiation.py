"""Capability negotiation: what an extension's ``describe`` answer lets this run use.

The extension must offer ``sevro.extension.v1``; every capability it requires must be offered
by the engine or the host; an optional one is kept only when one of them offers it. The
negotiated set is the required plus the supported optional capabilities. A task-verdict
policy selected for the run must be one the extension advertises. ``describe``'s result has
already passed its schema (``envelope.decode_response``); this adds the rules a schema cannot
say.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from attrs import frozen

from sevro_core.api import JsonValue
from sevro_extensions.envelope import EXTENSION_PROTOCOL
from sevro_extensions.errors import NegotiationError


@frozen
class Description:
    """What the extension said about itself in ``describe``."""

    extension_id: str
    version: str
    protocols: tuple[str, ...]
    required: tuple[str, ...]
    optional: tuple[str, ...]
    graders: tuple[str, ...]
    task_verdict_policies: tuple[str, ...]


@frozen
class Negotiated:
    """The agreement a run works under."""

    description: Description
    protocol: str
    capabilities: tuple[str, ...]
    """Required plus supported optional capabilities, sorted."""
    task_verdict_policy: str | None


def describe_params(
    engine_capabilities: Iterable[str], host_capabilities: Iterable[str]
) -> dict[str, JsonValue]:
    """The ``params`` of a ``describe`` request."""
    return {
        "protocols": [EXTENSION_PROTOCOL],
        "engineCapabilities": sorted(set(engine_capabilities)),
        "hostCapabilities": sorted(set(host_capabilities)),
    }


def description(result: dict[str, Any]) -> Description:
    """The schema-valid ``describe`` result as a value; duplicates across lists refused."""
    required, optional = result["requiredCapabilities"], result["optionalCapabilities"]
    both = sorted(set(required) & set(optional))
    if both:
        raise NegotiationError(
            f"extension lists {both[0]} as both a required and an optional capability"
        )
    return Description(
        extension_id=result["extension"]["id"],
        version=result["extension"]["version"],
        protocols=tuple(result["protocols"]),
        required=tuple(required),
        optional=tuple(optional),
        graders=tuple(result["graders"]),
        task_verdict_policies=tuple(result["taskVerdictPolicies"]),
    )


def negotiate(
    described: Description,
    *,
    engine_capabilities: Iterable[str],
    host_capabilities: Iterable[str],
    task_verdict_policy: str | None = None,
) -> Negotiated:
    """Agree on protocol, capabilities and policy, or raise :class:`NegotiationError`."""
    name = f"extension {described.extension_id}"
    if EXTENSION_PROTOCOL not in described.protocols:
        offered = ", ".join(described.protocols)
        raise NegotiationError(f"{name} does not offer {EXTENSION_PROTOCOL} (offers {offered})")
    supported = set(engine_capabilities) | set(host_capabilities)
    missing = [capability for capability in described.required if capability not in supported]
    if missing:
        raise NegotiationError(
            f"{name} requires capability {missing[0]}, which neither the engine nor the host offers"
        )
    kept = [capability for capability in described.optional if capability in supported]
    if task_verdict_policy is not None and (
        task_verdict_policy not in described.task_verdict_policies
    ):
        raise NegotiationError(
            f"{name} does not advertise task-verdict policy {task_verdict_policy}"
        )
    return Negotiated(
        description=described,
        protocol=EXTENSION_PROTOCOL,
        capabilities=tuple(sorted({*described.required, *kept})),
        task_verdict_policy=task_verdict_policy,
    )
