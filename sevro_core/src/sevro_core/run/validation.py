"""``sevro validate``: the load-time checks of ``sevro run`` without choosing a host."""

from __future__ import annotations

from collections.abc import Sequence

from sevro_core.models import Case
from sevro_core.plugin.manager import Registry
from sevro_core.plugin.protocols import NO_FIXTURE_CONTEXT, FixtureContext
from sevro_core.run.planning import compile_checks, compile_fixture


def validate_cases(
    cases: Sequence[Case], registry: Registry, context: FixtureContext = NO_FIXTURE_CONTEXT
) -> None:
    """Compile every fixture and check configuration; raise the first problem (exit 64)."""
    for case in cases:
        compile_fixture(case, registry, context)
        compile_checks(case, registry)
