"""Preparation declarations a case source makes for the Claude host (the extension protocol's
``claudePluginDirs`` and its ``/skill`` / ``/plugin:skill`` invocations).

Checked once per run, before anything runs (``InvocationError``, exit 64, for one the host cannot
honour). Declared plugin roots are written into each trial's workspace by the preparation before
the host starts and join the configured ``pluginDirs`` (each a ``--plugin-dir``, with the same
checks before every turn); a repository invocation needs ``--claude-project-settings``, as Sevro
refuses repository dispatch without it.
"""

from __future__ import annotations

from sevro_core.api import (
    NO_HOST_PREPARATION,
    ConfigurationError,
    HostPreparation,
    InvocationError,
    JsonValue,
)
from sevro_hosts_claude.configuration import plugin_dirs

CLAUDE_KINDS = ("claude-repository", "claude-plugin")


def merged_plugin_dirs(
    preparation: HostPreparation,
    *,
    judge: bool,
    configured: tuple[str, ...],
    project_settings: bool,
) -> tuple[str, ...]:
    """The configured plugin directories with the declared ones, or ``InvocationError`` for a
    declaration the Claude host cannot honour."""
    if preparation == NO_HOST_PREPARATION:
        return configured
    if judge:
        raise InvocationError("a Claude judge takes no preparation declarations")
    if preparation.codex_marketplace is not None:
        raise InvocationError("the Claude host cannot honour codexMarketplace")
    invocation = preparation.invocation
    if invocation is not None and invocation.kind not in CLAUDE_KINDS:
        raise InvocationError(f"the Claude host cannot honour a {invocation.kind} skill invocation")
    if invocation is not None and invocation.kind == "claude-repository" and not project_settings:
        raise InvocationError(
            f"the repository skill invocation /{invocation.skill_name} needs "
            "--claude-project-settings: without it the Claude host does not dispatch "
            "repository skills"
        )
    try:
        merged = plugin_dirs([*configured, *preparation.claude_plugin_dirs] or None)
    except ConfigurationError as exc:
        raise InvocationError(f"claudePluginDirs: {exc.message}") from None
    if invocation is not None and invocation.kind == "claude-plugin" and not merged:
        raise InvocationError(
            f"the plugin skill invocation /{invocation.plugin_name}:{invocation.skill_name} "
            "names a plugin, but no claudePluginDirs or pluginDirs are declared"
        )
    return merged


def identity(preparation: HostPreparation) -> JsonValue:
    """The declarations as the redacted configuration records them (so they enter identity)."""
    found: dict[str, JsonValue] = {}
    if preparation.claude_plugin_dirs:
        found["claudePluginDirs"] = list(preparation.claude_plugin_dirs)
    invocation = preparation.invocation
    if invocation is not None:
        found["invocation"] = invocation.record()
    return found
