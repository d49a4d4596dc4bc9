"""Instrumentation an extension requests in ``prepare``, checked before any trial starts.

Sevro's rule: an extension may request only instrumentation the host declares
(:func:`sevro_core.api.instrumentation_of`) and the extension negotiated in ``describe``; under
``--condition passive`` a request whose offer changes execution is refused, so a passive
evaluation can never be quietly turned into a guarded one. Requested and applied
instrumentation are retained separately: the request exactly as the extension sent it, and
what the host applies. The host must apply exactly what was requested (Sevro's
``appliedInstrumentation`` equals the request, and ``instrumentationDigest`` hashes
``{requested, applied: requested}``), so an always-running observer the extension did not ask
for is not listed as applied: it is in the host's capabilities and its observation in the
evidence anyway.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from attrs import frozen

from sevro_core.api import (
    ID_PATTERN,
    Completeness,
    InstrumentationOffer,
    InvocationError,
    JsonValue,
    Observation,
    hash_json,
)
from sevro_extensions.errors import shown
from sevro_extensions.limits import (
    MAX_INSTRUMENTATION_CONFIGURATION_BYTES,
    MAX_INSTRUMENTATION_REQUESTS,
)

CONDITIONS = ("passive", "enforced")
_ID = re.compile(ID_PATTERN)
_WHERE = "prepare requestedInstrumentation"


@frozen
class InstrumentationRequest:
    """One requested probe or guard: its id and the extension's configuration for it."""

    id: str
    configuration: Mapping[str, JsonValue]

    def to_json(self) -> dict[str, JsonValue]:
        return {"id": self.id, "configuration": dict(self.configuration)}


@frozen
class InstrumentationAgreement:
    """What the run requested and what the host applies, kept apart."""

    condition: str
    requested: tuple[InstrumentationRequest, ...]
    applied: tuple[InstrumentationRequest, ...]
    """Exactly the requested items: a host that cannot apply one is refused before a trial."""

    def record(self) -> dict[str, JsonValue]:
        """The retained form: ``{"requested": [{id, configuration}], "applied": [...]}``."""
        return {
            "requested": [item.to_json() for item in self.requested],
            "applied": [item.to_json() for item in self.applied],
        }

    def digest(self) -> str:
        """Sevro's ``instrumentationDigest``: ``hashJson({requested, applied: requested})``,
        which is the record's hash, since applied equals requested."""
        return hash_json(self.record())

    def unapplied(self, observations: Mapping[str, Observation]) -> tuple[str, ...]:
        """Applied ids a trial shows no sign of: each offer's id is also the observation the
        host reports it through, so one absent or ``unavailable`` is a mismatch between
        requested and applied (Sevro's ``sevro.instrumentation.mismatch``), never a pass."""
        return tuple(
            item.id
            for item in self.applied
            if item.id not in observations
            or observations[item.id].completeness is Completeness.UNAVAILABLE
        )


NO_INSTRUMENTATION = InstrumentationAgreement(condition="passive", requested=(), applied=())
"""Nothing requested (a run without an extension, or one that requests none)."""


def negotiate_instrumentation(
    requested: Sequence[Mapping[str, Any]],
    offered: Sequence[InstrumentationOffer],
    condition: str,
    *,
    negotiated: Collection[str],
) -> InstrumentationAgreement:
    """Check ``prepare``'s ``requestedInstrumentation`` against the host's offers, the
    capabilities negotiated in ``describe`` and the condition; raise ``InvocationError``
    (exit 64, one line) on the first problem."""
    if condition not in CONDITIONS:
        raise InvocationError(f"--condition must be passive or enforced, not {condition!r}")
    offers = _offers(offered)
    listed: object = requested  # checked again: the caller may hand on any decoded JSON
    if not isinstance(listed, list | tuple):
        raise InvocationError(f"{_WHERE} is not a list")
    if len(requested) > MAX_INSTRUMENTATION_REQUESTS:
        raise InvocationError(
            f"{_WHERE} has {len(requested)} items; at most {MAX_INSTRUMENTATION_REQUESTS} "
            "are allowed"
        )
    items: list[InstrumentationRequest] = []
    for index, raw in enumerate(requested):
        item = _request(raw, index)
        if any(seen.id == item.id for seen in items):
            raise InvocationError(f"extension requests instrumentation {item.id} twice")
        _allowed(item.id, offers, negotiated, condition)
        items.append(item)
    return InstrumentationAgreement(condition, tuple(items), tuple(items))


def _offers(offered: Sequence[InstrumentationOffer]) -> dict[str, InstrumentationOffer]:
    """The host's offers by id; a duplicated id is a host bug, refused."""
    offers: dict[str, InstrumentationOffer] = {}
    for offer in offered:
        if offer.id in offers:
            raise InvocationError(f"the host offers instrumentation {offer.id} twice")
        offers[offer.id] = offer
    return offers


def _request(raw: object, index: int) -> InstrumentationRequest:
    """One ``{id, configuration}`` item, its configuration a bounded JSON object."""
    if not isinstance(raw, Mapping) or set(raw) != {"id", "configuration"}:
        raise InvocationError(
            f"{_WHERE} item {index} must be an object with exactly id and configuration"
        )
    ident, configuration = raw["id"], raw["configuration"]
    if not isinstance(ident, str) or len(ident) > 128 or not _ID.fullmatch(ident):
        raise InvocationError(f"{_WHERE} id {shown(ident)} is not a namespaced id")
    if not isinstance(configuration, Mapping):
        raise InvocationError(
            f"instrumentation {ident} configuration must be a JSON object, not "
            f"{shown(configuration)}"
        )
    try:
        text = json.dumps(configuration, ensure_ascii=False, separators=(",", ":"))
        # parse_constant fires only for NaN and ±Infinity, which JSON does not have
        copy = json.loads(text, parse_constant=_not_json)
    except (TypeError, ValueError) as error:
        raise InvocationError(
            f"instrumentation {ident} configuration is not JSON: {error}"
        ) from None
    if copy != configuration:  # json.dumps turns a number key into a string silently
        raise InvocationError(f"instrumentation {ident} configuration has a key that is no string")
    if len(text.encode()) > MAX_INSTRUMENTATION_CONFIGURATION_BYTES:
        raise InvocationError(
            f"instrumentation {ident} configuration is larger than "
            f"{MAX_INSTRUMENTATION_CONFIGURATION_BYTES} bytes of JSON"
        )
    return InstrumentationRequest(ident, copy)


def _not_json(constant: str) -> float:
    raise ValueError(f"{constant} is not a JSON number")


def _allowed(
    ident: str,
    offers: Mapping[str, InstrumentationOffer],
    negotiated: Collection[str],
    condition: str,
) -> None:
    """Offered by the host, negotiated by the extension, and passive-safe when passive."""
    offer = offers.get(ident)
    if offer is None:
        kinds = ", ".join(sorted(offers)) or "none"
        raise InvocationError(
            f"extension requests instrumentation {ident}, which the host does not offer "
            f"(it offers: {kinds})"
        )
    if ident not in negotiated:
        raise InvocationError(
            f"extension requests instrumentation {ident} without negotiating it: list it "
            "in describe's requiredCapabilities or optionalCapabilities"
        )
    if condition == "passive" and offer.changes_execution:
        raise InvocationError(
            f"extension requests instrumentation {ident}, which would change execution "
            "under --condition passive"
        )
