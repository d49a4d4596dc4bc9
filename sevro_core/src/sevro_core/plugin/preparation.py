"""What a case's preparation asks of the host: plugins to load and a skill to invoke.

An extension's ``prepare`` answer may declare a Codex plugin marketplace, Claude plugin
directories and one explicit skill invocation. The engine checks them against the negotiated
and advertised capabilities and hands them to the host as a :class:`HostPreparation`, once per
run; a host that cannot honour one refuses the run (exit 64) instead of silently ignoring it.
"""

from __future__ import annotations

from attrs import frozen


@frozen
class CodexMarketplace:
    """A Codex plugin marketplace written into the workspace by preparation artifacts."""

    artifact_root: str
    """Workspace-relative directory holding the marketplace and its plugins."""
    marketplace_name: str
    plugin_names: tuple[str, ...]


@frozen
class SkillInvocation:
    """The one skill the prompt invokes explicitly, and how the host spells it."""

    kind: str
    """``codex-plugin``, ``codex-repository``, ``claude-repository`` or ``claude-plugin``."""
    plugin_name: str | None
    skill_name: str


@frozen
class HostPreparation:
    """The host-facing declarations of one case's preparation."""

    codex_marketplace: CodexMarketplace | None = None
    claude_plugin_dirs: tuple[str, ...] = ()
    """Workspace-relative plugin roots Claude Code loads with ``--plugin-dir``."""
    invocation: SkillInvocation | None = None


NO_HOST_PREPARATION = HostPreparation()
"""No plugins and no explicit invocation: what a case without an extension gets."""
