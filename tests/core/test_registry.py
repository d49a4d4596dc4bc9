"""The registry's typed accessors return what the plugins registered, by kind."""

from __future__ import annotations

import pytest

from sevro_core.builtins.default_verdict import DefaultVerdictPolicy
from sevro_core.builtins.local_executor import LocalExecutor
from sevro_core.builtins.scripted_host import ScriptedHost
from sevro_core.plugin.manager import KINDS, load_plugins
from sevro_core.testing import ScopedPlugins


def test_typed_accessors_find_each_kind_and_nothing_else() -> None:
    registry = load_plugins(environ={})
    assert isinstance(registry.host("sevro.host.scripted"), ScriptedHost)
    assert isinstance(registry.verdict_policy("sevro.verdict.default"), DefaultVerdictPolicy)
    assert registry.grader("sevro.regex") is registry.get("grader", "sevro.regex") is not None
    assert registry.fixture("sevro.fixture.inline") is not None
    assert registry.sandbox("sevro.sandbox.bwrap") is not None
    assert registry.reporter("sevro.report.markdown") is not None
    assert registry.case_source("sevro.extension") is not None
    assert isinstance(registry.executor("sevro.executor.local"), LocalExecutor)
    # an id of another kind is not found under this one
    assert registry.host("sevro.regex") is None
    assert registry.grader("sevro.host.scripted") is None
    assert registry.reporter("sevro.verdict.default") is None
    assert registry.executor("sevro.host.scripted") is None
    listings = {
        "host": registry.hosts(),
        "grader": registry.graders(),
        "fixture": registry.fixtures(),
        "sandbox": registry.sandboxes(),
        "verdict-policy": registry.verdict_policies(),
        "reporter": registry.reporters(),
        "reviewer": registry.reviewers(),
        "rubric": registry.rubrics(),
        "case-source": registry.case_sources(),
        "executor": registry.executors(),
    }
    assert set(listings) == {kind for kind, _ in KINDS}
    for kind, listing in listings.items():
        assert sorted(listing) == registry.ids(kind) and listing, kind
        assert all(obj.id == object_id for object_id, obj in listing.items()), kind


def test_an_executor_without_start_is_refused(sevro_plugins: ScopedPlugins) -> None:
    from sevro_core.errors import InvocationError

    class NoStart:
        id = "acme.executor.lazy"
        version = "1"
        capabilities: frozenset[str] = frozenset()
        requires: frozenset[str] = frozenset()

    name = sevro_plugins.register("executor", NoStart())
    with pytest.raises(
        InvocationError, match=f"plugin {name} registered executor .* without start"
    ):
        sevro_plugins.registry()
