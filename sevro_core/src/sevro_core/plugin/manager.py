"""The plugin manager: discovers ``sevro`` entry points and local plugin files.

Built-in features register through exactly the same entry points a third party would use. Loading
is explicit (``load_plugins``) so that importing the CLI, or ``sevro --help``, discovers nothing.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pluggy
from attrs import define, field, frozen

from sevro_core.errors import InvocationError
from sevro_core.limits import MAX_PLUGIN_FILE_BYTES
from sevro_core.plugin import hookspecs
from sevro_core.plugin.casesources import CaseSource
from sevro_core.plugin.protocols import (
    ID_PATTERN,
    Executor,
    FixtureProvider,
    Grader,
    Host,
    Reporter,
    Reviewer,
    Rubric,
    Sandbox,
    VerdictPolicy,
)

ENTRY_POINT_GROUP = "sevro"
LOAD_PLUGINS_ENV = "SEVRO_LOAD_PLUGINS"

KINDS: tuple[tuple[str, str], ...] = (
    ("host", "sevro_register_hosts"),
    ("grader", "sevro_register_graders"),
    ("fixture", "sevro_register_fixtures"),
    ("sandbox", "sevro_register_sandboxes"),
    ("verdict-policy", "sevro_register_verdict_policies"),
    ("reporter", "sevro_register_reporters"),
    ("reviewer", "sevro_register_reviewers"),
    ("rubric", "sevro_register_rubrics"),
    ("case-source", "sevro_register_case_sources"),
    ("executor", "sevro_register_executors"),
)
_REQUIRED_ATTRIBUTES: Mapping[str, tuple[str, ...]] = {
    "host": ("configure",),
    "grader": ("compile", "stage"),
    "fixture": ("accepts", "compile"),
    "sandbox": ("probe", "wrap"),
    "verdict-policy": ("verdict",),
    "reporter": ("render", "format"),
    "reviewer": ("prompt", "review"),
    "rubric": ("prompt", "decide"),
    "case-source": ("open",),
    "executor": ("start",),
}
_ID_RE = re.compile(ID_PATTERN)


@frozen
class Registration:
    kind: str
    id: str
    version: str
    capabilities: tuple[str, ...]
    requires: tuple[str, ...]


@define
class PluginInfo:
    """One loaded plugin: where it came from and what it registered."""

    name: str
    distribution: str | None
    version: str | None
    module: str
    source: str  # "entry-point" or "file"
    registrations: list[Registration] = field(factory=list)
    commands: list[str] = field(factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "distribution": self.distribution,
            "version": self.version,
            "module": self.module,
            "source": self.source,
            "registers": [
                {
                    "kind": r.kind,
                    "id": r.id,
                    "version": r.version,
                    "capabilities": list(r.capabilities),
                    "requires": list(r.requires),
                }
                for r in self.registrations
            ],
            "commands": list(self.commands),
        }


@define
class Registry:
    """Everything the loaded plugins registered, by kind and id.

    The typed accessors (``host(id)``, ``graders()``, ...) are what code uses; registration
    checked each object's id, version, capabilities, requires and its kind's methods, so the
    objects are what their protocol says. ``get``, ``all`` and ``ids`` take the kind as a string
    (``"verdict-policy"``) for code that handles every kind alike.
    """

    manager: pluggy.PluginManager
    plugins: list[PluginInfo]
    objects: dict[str, dict[str, Any]]

    def host(self, object_id: str) -> Host | None:
        return self.objects["host"].get(object_id)

    def grader(self, object_id: str) -> Grader | None:
        return self.objects["grader"].get(object_id)

    def fixture(self, object_id: str) -> FixtureProvider | None:
        return self.objects["fixture"].get(object_id)

    def sandbox(self, object_id: str) -> Sandbox | None:
        return self.objects["sandbox"].get(object_id)

    def verdict_policy(self, object_id: str) -> VerdictPolicy | None:
        return self.objects["verdict-policy"].get(object_id)

    def reporter(self, object_id: str) -> Reporter | None:
        return self.objects["reporter"].get(object_id)

    def reviewer(self, object_id: str) -> Reviewer | None:
        return self.objects["reviewer"].get(object_id)

    def rubric(self, object_id: str) -> Rubric | None:
        return self.objects["rubric"].get(object_id)

    def case_source(self, object_id: str) -> CaseSource | None:
        return self.objects["case-source"].get(object_id)

    def executor(self, object_id: str) -> Executor | None:
        return self.objects["executor"].get(object_id)

    def hosts(self) -> Mapping[str, Host]:
        return self.objects["host"]

    def graders(self) -> Mapping[str, Grader]:
        return self.objects["grader"]

    def fixtures(self) -> Mapping[str, FixtureProvider]:
        """Fixture providers in registration order, the order ``accepts`` is asked in."""
        return self.objects["fixture"]

    def sandboxes(self) -> Mapping[str, Sandbox]:
        return self.objects["sandbox"]

    def verdict_policies(self) -> Mapping[str, VerdictPolicy]:
        return self.objects["verdict-policy"]

    def reporters(self) -> Mapping[str, Reporter]:
        return self.objects["reporter"]

    def reviewers(self) -> Mapping[str, Reviewer]:
        return self.objects["reviewer"]

    def rubrics(self) -> Mapping[str, Rubric]:
        return self.objects["rubric"]

    def case_sources(self) -> Mapping[str, CaseSource]:
        return self.objects["case-source"]

    def executors(self) -> Mapping[str, Executor]:
        return self.objects["executor"]

    def get(self, kind: str, object_id: str) -> Any | None:
        return self.objects[kind].get(object_id)

    def all(self, kind: str) -> dict[str, Any]:
        return self.objects[kind]

    def ids(self, kind: str) -> list[str]:
        return sorted(self.objects[kind])


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _allow_list(environ: Mapping[str, str]) -> set[str] | None:
    raw = environ.get(LOAD_PLUGINS_ENV)
    if raw is None:
        return None
    return {_normalise(item.strip()) for item in raw.split(",") if item.strip()}


def _entry_points() -> Iterable[Any]:
    from importlib_metadata import entry_points

    return entry_points(group=ENTRY_POINT_GROUP)


def _load_file(path: Path) -> ModuleType:
    from sevro_core.formats.jsonio import read_bounded

    resolved = path.expanduser().resolve()
    source = read_bounded(resolved, MAX_PLUGIN_FILE_BYTES, what="plugin file")
    if resolved.suffix != ".py":
        raise InvocationError("a plugin file must be a .py file", source=path)
    digest = hashlib.sha256(str(resolved).encode()).hexdigest()[:12]
    module_name = f"sevro_local_plugin_{resolved.stem}_{digest}"
    spec = importlib.util.spec_from_loader(module_name, loader=None, origin=str(resolved))
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    module.__file__ = str(resolved)
    sys.modules[module_name] = module
    try:
        code = compile(source, str(resolved), "exec")
        exec(code, module.__dict__)  # noqa: S102 - an explicitly requested local plugin
    except Exception as exc:
        sys.modules.pop(module_name, None)
        raise InvocationError(
            f"plugin file failed to load: {type(exc).__name__}: {exc}", source=path
        ) from None
    return module


def load_plugins(
    plugin_files: Sequence[Path] = (), environ: Mapping[str, str] | None = None
) -> Registry:
    """Discover installed plugins (filtered by ``SEVRO_LOAD_PLUGINS``) and local plugin files."""
    env = os.environ if environ is None else environ
    manager = pluggy.PluginManager(hookspecs.PROJECT)
    manager.add_hookspecs(hookspecs)
    infos: list[PluginInfo] = []
    allowed = _allow_list(env)
    seen_names: set[str] = set()
    for ep in sorted(_entry_points(), key=lambda e: (e.dist.name if e.dist else "", e.name)):
        dist_name = ep.dist.name if ep.dist is not None else None
        names = {_normalise(ep.name)} | ({_normalise(dist_name)} if dist_name else set())
        seen_names |= names
        if allowed is not None and not names & allowed:
            continue
        try:
            module = ep.load()
        except Exception as exc:
            raise InvocationError(
                f"installed plugin {ep.name!r} ({dist_name}) failed to import: "
                f"{type(exc).__name__}: {exc}"
            ) from None
        plugin_name = f"{dist_name}:{ep.name}" if dist_name else ep.name
        manager.register(module, name=plugin_name)
        infos.append(
            PluginInfo(
                name=plugin_name,
                distribution=dist_name,
                version=ep.dist.version if ep.dist is not None else None,
                module=ep.value,
                source="entry-point",
            )
        )
    if allowed is not None:
        unknown = sorted(allowed - seen_names)
        if unknown:
            raise InvocationError(
                f"{LOAD_PLUGINS_ENV} names {', '.join(unknown)}, which no installed plugin "
                "provides; run `sevro plugins` to see what is installed"
            )
    for path in plugin_files:
        module = _load_file(path)
        name = f"file:{Path(path).expanduser().resolve()}"
        if manager.has_plugin(name):
            continue
        manager.register(module, name=name)
        infos.append(
            PluginInfo(name=name, distribution=None, version=None, module=str(path), source="file")
        )
    try:
        manager.check_pending()
    except pluggy.PluginValidationError as exc:
        raise InvocationError(f"plugin {exc.plugin!r} implements an unknown hook: {exc}") from None
    return _collect(manager, infos)


def _collect(manager: pluggy.PluginManager, infos: list[PluginInfo]) -> Registry:
    by_name = {info.name: info for info in infos}
    objects: dict[str, dict[str, Any]] = {kind: {} for kind, _ in KINDS}
    owners: dict[tuple[str, str], str] = {}
    for kind, hook_name in KINDS:
        caller = getattr(manager.hook, hook_name)
        for impl in reversed(caller.get_hookimpls()):
            info = by_name[impl.plugin_name]
            impl.function(register=_registrar(kind, info, objects[kind], owners))
    from sevro_core.plugin.hostsettings import check_declarations, check_executor_declarations

    check_declarations(
        objects["host"], {oid: name for (k, oid), name in owners.items() if k == "host"}
    )
    check_executor_declarations(
        objects["executor"],
        objects["host"],
        {oid: name for (k, oid), name in owners.items() if k == "executor"},
    )
    return Registry(manager=manager, plugins=infos, objects=objects)


def _registrar(
    kind: str, info: PluginInfo, table: dict[str, Any], owners: dict[tuple[str, str], str]
) -> Callable[[Any], None]:
    def register(obj: Any) -> None:
        object_id = getattr(obj, "id", None)
        if not isinstance(object_id, str) or not _ID_RE.match(object_id) or len(object_id) > 128:
            raise InvocationError(
                f"plugin {info.name} registered a {kind} with an invalid id {object_id!r} "
                "(ids are namespaced, like acme.grader.foo)"
            )
        missing = [
            attr
            for attr in ("version", "capabilities", "requires", *_REQUIRED_ATTRIBUTES[kind])
            if not hasattr(obj, attr)
        ]
        if missing:
            raise InvocationError(
                f"plugin {info.name} registered {kind} {object_id} without {', '.join(missing)}"
            )
        if object_id in table:
            raise InvocationError(
                f"{kind} {object_id} is registered twice: by {owners[(kind, object_id)]} and by "
                f"{info.name}; uninstall one or restrict {LOAD_PLUGINS_ENV}"
            )
        table[object_id] = obj
        owners[(kind, object_id)] = info.name
        info.registrations.append(
            Registration(
                kind=kind,
                id=object_id,
                version=str(obj.version),
                capabilities=tuple(sorted(obj.capabilities)),
                requires=tuple(sorted(obj.requires)),
            )
        )

    return register


def register_commands(registry: Registry, app: Any) -> None:
    """Let plugins add Typer commands to ``app`` and record which plugin added which."""
    for impl in reversed(registry.manager.hook.sevro_register_commands.get_hookimpls()):
        before, groups = len(app.registered_commands), len(app.registered_groups)
        impl.function(app=app)
        added = [c.name or c.callback.__name__ for c in app.registered_commands[before:]]
        added += [g.name or "" for g in app.registered_groups[groups:]]
        for info in registry.plugins:
            if info.name == impl.plugin_name:
                info.commands.extend(a.replace("_", "-") for a in added)
