"""Preparation declarations a case source makes for the Codex host (the extension protocol's
``codexMarketplace`` and its ``$skill`` / ``$plugin:skill`` invocations).

Checked once per run, before anything runs (``InvocationError``, exit 64, for one the host cannot
honour). The declared marketplace is written into each trial's workspace by the preparation
before the host starts, so it is read there at trial time, before the model is asked anything,
with the same checks as a configured one (bounded, no link, the manifest listing exactly the
declared plugins under the declared name), then installed into the trial's private
``CODEX_HOME``. Codex loads the installed copy, so the candidate, which runs only afterwards,
cannot change what was installed by editing the workspace's copy.
"""

from __future__ import annotations

from pathlib import Path

from sevro_core.api import (
    NO_HOST_PREPARATION,
    HostFailure,
    HostPreparation,
    InvocationError,
    JsonValue,
)
from sevro_hosts_codex.plugins import (
    NAME_RE,
    Marketplace,
    MarketplaceSetting,
    Refused,
    read_marketplace,
)

PLUGIN_MARKETPLACE_CAPABILITY = "sevro.codex.plugin-marketplace"
"""The host installs a declared local plugin marketplace into each trial's private home."""
CODEX_KINDS = ("codex-plugin", "codex-repository")


def check(preparation: HostPreparation, *, judge: bool, configured: Marketplace | None) -> None:
    """Refuse (exit 64) what the Codex host cannot honour: Claude declarations, a judge, a
    second marketplace beside the configured one, a malformed root or name, or a
    ``$plugin:skill`` invocation naming no plugin of the declared marketplace."""
    if preparation == NO_HOST_PREPARATION:
        return
    if judge:
        raise InvocationError("a Codex judge takes no preparation declarations")
    if preparation.claude_plugin_dirs:
        raise InvocationError("the Codex host cannot honour claudePluginDirs")
    invocation, market = preparation.invocation, preparation.codex_marketplace
    if invocation is not None and invocation.kind not in CODEX_KINDS:
        raise InvocationError(f"the Codex host cannot honour a {invocation.kind} skill invocation")
    if market is not None:
        if configured is not None:
            raise InvocationError(
                "codexMarketplace is declared, but the host configuration already names a "
                "plugin marketplace: a trial installs one; remove marketplace from --host-config"
            )
        parts = market.artifact_root.split("/")
        if market.artifact_root.startswith("/") or any(p in ("", ".", "..") for p in parts):
            raise InvocationError(
                f"codexMarketplace artifactRoot {market.artifact_root!r} must be a relative "
                "directory inside the workspace (no '.', '..' or empty part)"
            )
        names = (market.marketplace_name, *market.plugin_names)
        bad = [n for n in names if not NAME_RE.match(n)]
        if bad or not market.plugin_names or len(set(market.plugin_names)) != len(names) - 1:
            raise InvocationError(
                f"codexMarketplace names must be unique and match {NAME_RE.pattern}: {names}"
            )
    if invocation is not None and invocation.kind == "codex-plugin":
        plugins: tuple[str, ...] = ()
        if market is not None:
            plugins = market.plugin_names
        elif configured is not None:
            plugins = tuple(p.name for p in configured.plugins)
        if invocation.plugin_name not in plugins:
            raise InvocationError(
                f"the $plugin:skill invocation names plugin {invocation.plugin_name!r}, which no "
                "declared or configured Codex plugin marketplace installs"
            )


def identity(preparation: HostPreparation) -> JsonValue:
    """The declarations as the redacted configuration records them (so they enter identity)."""
    found: dict[str, JsonValue] = {}
    market = preparation.codex_marketplace
    if market is not None:
        found["codexMarketplace"] = market.record()
    invocation = preparation.invocation
    if invocation is not None:
        found["invocation"] = invocation.record()
    return found


def read_declared(preparation: HostPreparation, workspace: Path) -> Marketplace | None:
    """The declared marketplace as the trial's workspace holds it, verified (``HostFailure``
    names the problem: the trial fails before the model is asked anything)."""
    market = preparation.codex_marketplace
    if market is None:
        return None
    root = workspace.joinpath(*market.artifact_root.split("/"))
    setting = MarketplaceSetting(root, market.plugin_names)
    try:
        verified = read_marketplace(setting)[0]
    except Refused as exc:
        raise HostFailure(
            f"declared Codex plugin marketplace {market.artifact_root}: {exc}"
        ) from None
    if verified.name != market.marketplace_name:
        raise HostFailure(
            f"declared Codex plugin marketplace {market.artifact_root} is named "
            f"{verified.name!r}, not {market.marketplace_name!r}"
        )
    return verified
