"""Test-scoped plugins: registered for one test, gone at its end.

sevro builds a fresh registry on every ``load_plugins`` call from the installed ``sevro`` entry
points, so a test plugin joins them as one more entry point (as datasette's tests register a
plugin on ``pm`` and unregister it after). Everything a real plugin goes through still applies:
``SEVRO_LOAD_PLUGINS`` filtering, id validation, duplicate-id refusal, ``sevro plugins``.
"""

from __future__ import annotations

import itertools
import types
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import pytest
from attrs import frozen

if TYPE_CHECKING:
    from sevro_core.plugin.manager import Registry

_serial = itertools.count(1)


@frozen
class _TestEntryPoint:
    """Quacks like an ``importlib.metadata`` entry point of no distribution."""

    name: str
    plugin: object

    @property
    def dist(self) -> None:
        return None

    @property
    def value(self) -> str:
        return f"test plugin {self.name}"

    def load(self) -> object:
        return self.plugin


class ScopedPlugins:
    """Plugins registered for the current test (the ``sevro_plugins`` fixture)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self._monkeypatch = monkeypatch
        self._entries: list[_TestEntryPoint] = []
        self._installed = False

    def add(self, plugin: object, name: str | None = None) -> str:
        """Register ``plugin`` (a module or object with ``@hookimpl`` functions); return its
        plugin name (``test-<n>`` unless given)."""
        plugin_name = name or f"test-{next(_serial)}"
        if any(entry.name == plugin_name for entry in self._entries):
            raise ValueError(f"a test plugin named {plugin_name!r} is already registered")
        self._entries.append(_TestEntryPoint(plugin_name, plugin))
        self._install()
        return plugin_name

    def register(self, kind: str, *objects: Any, name: str | None = None) -> str:
        """Register ``objects`` of ``kind`` (``grader``, ``host``, ``fixture``, ``sandbox``,
        ``verdict-policy``, ``reporter``, ``executor``, ...: a kind of ``KINDS``) through one
        plugin, as its register hook would."""
        from sevro_core.plugin.hookspecs import hookimpl
        from sevro_core.plugin.manager import KINDS

        hooks = dict(KINDS)
        if kind not in hooks:
            raise ValueError(f"unknown plugin kind {kind!r}; kinds: {', '.join(hooks)}")

        def registers(register: Callable[[Any], None]) -> None:
            for obj in objects:
                register(obj)

        plugin = types.ModuleType(f"sevro_test_plugin_{next(_serial)}")
        setattr(plugin, hooks[kind], hookimpl(registers, specname=hooks[kind]))
        return self.add(plugin, name)

    def registry(self, environ: Mapping[str, str] | None = None) -> Registry:
        """The registry a run would use now: installed plugins plus this test's."""
        from sevro_core.plugin.manager import load_plugins

        return load_plugins(environ=environ)

    def _install(self) -> None:
        if self._installed:
            return
        from sevro_core.plugin import manager

        installed = manager._entry_points
        entries = self._entries

        def with_test_plugins() -> Iterable[Any]:
            return [*installed(), *entries]

        self._monkeypatch.setattr(manager, "_entry_points", with_test_plugins)
        self._installed = True


@pytest.fixture
def sevro_plugins(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScopedPlugins]:
    """Register plugins for one test; they are unregistered when it ends."""
    yield ScopedPlugins(monkeypatch)
