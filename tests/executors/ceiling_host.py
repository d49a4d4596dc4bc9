"""acme.host.ceiling: an "agent" that replies with the per-call spend ceiling sevro gave it
(``HostRequest.max_cost_usd``), so a test sees what reached the host on a remote worker. Its
``--acme-token`` is a secret setting: a remote executor must never send it to a worker.

Loaded with ``--plugin``; it imports only ``sevro_core.api``.
"""

from __future__ import annotations

from collections.abc import Callable

from sevro_core.api import (
    Case,
    Host,
    HostOptions,
    HostRequest,
    HostResult,
    HostSetting,
    JsonValue,
    Route,
    hookimpl,
)

TOKEN = HostSetting("acme.token", "--acme-token", "A token the host reads.", "string", secret=True)


class ConfiguredCeilingHost:
    capabilities: frozenset[str] = frozenset()
    route = Route(host="acme.host.ceiling", model="none", effort="none")

    def redacted_configuration(self) -> JsonValue:
        return {}

    def check_case(self, case: Case) -> None:
        pass

    def run(self, request: HostRequest) -> HostResult:
        reply = f"ceiling {request.max_cost_usd}"
        return HostResult(final_message=reply, complete=True, turns_completed=len(request.prompts))


class CeilingHost:
    id = "acme.host.ceiling"
    version = "1.0.0"
    capabilities: frozenset[str] = frozenset()
    requires: frozenset[str] = frozenset()
    settings = (TOKEN,)

    def configure(self, options: HostOptions) -> ConfiguredCeilingHost:
        return ConfiguredCeilingHost()


@hookimpl
def sevro_register_hosts(register: Callable[[Host], None]) -> None:
    register(CeilingHost())
