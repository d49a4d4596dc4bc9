"""What an extension's ``prepare`` declares for the host: plugins and an explicit skill invocation.

The extension protocol's ``prepare`` may ask a host to load a Codex plugin marketplace or Claude
plugin directories from the trial's workspace, and to invoke one skill explicitly. The core
carries the declarations without naming any host; a host that cannot honour one refuses it
before anything runs (:func:`sevro_core.plugin.protocols.prepared_host`).
"""

from __future__ import annotations

from attrs import frozen

from sevro_core.formats.jsonio import JsonValue


@frozen
class CodexMarketplace:
    """A Codex plugin marketplace under ``artifact_root`` (workspace-relative)."""

    artifact_root: str
    marketplace_name: str
    plugin_names: tuple[str, ...]

    def record(self) -> dict[str, JsonValue]:
        """The declaration as evidence and a host's redacted configuration record it."""
        return {
            "artifactRoot": self.artifact_root,
            "marketplaceName": self.marketplace_name,
            "pluginNames": list(self.plugin_names),
        }


@frozen
class SkillInvocation:
    """One explicit skill invocation; ``kind`` is ``codex-plugin``, ``codex-repository``,
    ``claude-repository`` or ``claude-plugin``."""

    kind: str
    plugin_name: str | None
    skill_name: str

    def record(self) -> dict[str, JsonValue]:
        """The invocation as evidence and a host's redacted configuration record it."""
        return {"kind": self.kind, "pluginName": self.plugin_name, "skillName": self.skill_name}


@frozen
class HostPreparation:
    """The declarations a host must honour for a prepared case (empty: none)."""

    codex_marketplace: CodexMarketplace | None = None
    claude_plugin_dirs: tuple[str, ...] = ()
    """Workspace-relative plugin roots."""
    invocation: SkillInvocation | None = None


NO_HOST_PREPARATION = HostPreparation()
