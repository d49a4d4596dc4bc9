"""The ``sevro-extensions`` plugin: the case source ``sevro.extension`` that
``sevro run --extension-command-file`` opens (docs/extensions.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sevro_core.api import hookimpl
from sevro_extensions.lifecycle import ExtensionCaseSource


@hookimpl
def sevro_register_case_sources(register: Callable[[Any], None]) -> None:
    register(ExtensionCaseSource())
