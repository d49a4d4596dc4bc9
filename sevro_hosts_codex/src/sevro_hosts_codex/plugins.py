"""A local Codex plugin marketplace, installed fresh into each trial's private ``CODEX_HOME``.

The host configuration names a marketplace directory and the plugins to install from it. Before
anything runs the directory is read once (bounded, no link followed or accepted, regular files
only): its ``.agents/plugins/marketplace.json`` must list exactly the named plugins, each with a
local ``./`` source holding a ``.codex-plugin/plugin.json`` of the same name. Its content digest
enters the evaluation identity. Each trial then copies that content into its private state
(refusing a change since), runs ``codex plugin marketplace add <copy>`` and ``codex plugin add
<plugin>@<marketplace>`` against the trial's own ``CODEX_HOME``, and checks each install
receipt: the reported path is the expected one in the private plugin cache and holds exactly the
source's files, hook declarations left out (:mod:`sevro_hosts_codex.pluginhooks`). A failure
fails the trial with its reason before the model is asked anything.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from attrs import frozen

from sevro_core.api import (
    CancelToken,
    ConfigurationError,
    HostFailure,
    InvocationError,
    run_bounded,
)
from sevro_hosts_codex.limits import (
    CODEX_PLUGIN_INSTALL_TIMEOUT_SECONDS,
    MAX_CODEX_MARKETPLACE_BYTES,
    MAX_CODEX_MARKETPLACE_FILES,
    MAX_CODEX_PLUGIN_MANIFEST_BYTES,
    MAX_CODEX_PLUGINS,
)
from sevro_hosts_codex.pluginhooks import Handler, HookRefused, curate

NAME_RE = re.compile(r"^[a-z][a-z0-9-]{0,63}$")
_VERSION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$")
MANIFEST = (".agents", "plugins", "marketplace.json")
PLUGIN_MANIFEST = (".codex-plugin", "plugin.json")
_KEYS = {"path", "plugins"}
UNSUPPORTED_KEYS = ("mcpServers", "apps", "lspServers")
"""Manifest components sevro cannot isolate: servers and apps would run outside the command
sandbox, so such plugins are refused rather than installed. Hooks are curated instead
(:mod:`sevro_hosts_codex.pluginhooks`)."""
UNSUPPORTED_FILES = (".mcp.json", "mcp.json", ".app.json", ".lsp.json")
"""Plugin-root files Codex would load as those components by default."""
_INSTALL_OUTPUT_BYTES = 64 * 1024
_KEPT_ENV = ("PATH", "HOME", "CODEX_HOME", "TMPDIR", "LANG")


@frozen
class MarketplaceSetting:
    """``marketplace`` of the host configuration: an absolute directory and plugin names."""

    path: Path
    plugins: tuple[str, ...]


@frozen
class Plugin:
    name: str
    version: str
    source: tuple[str, ...]
    """The plugin directory's parts below the marketplace root."""
    digest: str
    effective: str
    """The digest of what is installed: the source without its hook declarations."""
    handlers: tuple[Handler, ...] = ()
    """Its command hook handlers (run only when ``hooks.plugins`` names the plugin)."""


@frozen
class Marketplace:
    """A verified marketplace: its name, plugins, every file (relative parts) and digest."""

    root: Path
    name: str
    plugins: tuple[Plugin, ...]
    files: tuple[tuple[str, ...], ...]
    digest: str

    def identity(self) -> dict[str, Any]:
        """What the redacted configuration records (no absolute path)."""
        return {
            "name": self.name,
            "digest": self.digest,
            "plugins": [_plugin_identity(p) for p in self.plugins],
        }


def _plugin_identity(plugin: Plugin) -> dict[str, Any]:
    """A plugin's name, version and digest, and its effective digest when hooks were curated."""
    found: dict[str, Any] = {"name": plugin.name, "version": plugin.version}
    found["digest"] = plugin.digest
    if plugin.effective != plugin.digest:
        found["effectiveDigest"] = plugin.effective
        found["commandHandlers"] = len(plugin.handlers)
    return found


def parse_setting(value: Any) -> MarketplaceSetting | None:
    """``marketplace`` from ``--host-config`` (``ConfigurationError`` with a pointer)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ConfigurationError("must be an object with path and plugins", "/marketplace")
    unknown = sorted(set(value) - _KEYS)
    if unknown:
        raise ConfigurationError(f"unknown key {unknown[0]!r}", "/marketplace")
    path = value.get("path")
    if not isinstance(path, str) or not path.startswith("/") or len(path) > 4096:
        raise ConfigurationError("must be an absolute directory path", "/marketplace/path")
    names = value.get("plugins")
    if not isinstance(names, list) or not 1 <= len(names) <= MAX_CODEX_PLUGINS:
        raise ConfigurationError(
            f"must be a list of 1 to {MAX_CODEX_PLUGINS} plugin names", "/marketplace/plugins"
        )
    for index, name in enumerate(names):
        if not isinstance(name, str) or not NAME_RE.match(name) or name in names[:index]:
            raise ConfigurationError(
                f"must be a unique name matching {NAME_RE.pattern}", f"/marketplace/plugins/{index}"
            )
    return MarketplaceSetting(Path(os.path.normpath(path)), tuple(names))


# -- reading the source ------------------------------------------------------------------------


class Refused(Exception):
    """A marketplace tree that cannot be trusted as written; the message says why."""


def _read(path: Path, limit: int) -> bytes:
    """A regular file's bytes, never through a link, at most ``limit`` bytes."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise Refused(f"{path} is unreadable or a link: {exc.strerror}") from None
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise Refused(f"{path} is not a regular file")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise Refused(f"{path} exceeds {limit} bytes")
    return data


def _real_dir(path: Path, below: Path) -> None:
    """``path`` and every part of it below ``below`` are directories, none a link."""
    current = below
    for part in path.relative_to(below).parts:
        current = current / part
        try:
            mode = os.lstat(current).st_mode
        except OSError as exc:
            raise Refused(f"{current} is missing or unreadable: {exc.strerror}") from None
        if not stat.S_ISDIR(mode):
            raise Refused(f"{current} is a link or no directory")


def tree(root: Path, budget: list[int]) -> dict[tuple[str, ...], bytes]:
    """Every regular file below ``root`` by relative parts; a link, special file or a tree past
    the budget (``[files, bytes]`` left) is refused."""
    found: dict[tuple[str, ...], bytes] = {}
    pending = [root]
    while pending:
        directory = pending.pop()
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as exc:
            raise Refused(f"{directory} is unreadable: {exc.strerror}") from None
        for entry in entries:
            budget[0] -= 1
            if budget[0] < 0:
                raise Refused(f"more than {MAX_CODEX_MARKETPLACE_FILES} entries")
            if entry.is_dir(follow_symlinks=False):
                pending.append(Path(entry.path))
            elif entry.is_file(follow_symlinks=False):
                data = _read(Path(entry.path), max(budget[1], 0))
                budget[1] -= len(data)
                found[Path(entry.path).relative_to(root).parts] = data
            else:
                raise Refused(f"{entry.path} is a link or special file")
    return found


def digest(files: Mapping[tuple[str, ...], bytes]) -> str:
    """A content digest of a file set: each relative path with its bytes' SHA-256."""
    h = hashlib.sha256()
    for parts in sorted(files):
        h.update(json.dumps(["/".join(parts), hashlib.sha256(files[parts]).hexdigest()]).encode())
    return "sha256:" + h.hexdigest()


def _json(data: bytes, what: str) -> dict[str, Any]:
    try:
        document = json.loads(data)
    except ValueError as exc:
        raise Refused(f"{what} is not JSON: {exc}") from None
    if not isinstance(document, dict):
        raise Refused(f"{what} is not a JSON object")
    return document


def _source(entry: Any, index: int) -> tuple[str, ...]:
    source = entry.get("source") if isinstance(entry, dict) else None
    if isinstance(source, dict) and source.get("source") == "local":
        source = source.get("path")
    if not isinstance(source, str) or not source.startswith("./"):
        raise Refused(f"plugins[{index}] needs a local source ./<dir> (no remote source)")
    parts = tuple(p for p in source[2:].split("/") if p != "")
    if not parts or any(p in (".", "..") for p in parts):
        raise Refused(f"plugins[{index}] source {source!r} must stay inside the marketplace")
    return parts


def _supported(
    manifest: Mapping[str, Any], found: Mapping[tuple[str, ...], bytes], at: str
) -> None:
    """Refuse a plugin that declares or ships MCP/LSP servers or apps."""
    declared = [k for k in UNSUPPORTED_KEYS if k in manifest]
    shipped = sorted({rel[0] for rel in found if rel[0] in UNSUPPORTED_FILES})
    if declared or shipped:
        what = ", ".join([*declared, *shipped])
        raise Refused(
            f"plugin {at} has {what}: MCP/LSP servers and apps are not supported "
            "(only skills, command hooks and plain files are)"
        )


def read_marketplace(
    setting: MarketplaceSetting,
) -> tuple[Marketplace, dict[tuple[str, ...], bytes]]:
    """Verify the marketplace as the module docstring says; ``Refused`` names the problem.
    The files returned are those to install: each plugin's hook declarations curated out."""
    root = setting.path
    try:
        mode = os.lstat(root).st_mode
    except OSError as exc:
        raise Refused(f"{root} is missing or unreadable: {exc.strerror}") from None
    if not stat.S_ISDIR(mode) or os.path.realpath(root) != str(root):
        raise Refused(f"{root} must be a directory reached through no link")
    _real_dir(root.joinpath(*MANIFEST[:-1]), root)
    manifest_bytes = _read(root.joinpath(*MANIFEST), MAX_CODEX_PLUGIN_MANIFEST_BYTES)
    manifest = _json(manifest_bytes, "marketplace.json")
    name, entries = manifest.get("name"), manifest.get("plugins")
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise Refused(f"marketplace.json name must match {NAME_RE.pattern}")
    if not isinstance(entries, list):
        raise Refused("marketplace.json has no plugins list")
    listed = [e.get("name") if isinstance(e, dict) else None for e in entries]
    if sorted(map(str, listed)) != sorted(setting.plugins) or len(listed) != len(setting.plugins):
        raise Refused(
            f"marketplace.json must list exactly the configured plugins {list(setting.plugins)}, "
            f"not {listed}"
        )
    files: dict[tuple[str, ...], bytes] = {MANIFEST: manifest_bytes}
    installed: dict[tuple[str, ...], bytes] = {MANIFEST: manifest_bytes}
    budget = [MAX_CODEX_MARKETPLACE_FILES, MAX_CODEX_MARKETPLACE_BYTES]
    plugins: list[Plugin] = []
    for index, entry in enumerate(entries):
        parts = _source(entry, index)
        directory = root.joinpath(*parts)
        _real_dir(directory, root)
        found = tree(directory, budget)
        plugin = _json(
            found.get(PLUGIN_MANIFEST, b"null"), f"{'/'.join(parts)}/.codex-plugin/plugin.json"
        )
        version = plugin.get("version")
        if (
            plugin.get("name") != entry["name"]
            or not isinstance(version, str)
            or not _VERSION_RE.match(version)
        ):
            raise Refused(
                f"{'/'.join(parts)}/.codex-plugin/plugin.json must name {entry['name']!r} "
                "and give a version"
            )
        _supported(plugin, found, "/".join(parts))
        try:
            curated, handlers = curate(entry["name"], plugin, found)
        except HookRefused as exc:
            raise Refused(f"plugin {'/'.join(parts)}: {exc}") from None
        effective = digest(curated)
        plugins.append(Plugin(entry["name"], version, parts, digest(found), effective, handlers))
        files.update({(*parts, *rel): data for rel, data in found.items()})
        installed.update({(*parts, *rel): data for rel, data in curated.items()})
    verified = Marketplace(root, name, tuple(plugins), tuple(sorted(files)), digest(files))
    return verified, installed


def load(setting: MarketplaceSetting | None) -> Marketplace | None:
    """The verified marketplace before anything runs; ``InvocationError`` (exit 64) if not."""
    if setting is None:
        return None
    try:
        return read_marketplace(setting)[0]
    except Refused as exc:
        raise InvocationError(f"Codex plugin marketplace {setting.path}: {exc}") from None


# -- installing per trial --------------------------------------------------------------------


@frozen
class Installed:
    """One plugin installed in a trial's private home, its receipt verified."""

    name: str
    version: str
    path: Path


def install(
    marketplace: Marketplace,
    native: Path,
    places: tuple[Path, Path, Path],
    env: Mapping[str, str],
    cancel: CancelToken,
) -> tuple[Installed, ...]:
    """Copy, add and install the marketplace for one trial; ``places`` are (copy directory,
    the trial's ``CODEX_HOME``, a working directory). ``HostFailure`` on any problem."""
    copy, codex_home, cwd = places
    setting = MarketplaceSetting(marketplace.root, tuple(p.name for p in marketplace.plugins))
    try:
        current, files = read_marketplace(setting)
    except Refused as exc:
        raise HostFailure(f"Codex plugin marketplace: {exc}") from None
    if current.digest != marketplace.digest:
        raise HostFailure(
            f"Codex plugin marketplace {marketplace.root} changed since the run was configured"
        )
    for parts, data in files.items():
        target = copy.joinpath(*parts)
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        target.write_bytes(data)
    kept = {k: v for k, v in env.items() if k in _KEPT_ENV}
    added = _codex(native, ["plugin", "marketplace", "add", str(copy), "--json"], kept, cwd, cancel)
    if added.get("marketplaceName") != marketplace.name or added.get("installedRoot") != str(copy):
        raise HostFailure(f"codex plugin marketplace add reported {_brief(added)}")
    return tuple(
        _install_one(marketplace.name, plugin, (native, codex_home, cwd), kept, cancel, files)
        for plugin in marketplace.plugins
    )


def _install_one(
    marketplace: str,
    plugin: Plugin,
    places: tuple[Path, Path, Path],
    env: Mapping[str, str],
    cancel: CancelToken,
    files: Mapping[tuple[str, ...], bytes],
) -> Installed:
    native, codex_home, cwd = places
    selector = f"{plugin.name}@{marketplace}"
    receipt = _codex(native, ["plugin", "add", selector, "--json"], env, cwd, cancel)
    expected = codex_home / "plugins" / "cache" / marketplace / plugin.name / plugin.version
    if receipt.get("pluginId") != selector or receipt.get("installedPath") != str(expected):
        raise HostFailure(f"codex plugin add {selector} reported {_brief(receipt)}")
    try:
        _real_dir(expected, codex_home)
        installed = tree(expected, [MAX_CODEX_MARKETPLACE_FILES, MAX_CODEX_MARKETPLACE_BYTES])
    except Refused as exc:
        raise HostFailure(
            f"codex plugin add {selector}: install receipt unverified: {exc}"
        ) from None
    if digest(installed) != plugin.effective:
        raise HostFailure(
            f"codex plugin add {selector}: the installed files differ from the marketplace's"
        )
    return Installed(plugin.name, plugin.version, expected)


def _codex(
    native: Path, args: Sequence[str], env: Mapping[str, str], cwd: Path, cancel: CancelToken
) -> dict[str, Any]:
    """Run one ``codex plugin`` command; its JSON answer, or ``HostFailure`` naming it."""
    outcome = run_bounded(
        [str(native), *args],
        cwd=cwd,
        env=env,
        timeout_s=CODEX_PLUGIN_INSTALL_TIMEOUT_SECONDS,
        cancel=cancel,
        output_limit=_INSTALL_OUTPUT_BYTES,
        stderr="capture",
        stderr_limit=_INSTALL_OUTPUT_BYTES,
    )
    command = "codex " + " ".join(args[:3])
    if outcome.cancelled:
        raise HostFailure("run cancelled", cancelled=True)
    if outcome.timed_out:
        raise HostFailure(
            f"{command} did not finish within {CODEX_PLUGIN_INSTALL_TIMEOUT_SECONDS} s"
        )
    if outcome.exit_code != 0:
        raise HostFailure(f"{command} failed (exit {outcome.exit_code}): {_reason(outcome.stderr)}")
    try:
        answer = json.loads(outcome.output)
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        raise HostFailure(f"{command} printed no JSON receipt")
    return answer


def _reason(stderr: bytes) -> str:
    """Codex's ``Error:`` line (its backtrace left out), else the end of what it printed."""
    lines = stderr.decode("utf-8", "replace").splitlines()
    errors = [line.strip() for line in lines if line.startswith("Error:")]
    text = errors[0] if errors else " ".join(" ".join(lines).split())[-300:]
    return text[:300] or "(no output)"


def _brief(answer: Mapping[str, Any]) -> str:
    return json.dumps(answer, sort_keys=True)[:300]
