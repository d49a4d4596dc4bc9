"""The scripted host honours no preparation declarations: its script, not a plugin or an
explicit invocation, decides what a trial reads, so it refuses any (exit 64) and keeps an empty
preparation as it is (the control)."""

from __future__ import annotations

import pytest

from sevro_core.api import (
    NO_HOST_PREPARATION,
    CodexMarketplace,
    HostPreparation,
    InvocationError,
    SkillInvocation,
)
from sevro_core.builtins.scripted_host import ConfiguredScriptedHost, ScriptedHost
from sevro_core.plugin.protocols import HostOptions

SCRIPT = {"format": "sevro.scripted-host.v1", "default": {"turns": [[{"reply": {"text": "x"}}]]}}


def configured() -> ConfiguredScriptedHost:
    host = ScriptedHost().configure(HostOptions(config=SCRIPT))
    assert isinstance(host, ConfiguredScriptedHost)
    return host


def test_an_empty_preparation_keeps_the_scripted_host() -> None:
    host = configured()
    assert host.prepared(NO_HOST_PREPARATION) is host


@pytest.mark.parametrize(
    "preparation",
    [
        HostPreparation(invocation=SkillInvocation("codex-repository", None, "tidy")),
        HostPreparation(claude_plugin_dirs=("plugins/acme",)),
        HostPreparation(codex_marketplace=CodexMarketplace("market", "local", ("demo",))),
    ],
)
def test_any_declaration_is_refused(preparation: HostPreparation) -> None:
    with pytest.raises(InvocationError, match="honours no preparation declarations"):
        configured().prepared(preparation)
