"""The inline fixture (``{"files": {path: content}}``): files written into a fresh workspace."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from attrs import frozen

from sevro_core.api import (
    FILES_CAPABILITY,
    NO_FIXTURE_CONTEXT,
    ConfigurationError,
    FixtureContext,
    FixtureProvider,
    JsonValue,
    MaterialisedFixture,
    check_collisions,
    check_relative_path,
    describe_first_error,
    hookimpl,
    join_pointer,
    limits,
    validator,
    write_confined,
)


@frozen
class InlineFixture:
    files: tuple[tuple[str, str], ...]
    capabilities: frozenset[str] = frozenset({FILES_CAPABILITY})

    def identity(self) -> JsonValue:
        return {"files": dict(self.files)}

    def materialise(self, workspace: Path) -> MaterialisedFixture:
        for path, content in self.files:
            write_confined(workspace, path, content.encode("utf-8"))
        return MaterialisedFixture()


class InlineFixtureProvider:
    """Owns fixtures without ``kind`` or ``sourceRef`` (and ``kind: "inline"``)."""

    id = "sevro.fixture.inline"
    version = "1.0.0"
    capabilities = frozenset({FILES_CAPABILITY})
    requires: frozenset[str] = frozenset()

    def accepts(self, declaration: Mapping[str, JsonValue]) -> bool:
        kind = declaration.get("kind")
        return (kind is None and "sourceRef" not in declaration) or kind == "inline"

    def compile(
        self,
        declaration: Mapping[str, JsonValue],
        context: FixtureContext = NO_FIXTURE_CONTEXT,
    ) -> InlineFixture:
        found = describe_first_error(validator("fixture-inline.v1").iter_errors(declaration))
        if found is not None:
            raise ConfigurationError(found[1], found[0])
        files = declaration["files"]
        assert isinstance(files, dict)
        total = 0
        for path, content in files.items():
            check_relative_path(path, join_pointer("/files", path))
            total += len(path.encode()) + len(content.encode("utf-8"))
        if total > limits.MAX_FIXTURE_BYTES:
            raise ConfigurationError(
                f"files exceed {limits.MAX_FIXTURE_BYTES} bytes in total", "/files"
            )
        check_collisions(files, "/files")
        return InlineFixture(files=tuple(sorted(files.items())))


_PROVIDER: FixtureProvider = InlineFixtureProvider()


@hookimpl
def sevro_register_fixtures(register: Callable[[FixtureProvider], None]) -> None:
    register(_PROVIDER)
