"""The Claude host's settings, the per-trial ``--settings`` document and the outer sandbox.

Isolation has two layers, both generated here. The outer one is a bubblewrap sandbox around
the whole Claude Code process: only runtime trees, the Claude package, the workspace and the
trial's private root are mounted, so no tool (Read, Edit, Write or Bash) can reach a protected
root at all. The inner one is Claude Code's own Bash sandbox plus permission rules, which keep
the private configuration directory (credentials, transcripts) away from the agent's tools and
turn the network off for its commands.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from attrs import frozen

from sevro_core.api import (
    HOOK_EVENTS,
    AgentCliConfig,
    ConfigurationError,
    CredentialFlags,
    HostFailure,
    inside,
)
from sevro_hosts_claude.credentials import Discovery, discover, with_discovery
from sevro_hosts_claude.limits import MAX_PLUGIN_DIRS

CONFIG_FORMAT = "sevro.claude-host.v1"
TOOLS = ("Bash", "Read", "Edit", "Skill", "Agent")
"""The allow-list: every tool the agent gets; nothing else is offered or approved (Sevro's
``--tools Bash,Read,Edit,Skill,Agent``). ``Agent`` starts a child session with the same tools,
in the same sandboxes and settings (``sevro.claude.nested-skills``)."""
WRITE_TOOL = "Write"
"""Offered (and allowed) only with ``--claude-allow-write``: Sevro's Claude route never exposes
it, so a case run on both gets the same tools unless the operator asks for more."""
ALLOW_WRITE = "claude.allowWrite"
PROJECT_SETTINGS = "claude.projectSettings"
PROJECT_SETTINGS_FILE = ".claude/settings.json"
"""The fixture's project settings, which Claude Code loads with ``--setting-sources project``
(the local ``settings.local.json`` is another source, never loaded)."""
PERMISSION_MODE = "dontAsk"
"""Unattended without bypassing permissions: anything not allow-listed is denied, never asked.
``bypassPermissions`` is refused by Claude Code as root, and sevro does not claim a sandbox
(``IS_SANDBOX``) to get around that."""
JUDGE_FLAGS = (
    "--tools",
    "",
    "--setting-sources",
    "",
    "--safe-mode",
    "--disable-slash-commands",
    "--no-session-persistence",
)
"""What a judge's Claude Code runs with besides the candidate's fixed flags: no built-in tool
(``--tools ""``), no user, project or local settings, no CLAUDE.md, skills, plugins, hooks,
agents or commands (``--safe-mode``, ``--disable-slash-commands``), no transcript kept. MCP
stays ``--strict-mcp-config`` with no servers and the permission mode ``dontAsk`` with nothing
allowed, so anything the model asks for is denied, never run."""
SANDBOX_TMP = Path("/tmp/sevro-tmp")  # noqa: S108 (a mount point inside the outer sandbox)
"""Where the trial's private temp directory appears inside the outer sandbox (its ``TMPDIR``).

Claude Code's own sandbox makes its bridge sockets (``claude-http-<16 hex>.sock``) directly
in the temp directory, and a Unix socket's path holds at most ``MAX_SOCKET_PATH_BYTES``
(``limits``): under a deep private root every Bash call would fail with "Failed to create
bridge sockets". Bound here, the directory keeps a short path however deep the private root is,
stays on disk in that root (removed with the trial) and is seen by no other trial (each has its
own mount namespace)."""
SOCKET_NAME_BYTES = len("/claude-socks-0123456789abcdef.sock")
"""The longest name Claude Code gives a bridge socket, with its separator."""
RUNTIME_TREES = ("/usr", "/etc", "/opt")
RUNTIME_LINKS = ("/bin", "/sbin", "/lib", "/lib64", "/lib32")
_TOP_KEYS = {
    "format",
    "baseUrl",
    "turnTimeoutSeconds",
    "stallTimeoutSeconds",
    "maxRetries",
    "pluginDirs",
}


@frozen(kw_only=True)
class ClaudeConfig(AgentCliConfig):
    base_url: str | None
    max_retries: int | None
    allow_write: bool = False
    project_settings: bool = False
    plugin_dirs: tuple[str, ...] = ()
    """Workspace-relative plugin directories, each passed as ``--plugin-dir`` (Sevro's
    ``claudePluginDirs``)."""
    discovery: Discovery | None = None
    """The credential route found without a credential flag (``credentials``)."""

    @property
    def tools(self) -> tuple[str, ...]:
        """The candidate's tools: ``Write`` only when the operator asked for it."""
        return (*TOOLS, WRITE_TOOL) if self.allow_write else TOOLS


CREDENTIALS = CredentialFlags.for_host(
    "claude",
    "credentialFile",
    login_fix="run `claude` login",
    none_fix=(
        "export ANTHROPIC_API_KEY or CLAUDE_CODE_OAUTH_TOKEN, log in with `claude` (a saved "
        ".credentials.json), or pass --claude-credential-file FILE"
    ),
)


def parse(config: Mapping[str, Any] | None, settings: Mapping[str, str]) -> ClaudeConfig:
    """Validate ``--host-config`` and the Claude flags (``ConfigurationError`` with a pointer)."""
    config = dict(config or {"format": CONFIG_FORMAT})
    if config.get("format") != CONFIG_FORMAT:
        raise ConfigurationError(f"'format' must be {CONFIG_FORMAT!r}", "/format")
    unknown = sorted(set(config) - _TOP_KEYS)
    if unknown:
        raise ConfigurationError(f"unknown key {unknown[0]!r}", "")
    url = config.get("baseUrl")
    if url is not None and (not isinstance(url, str) or not re.match(r"^https?://[^\s]+$", url)):
        raise ConfigurationError("must be an http(s) URL", "/baseUrl")
    common = AgentCliConfig.common(config, settings, "claude", CREDENTIALS)
    found = discover(common["credentials"], os.environ)
    common["credentials"] = with_discovery(common["credentials"], found)
    retries = config.get("maxRetries")
    if retries is not None and (
        isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= 100
    ):
        raise ConfigurationError("must be an integer between 0 and 100", "/maxRetries")
    return ClaudeConfig(
        base_url=url,
        max_retries=retries,
        plugin_dirs=plugin_dirs(config.get("pluginDirs")),
        allow_write=settings.get(ALLOW_WRITE) == "true",
        project_settings=settings.get(PROJECT_SETTINGS) == "true",
        discovery=found,
        **common,
    )


def plugin_dirs(value: Any) -> tuple[str, ...]:
    """``pluginDirs``: 1 to ``MAX_PLUGIN_DIRS`` unique, non-overlapping workspace-relative
    directories (no ``.``, ``..`` or empty part), as Sevro requires of ``claudePluginDirs``."""
    if value is None:
        return ()
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_PLUGIN_DIRS:
        raise ConfigurationError(
            f"must be a list of 1 to {MAX_PLUGIN_DIRS} directories", "/pluginDirs"
        )
    dirs: list[str] = []
    for index, item in enumerate(value):
        parts = item.split("/") if isinstance(item, str) else []
        if not parts or len(item) > 256 or any(p in ("", ".", "..") for p in parts):
            raise ConfigurationError(
                "must be a relative path inside the workspace (no '.', '..' or empty part)",
                f"/pluginDirs/{index}",
            )
        for earlier in dirs:
            if item == earlier or item.startswith(earlier + "/") or earlier.startswith(item + "/"):
                raise ConfigurationError(
                    f"overlaps {earlier!r}: plugin directories are unique and disjoint",
                    f"/pluginDirs/{index}",
                )
        dirs.append(item)
    return tuple(dirs)


@frozen
class TrialLayout:
    """Where one trial's private state lives (all under the engine's private root)."""

    root: Path
    config_dir: Path  # CLAUDE_CONFIG_DIR: settings, credentials, transcripts; denied to tools
    home: Path
    tmp: Path

    @classmethod
    def under(cls, root: Path) -> TrialLayout:
        return cls(root, root / "claude-config", root / "home", root / "tmp")

    @property
    def api_key_file(self) -> Path:
        return self.config_dir / "api-key"

    @property
    def settings_file(self) -> Path:
        return self.config_dir / "sevro-settings.json"


def _absolute_rule(tool: str, path: Path) -> str:
    return f"{tool}(/{path}/**)"  # "//abs" is Claude Code's absolute-path rule syntax


def render_settings(
    layout: TrialLayout,
    workspace: Path,
    *,
    api_key: bool,
    judge: bool = False,
    writable: Sequence[Path] = (),
    hook: str | None = None,
    tools: Sequence[str] = TOOLS,
    stop_hook: Mapping[str, Any] | None = None,
) -> str:
    """The trial's ``--settings``: allow-list, hooks, the Bash sandbox, denied config dir.

    A judge's allows nothing and lets the sandbox write only its temp directory. ``writable``
    adds the runtime policy's writable roots (the role's runtime root, its shared caches).
    ``hook`` is the only hook: a passive command after every tool call, successful or failed
    (sevro's skill-activation collector); without one, hooks are disabled. ``stop_hook`` adds
    sevro's Stop hook under ``hooks.nativeGoal`` (whose ``/goal`` needs hooks enabled)."""
    secret_dir = layout.config_dir
    allowed = [str(SANDBOX_TMP)] if judge else [str(workspace), str(SANDBOX_TMP)]
    allowed += [str(path) for path in writable]
    settings: dict[str, Any] = {
        "permissions": {
            "defaultMode": PERMISSION_MODE,
            "allow": [] if judge else list(tools),
            "deny": [_absolute_rule(t, secret_dir) for t in ("Read", "Edit", "Write")],
            "disableBypassPermissionsMode": "disable",
        },
        "disableAllHooks": hook is None,
        "hooks": {**_hooks(hook), **(stop_hook or {})},
        "enableAllProjectMcpServers": False,
        "includeCoAuthoredBy": False,
        "cleanupPeriodDays": 1,
        "sandbox": {
            "enabled": True,
            # Inside sevro's outer sandbox Claude's bubblewrap cannot mount a fresh /proc; this
            # mode skips that. The outer sandbox is the filesystem boundary either way.
            "enableWeakerNestedSandbox": True,
            "failIfUnavailable": True,
            "allowUnsandboxedCommands": False,
            "autoAllowBashIfSandboxed": True,
            "filesystem": {
                "allowWrite": allowed,
                "denyRead": [str(secret_dir)],
            },
            "network": {"allowedDomains": []},
        },
    }
    if api_key:
        settings["apiKeyHelper"] = f"cat {shlex.quote(str(layout.api_key_file))}"
    return json.dumps(settings, indent=2) + "\n"


def _hooks(command: str | None) -> dict[str, Any]:
    if command is None:
        return {}
    entry = [{"matcher": "*", "hooks": [{"type": "command", "command": command, "timeout": 30}]}]
    return {event: entry for event in HOOK_EVENTS}


def runtime_mounts() -> list[str]:
    """bubblewrap arguments showing the system's runtime trees read-only, and its merged-``/usr``
    links as the links they are, so any command a sandbox runs finds its interpreter."""
    argv: list[str] = []
    for tree in RUNTIME_TREES:
        if os.path.isdir(tree):
            argv += ["--ro-bind", tree, tree]
    for link in RUNTIME_LINKS:
        if os.path.islink(link):
            argv += ["--symlink", os.readlink(link), link]
        elif os.path.isdir(link):
            argv += ["--ro-bind", link, link]
    return argv


def sandbox_argv(
    bwrap: str,
    *,
    workspace: Path,
    layout: TrialLayout,
    executable_tree: Path,
    extra_read: Sequence[Path],
    hidden: Sequence[Path],
    judge: bool = False,
    extra_write: Sequence[Path] = (),
) -> list[str]:
    """bubblewrap arguments that run a command seeing only what a trial needs.

    ``hidden`` are protected roots lying inside a mounted tree: covered by an empty tmpfs (a
    directory) or ``/dev/null`` (a file). A judge's workspace is mounted read-only: only its
    private root is writable. The private temp directory is bound again at ``SANDBOX_TMP``.
    """
    _check_sandbox_tmp((workspace, layout.root, executable_tree, *extra_read, *extra_write))
    argv = [bwrap, "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]  # noqa: S108 (a fresh tmpfs)
    argv += runtime_mounts()
    for extra in (executable_tree, *extra_read):
        argv += ["--ro-bind", str(extra), str(extra)]
    argv += ["--bind", str(layout.root), str(layout.root)]
    for extra in extra_write:  # the runtime's shared caches
        argv += ["--bind", str(extra), str(extra)]
    argv += ["--ro-bind" if judge else "--bind", str(workspace), str(workspace)]
    argv += ["--bind", str(layout.tmp), str(SANDBOX_TMP)]
    for path in hidden:
        if path.is_dir():
            argv += ["--tmpfs", str(path)]
        else:
            argv += ["--ro-bind", "/dev/null", str(path)]
    argv += ["--chdir", str(workspace), "--"]
    return argv


def _check_sandbox_tmp(mounted: Sequence[Path]) -> None:
    """``SANDBOX_TMP`` must neither cover nor sit in a mounted tree (bubblewrap would hide one
    or create its mount point in the other)."""
    for path in mounted:
        if inside(path, SANDBOX_TMP) or inside(SANDBOX_TMP, path):
            raise HostFailure(
                f"{path} overlaps {SANDBOX_TMP}, where the Claude host shows each trial its "
                "temp directory: choose another --workspace-root"
            )
