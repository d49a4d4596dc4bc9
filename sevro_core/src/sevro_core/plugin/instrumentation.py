"""The instrumentation a configured host offers to an extension's ``prepare``.

Sevro lets an extension request host-declared execution probes or guards by id; the engine
refuses a request the host does not offer, and under ``--condition passive`` one that would
change what the agent does. A host declares its offers through an optional ``instrumentation``
attribute of its :class:`~sevro_core.plugin.protocols.ConfiguredHost` (a host that declares
none offers none), so the core names no host. The ids count as host capabilities too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from attrs import field, frozen

from sevro_core.errors import ConfigurationError
from sevro_core.plugin.protocols import ID_PATTERN, ConfiguredHost

_ID = re.compile(ID_PATTERN)


def _namespaced(_instance: object, _attribute: object, value: str) -> None:
    if not isinstance(value, str) or not _ID.fullmatch(value) or len(value) > 128:
        raise ValueError(f"instrumentation id {value!r} is not a namespaced id")


@frozen
class InstrumentationOffer:
    """One probe or guard a host can apply when an extension asks for it."""

    id: str = field(validator=_namespaced)
    changes_execution: bool
    """True when applying it changes what the agent does or sees (a guard that blocks a tool,
    an injected instruction); such an offer is refused under ``--condition passive``. An
    observer that only records is False."""


def instrumentation_of(configured: object) -> tuple[InstrumentationOffer, ...]:
    """A configured host's declared offers (its optional ``instrumentation``), or ``()``.

    A declaration that is not a tuple of offers with unique ids is a bug in the host plugin
    and refused (``ConfigurationError``), never read as "offers nothing"."""
    offers = getattr(configured, "instrumentation", ())
    if not isinstance(offers, tuple) or not all(
        isinstance(offer, InstrumentationOffer) for offer in offers
    ):
        raise ConfigurationError(
            "the host's instrumentation is not a tuple of InstrumentationOffer values"
        )
    ids = [offer.id for offer in offers]
    duplicated = sorted({i for i in ids if ids.count(i) > 1})
    if duplicated:
        raise ConfigurationError(f"the host offers instrumentation {duplicated[0]} twice")
    return offers


def host_capabilities_of(configured: ConfiguredHost) -> frozenset[str]:
    """What an extension may negotiate from the host: its capabilities plus its
    instrumentation ids (Sevro's host capability registry)."""
    offered = {offer.id for offer in instrumentation_of(configured)}
    return frozenset(configured.capabilities) | offered


def passive_offers(observers: Iterable[str]) -> tuple[InstrumentationOffer, ...]:
    """Offers of observers that only watch (none changes execution), sorted by id."""
    return tuple(InstrumentationOffer(o, changes_execution=False) for o in sorted(set(observers)))
