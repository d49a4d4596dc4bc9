"""The inline fixture (``{"files": {path: content}}``): files written into a fresh workspace."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

from attrs import frozen

from sevro_core.errors import ConfigurationError, join_pointer
from sevro_core.fixtures.paths import check_collisions, check_relative_path
from sevro_core.formats.fileio import write_all
from sevro_core.formats.jsonio import JsonValue
from sevro_core.formats.schemas import describe_first_error, validator
from sevro_core.limits import MAX_FIXTURE_BYTES
from sevro_core.plugin.hookspecs import hookimpl
from sevro_core.plugin.protocols import (
    NO_FIXTURE_CONTEXT,
    FixtureContext,
    FixtureProvider,
    MaterialisedFixture,
)

_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


@frozen
class InlineFixture:
    files: tuple[tuple[str, str], ...]
    capabilities: frozenset[str] = frozenset({"sevro.fixture.files"})

    def identity(self) -> JsonValue:
        return {"files": dict(self.files)}

    def materialise(self, workspace: Path) -> MaterialisedFixture:
        made: set[str] = set()
        for path, content in self.files:
            parts = path.split("/")
            current = workspace
            for index, part in enumerate(parts[:-1]):
                current = current / part
                key = "/".join(parts[: index + 1])
                if key not in made:
                    os.mkdir(current, 0o700)
                    made.add(key)
            fd = os.open(current / parts[-1], _FILE_FLAGS, 0o600)
            try:
                write_all(fd, content.encode("utf-8"))
            finally:
                os.close(fd)
        return MaterialisedFixture()


class InlineFixtureProvider:
    """Owns fixtures without ``kind`` or ``sourceRef`` (and ``kind: "inline"``)."""

    id = "sevro.fixture.inline"
    version = "1.0.0"
    capabilities = frozenset({"sevro.fixture.files"})
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
        if total > MAX_FIXTURE_BYTES:
            raise ConfigurationError(f"files exceed {MAX_FIXTURE_BYTES} bytes in total", "/files")
        check_collisions(files, "/files")
        return InlineFixture(files=tuple(sorted(files.items())))


_PROVIDER: FixtureProvider = InlineFixtureProvider()


@hookimpl
def sevro_register_fixtures(register: Callable[[FixtureProvider], None]) -> None:
    register(_PROVIDER)
