"""Registers the sandbox backends (entry point ``sandboxes`` in group ``sevro``)."""

from __future__ import annotations

from collections.abc import Callable

from sevro_core.api import Sandbox, hookimpl
from sevro_sandbox.bwrap import BubblewrapSandbox
from sevro_sandbox.sandbox_exec import SandboxExecSandbox


@hookimpl
def sevro_register_sandboxes(register: Callable[[Sandbox], None]) -> None:
    register(BubblewrapSandbox())
    register(SandboxExecSandbox())
