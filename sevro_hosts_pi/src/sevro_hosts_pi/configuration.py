"""The pi host's settings, the per-trial agent directory (``models.json``, ``settings.json``)
and the sandbox.

pi has no sandbox of its own: its tools (read, bash, edit, write, ...) and any extension run in
pi's process and environment. So the whole pi process runs in sevro's bubblewrap sandbox with
no network (``--unshare-net``): only runtime trees, node, the ``node_modules`` tree, the
workspace and the trial's private root are mounted, and the model is reachable only through
sevro's bridge (a loopback listener in the sandbox piped to a Unix socket outside, where the
credential is added). sevro's own files (the bridge preload, the observer, pi's configuration
and the profile's extension bundles) are mounted read-only on top of the writable private root.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from attrs import frozen

from sevro_core.api import AgentCliConfig, ConfigurationError, HostFailure, inside
from sevro_hosts_pi.credentials import CREDENTIALS, DUMMY_API_KEY
from sevro_hosts_pi.limits import MAX_TOOL_NAME_CHARS, MAX_TOOLS

CONFIG_FORMAT = "sevro.pi-host.v1"
NODE = "pi.node"
API = "pi.api"
BASE_URL = "pi.baseUrl"
APIS = ("openai-responses", "anthropic-messages", "openai-completions")
"""The wire APIs sevro drives pi with (pi's ``models.json`` ``api``)."""
DEFAULT_UPSTREAMS = {
    "openai-responses": "https://api.openai.com/v1",
    "openai-completions": "https://api.openai.com/v1",
    "anthropic-messages": "https://api.anthropic.com",
}
PROVIDER = "sevro"
"""The one provider in the trial's ``models.json``: the model behind sevro's bridge."""
BUILTIN_TOOLS = ("read", "bash", "edit", "write", "grep", "find", "ls")
"""pi 0.73.1's built-in tools."""
DEFAULT_TOOLS = ("read", "bash", "edit", "write")
"""What pi offers without ``--tools`` (its defaults); sevro passes them explicitly."""
FIXED_FLAGS = ("--no-extensions", "--no-prompt-templates", "--no-themes")
"""Always passed: the workspace's ``.pi/extensions``, prompt templates and themes (code and
configuration the fixture or the agent could plant) never load; only sevro's ``-e`` files do.
Skill discovery stays on (the workspace's ``.agents/skills`` is how skills are mounted)."""
THINKING_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh")
"""pi 0.73.1's ``--thinking`` levels: sevro's ``--effort`` must be one of them."""
QUIET_ENV = {"PI_OFFLINE": "1", "PI_TELEMETRY": "0", "PI_SKIP_VERSION_CHECK": "1"}
SANDBOX_BRIDGE_DIR = Path("/tmp/sevro-pi-bridge")  # noqa: S108 (a mount point in the sandbox)
"""Where the bridge's socket directory appears inside the sandbox (its ``/tmp`` is a tmpfs)."""
RUNTIME_TREES = ("/usr", "/etc", "/opt")
RUNTIME_LINKS = ("/bin", "/sbin", "/lib", "/lib64", "/lib32")
_TOOL_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]*$")
_TOP_KEYS = {"format", "turnTimeoutSeconds", "stallTimeoutSeconds"}


@frozen(kw_only=True)
class PiConfig(AgentCliConfig):
    node: str | None
    """``--pi-node``: the Node.js that runs pi (default: ``node`` on PATH)."""
    api: str
    """``--pi-api``: the wire API (``APIS``)."""
    base_url: str
    """``--pi-base-url``: the upstream model endpoint the bridge forwards to."""

    @property
    def upstream_path(self) -> str:
        """The base URL's path, kept in pi's ``baseUrl`` (the bridge swaps only the origin)."""
        return urlsplit(self.base_url).path.rstrip("/")


def parse(config: Mapping[str, Any] | None, settings: Mapping[str, str]) -> PiConfig:
    """Validate ``--host-config`` and the pi flags (``ConfigurationError`` with a pointer)."""
    config = dict(config or {"format": CONFIG_FORMAT})
    if config.get("format") != CONFIG_FORMAT:
        raise ConfigurationError(f"'format' must be {CONFIG_FORMAT!r}", "/format")
    unknown = sorted(set(config) - _TOP_KEYS)
    if unknown:
        raise ConfigurationError(f"unknown key {unknown[0]!r}", "")
    api = settings.get(API, APIS[0])
    if api not in APIS:
        raise ConfigurationError(f"--pi-api must be one of {', '.join(APIS)}, not {api!r}")
    url = settings.get(BASE_URL) or DEFAULT_UPSTREAMS[api]
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query:
        raise ConfigurationError(f"--pi-base-url must be an http(s) URL without a query: {url}")
    if "@" in parts.netloc or parts.fragment:
        # never a credential in a URL: it would enter the identity and the evidence
        raise ConfigurationError("--pi-base-url must carry no user, password or fragment")
    common = AgentCliConfig.common(config, settings, "pi", CREDENTIALS)
    return PiConfig(node=settings.get(NODE), api=api, base_url=url, **common)


def check_tools(declared: Sequence[str] | None, *, bundles: int) -> tuple[str, ...]:
    """The ``--tools`` list for a declared one (None: pi's defaults). pi silently drops a name
    it does not know, so sevro refuses one itself: built-ins only, unless the runtime profile
    loads an extension bundle (which may register the tool; the offered list is verified in
    evidence). ``ValueError`` with the reason."""
    if declared is None:
        return DEFAULT_TOOLS
    if not 1 <= len(declared) <= MAX_TOOLS:
        raise ValueError(f"declare 1 to {MAX_TOOLS} tools, not {len(declared)}")
    seen: set[str] = set()
    for name in declared:
        if len(name) > MAX_TOOL_NAME_CHARS or not _TOOL_RE.match(name):
            raise ValueError(f"tool name {name[:80]!r} is not a pi tool name")
        if name in seen:
            raise ValueError(f"tool {name!r} is declared twice")
        seen.add(name)
        if name not in BUILTIN_TOOLS and bundles == 0:
            raise ValueError(
                f"unknown pi tool {name!r} (built-ins: {', '.join(BUILTIN_TOOLS)}; another "
                "tool needs a runtime extension bundle that registers it)"
            )
    return tuple(declared)


@frozen
class TrialLayout:
    """Where one trial's private state lives (all under the engine's private root)."""

    root: Path
    agent_dir: Path  # PI_CODING_AGENT_DIR: models.json, settings.json, auth.json
    home: Path
    tmp: Path
    sessions: Path
    sevro: Path  # sevro's files for the sandbox: bridge preload, observer (read-only inside)
    bundles: Path  # the runtime profile's extension bundles (read-only inside)
    observe: Path  # the observer's records, one file per turn

    @classmethod
    def under(cls, root: Path) -> TrialLayout:
        return cls(
            root,
            root / "pi-agent",
            root / "home",
            root / "tmp",
            root / "sessions",
            root / "sevro",
            root / "bundles",
            root / "observe",
        )

    @property
    def directories(self) -> tuple[Path, ...]:
        """Every private directory a trial makes (the doctor's probe makes the same)."""
        return (
            self.agent_dir,
            self.home,
            self.tmp,
            self.sessions,
            self.sevro,
            self.bundles,
            self.observe,
        )

    @property
    def session_file(self) -> Path:
        return self.sessions / "session.jsonl"

    @property
    def models_file(self) -> Path:
        return self.agent_dir / "models.json"

    @property
    def settings_file(self) -> Path:
        return self.agent_dir / "settings.json"

    def observe_file(self, turn: int) -> Path:
        return self.observe / f"turn-{turn}.jsonl"


def models_json(config: PiConfig, model: str, port: int, *, reasoning: bool = False) -> str:
    """pi's ``models.json``: one provider, the bridge's loopback address plus the upstream's
    path, a dummy key (the bridge sets the real credential header). ``reasoning`` marks the
    model as one pi sends a thinking level to (``--effort``)."""
    provider = {
        "baseUrl": f"http://127.0.0.1:{port}{config.upstream_path}",
        "api": config.api,
        "apiKey": DUMMY_API_KEY,
        "models": [{"id": model, "reasoning": reasoning}],
    }
    return json.dumps({"providers": {PROVIDER: provider}}, indent=2) + "\n"


def settings_json() -> str:
    """pi's global ``settings.json``: no retries (a failed request fails the turn at once, as
    sevro's other hosts are run), quiet start-up."""
    settings = {
        "retry": {"enabled": False, "maxRetries": 0, "provider": {"maxRetries": 0}},
        "quietStartup": True,
    }
    return json.dumps(settings, indent=2) + "\n"


def runtime_mounts() -> list[str]:
    """The system's runtime trees read-only, and its merged-``/usr`` links as links."""
    import os

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


@frozen
class SandboxMounts:
    """What a pi sandbox shows besides the runtime trees."""

    read: Sequence[Path]
    """Read-only trees: node's prefix, the ``node_modules`` tree, the runtime's read roots."""
    write: Sequence[Path] = ()
    """Writable trees outside the private root (the runtime's shared caches)."""
    hidden: Sequence[Path] = ()
    """Protected roots inside a mounted tree (covered by a tmpfs or ``/dev/null``)."""


def sandbox_argv(
    bwrap: str,
    *,
    workspace: Path,
    layout: TrialLayout,
    bridge_dir: Path,
    mounts: SandboxMounts,
    judge: bool = False,
) -> list[str]:
    """bubblewrap arguments that run pi seeing only what a trial needs, with no network but
    loopback: the private root writable with sevro's files and pi's configuration read-only on
    top, the workspace writable (read-only for a judge), the bridge's socket directory at
    ``SANDBOX_BRIDGE_DIR``."""
    for path in (workspace, layout.root, *mounts.read, *mounts.write):
        if inside(path, SANDBOX_BRIDGE_DIR) or inside(SANDBOX_BRIDGE_DIR, path):
            raise HostFailure(f"{path} overlaps {SANDBOX_BRIDGE_DIR}: choose another root")
    argv = [bwrap, "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    argv += ["--unshare-net", "--new-session"]
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]  # noqa: S108 (a fresh tmpfs)
    argv += runtime_mounts()
    for extra in mounts.read:
        argv += ["--ro-bind", str(extra), str(extra)]
    argv += ["--bind", str(layout.root), str(layout.root)]
    for path in (layout.sevro, layout.bundles, layout.models_file, layout.settings_file):
        argv += ["--ro-bind", str(path), str(path)]
    for extra in mounts.write:
        argv += ["--bind", str(extra), str(extra)]
    argv += ["--ro-bind" if judge else "--bind", str(workspace), str(workspace)]
    argv += ["--bind", str(bridge_dir), str(SANDBOX_BRIDGE_DIR)]
    for path in mounts.hidden:
        if path.is_dir():
            argv += ["--tmpfs", str(path)]
        else:
            argv += ["--ro-bind", "/dev/null", str(path)]
    argv += ["--chdir", str(workspace), "--"]
    return argv
