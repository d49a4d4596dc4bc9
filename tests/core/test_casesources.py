"""Case sources in the core: ``prepared_host`` and the run without ``sevro-extensions``."""

from __future__ import annotations

from typing import Any

import pytest
from attrs import evolve, frozen

from sevro_core.api import (
    NO_HOST_PREPARATION,
    CodexMarketplace,
    HostPreparation,
    InvocationError,
    Route,
    SkillInvocation,
    prepared_host,
)
from sevro_core.testing import SevroProject

ROUTE = Route(host="acme.host.plain", model="m", effort="e")
MARKETPLACE = HostPreparation(codex_marketplace=CodexMarketplace("plugins", "acme", ("tools",)))


@frozen
class _Plain:
    route: Route = ROUTE


@frozen
class _Preparing(_Plain):
    preparation: HostPreparation = NO_HOST_PREPARATION

    def prepared(self, preparation: HostPreparation) -> Any:
        return evolve(self, preparation=preparation)


def test_no_declaration_leaves_any_host_unchanged() -> None:
    host = _Plain()
    assert prepared_host(host, NO_HOST_PREPARATION) is host  # type: ignore[arg-type]


def test_a_host_without_prepared_cannot_honour_a_declaration() -> None:
    with pytest.raises(
        InvocationError,
        match=r"host acme\.host\.plain cannot honour the case's preparation declarations",
    ):
        prepared_host(_Plain(), MARKETPLACE)  # type: ignore[arg-type]
    invocation = HostPreparation(invocation=SkillInvocation("claude-plugin", "p", "s"))
    with pytest.raises(InvocationError, match="explicit skill invocation"):
        prepared_host(_Plain(), invocation)  # type: ignore[arg-type]


def test_a_host_with_prepared_is_asked() -> None:
    prepared = prepared_host(_Preparing(), MARKETPLACE)  # type: ignore[arg-type]
    assert prepared.preparation == MARKETPLACE  # type: ignore[attr-defined]


def test_an_extension_run_without_sevro_extensions_exits_64(sevro_project: SevroProject) -> None:
    command = sevro_project.write_json("command.json", ["/bin/true"])
    host = sevro_project.script(default=[[{"reply": {"text": "hello"}}]])
    result = sevro_project.run(
        *("--host", "scripted", "--host-config", host),
        *("--extension-command-file", command, "--extension-source-file", command),
        *("--case-id", "greets", "--sandbox", "none"),
        env={"SEVRO_LOAD_PLUGINS": "sevro-core"},
    )
    assert result.exit_code == 64, result.stderr
    assert "install sevro-extensions" in result.stderr
    # control: with every plugin installed the same flags reach the extension (which is
    # /bin/true and answers nothing: an extension failure, exit 70)
    other = sevro_project.run(
        *("--host", "scripted", "--host-config", host),
        *("--extension-command-file", command, "--extension-source-file", command),
        *("--case-id", "greets", "--sandbox", "none"),
    )
    assert other.exit_code == 70, other.stderr
    assert "extension describe failed" in other.stderr
