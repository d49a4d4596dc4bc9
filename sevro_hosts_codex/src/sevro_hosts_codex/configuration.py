"""The Codex host's settings and the per-trial ``config.toml`` it generates.

Settings come from ``--host-config`` (a ``sevro.codex-host.v1`` document: model provider, turn
timeout, prices) and the Codex flags. The generated configuration is the isolation: a permission
profile that grants Codex's commands only common runtime paths, the Codex executable, the
trial's private home and temp, and write access to the workspace; denies every protected root
explicitly; and turns the network off. Commands get no inherited environment.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from attrs import frozen

from sevro_core.api import (
    ENV_NAME,
    AgentCliConfig,
    ConfigurationError,
    CredentialFlags,
    seconds_setting,
)
from sevro_hosts_codex.limits import CODEX_PREFLIGHT_TIMEOUT_SECONDS
from sevro_hosts_codex.pluginhooks import CODEX_GRACE_SECONDS, Declared
from sevro_hosts_codex.plugins import MarketplaceSetting, parse_setting

CONFIG_FORMAT = "sevro.codex-host.v1"
PROFILE = "sevro"
JUDGE_DISABLED_FEATURES = (
    "shell_tool",
    "view_image",
    "goals",
    "multi_agent",
    "image_generation",
    "apps",
    "plugins",
    "hooks",
    "tool_suggest",
    "sleep_tool",
    "browser_use",
    "computer_use",
    "memories",
)
"""Features a judge's Codex runs without (``--disable``): every one that offers the model a tool
or loads something that could (0.171.0 offers ``exec_command``, ``write_stdin``,
``view_image``, ``multi_agent_v1`` and the goal tools through them). An unknown name makes Codex
refuse to start, so a renamed feature fails loudly instead of being silently kept."""
JUDGE_OVERRIDES = (
    'web_search="disabled"',
    "tools.experimental_request_user_input.enabled=false",
    "tools.update_plan.enabled=false",
    "skills.include_instructions=false",
    "project_doc_max_bytes=0",
)
"""``-c`` overrides for a judge: no web search, no user-input or plan tool, no skill listing and
no project instructions (``--strict-config`` refuses any key this Codex does not know)."""
_ID_RE = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")
_TOP_KEYS = {
    "format",
    "modelProvider",
    "turnTimeoutSeconds",
    "stallTimeoutSeconds",
    "preflightTimeoutSeconds",
    "prices",
    "marketplace",
}
_PROVIDER_KEYS = {
    "id",
    "baseUrl",
    "envKey",
    "requestMaxRetries",
    "streamMaxRetries",
    "streamIdleTimeoutMs",
}
_PRICE_KEYS = {"inputUsdPerMTok", "cachedInputUsdPerMTok", "outputUsdPerMTok"}


@frozen
class Provider:
    id: str
    base_url: str
    env_key: str | None
    request_max_retries: int | None
    stream_max_retries: int | None
    stream_idle_timeout_ms: int | None


@frozen
class Price:
    input: float
    cached_input: float
    output: float


@frozen(kw_only=True)
class CodexConfig(AgentCliConfig):
    provider: Provider | None
    prices: Mapping[str, Price]
    preflight_timeout_s: float
    """How long the per-request sandbox preflight may take (``preflightTimeoutSeconds``)."""
    marketplace: MarketplaceSetting | None = None
    """A local plugin marketplace installed fresh for each trial (``marketplace``)."""


CREDENTIALS = CredentialFlags.for_host(
    "codex",
    "authFile",
    login_fix="run `codex login` first",
    none_fix="pass --codex-auth-file ~/.codex/auth.json or --codex-api-key-env OPENAI_API_KEY",
)


def _int(value: Any, pointer: str, maximum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= maximum:
        raise ConfigurationError(f"must be an integer between 0 and {maximum}", pointer)
    return value


def _extra(mapping: Mapping[str, Any], allowed: set[str], pointer: str) -> None:
    unknown = sorted(set(mapping) - allowed)
    if unknown:
        raise ConfigurationError(f"unknown key {unknown[0]!r}", pointer)


def parse(config: Mapping[str, Any] | None, settings: Mapping[str, str]) -> CodexConfig:
    """Validate ``--host-config`` and the Codex flags (``ConfigurationError`` with a pointer)."""
    config = dict(config or {"format": CONFIG_FORMAT})
    if config.get("format") != CONFIG_FORMAT:
        raise ConfigurationError(f"'format' must be {CONFIG_FORMAT!r}", "/format")
    _extra(config, _TOP_KEYS, "")
    provider = None
    if "modelProvider" in config:
        raw = config["modelProvider"]
        if not isinstance(raw, dict):
            raise ConfigurationError("must be an object", "/modelProvider")
        _extra(raw, _PROVIDER_KEYS, "/modelProvider")
        if not isinstance(raw.get("id"), str) or not _ID_RE.match(raw["id"]):
            raise ConfigurationError("must match ^[a-z][a-z0-9_-]*$", "/modelProvider/id")
        url = raw.get("baseUrl")
        if not isinstance(url, str) or not re.match(r"^https?://[^\s\"\\]+$", url):
            raise ConfigurationError("must be an http(s) URL", "/modelProvider/baseUrl")
        env_key = raw.get("envKey")
        if env_key is not None and (not isinstance(env_key, str) or not ENV_NAME.match(env_key)):
            raise ConfigurationError(
                "must be an environment variable name", "/modelProvider/envKey"
            )
        limits = {
            k: _int(raw[k], f"/modelProvider/{k}", 3_600_000)
            for k in ("requestMaxRetries", "streamMaxRetries", "streamIdleTimeoutMs")
            if k in raw
        }
        provider = Provider(
            id=raw["id"],
            base_url=url,
            env_key=env_key,
            request_max_retries=limits.get("requestMaxRetries"),
            stream_max_retries=limits.get("streamMaxRetries"),
            stream_idle_timeout_ms=limits.get("streamIdleTimeoutMs"),
        )
    common = AgentCliConfig.common(config, settings, "codex", CREDENTIALS)
    prices: dict[str, Price] = {}
    raw_prices = config.get("prices", {})
    if not isinstance(raw_prices, dict):
        raise ConfigurationError("must be an object", "/prices")
    for model, entry in raw_prices.items():
        pointer = f"/prices/{model}"
        if not isinstance(entry, dict) or set(entry) != _PRICE_KEYS:
            raise ConfigurationError(f"needs exactly {sorted(_PRICE_KEYS)}", pointer)
        values = [
            entry[k] for k in ("inputUsdPerMTok", "cachedInputUsdPerMTok", "outputUsdPerMTok")
        ]
        if any(isinstance(v, bool) or not isinstance(v, int | float) or v < 0 for v in values):
            raise ConfigurationError("prices must be non-negative numbers", pointer)
        prices[model] = Price(*(float(v) for v in values))
    preflight = seconds_setting(
        config,
        "preflightTimeoutSeconds",
        CODEX_PREFLIGHT_TIMEOUT_SECONDS,
        CODEX_PREFLIGHT_TIMEOUT_SECONDS,
    )
    return CodexConfig(
        provider=provider,
        prices=prices,
        preflight_timeout_s=preflight,
        marketplace=parse_setting(config.get("marketplace")),
        **common,
    )


def _toml_string(value: str) -> str:
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        raise ValueError(f"refusing a control character in a configuration value: {value!r}")
    return json.dumps(value, ensure_ascii=False)


@frozen
class TrialLayout:
    """Where one trial's private state lives (all under the engine's private root)."""

    codex_home: Path
    home: Path
    tmp: Path
    bin: Path


def render_config_toml(
    config: CodexConfig,
    *,
    model: str | None,
    effort: str | None,
    layout: TrialLayout,
    executable_tree: Path,
    denied: Sequence[Path],
    command_env: Mapping[str, str],
    granted: tuple[Sequence[Path], Sequence[Path]] = ((), ()),
    judge: bool = False,
    hook: str | None = None,
    agent_threads: int | None = None,
    plugin_hooks: Sequence[Declared] = (),
    state: Sequence[tuple[Path, str]] = (),
    projects: Sequence[str] = (),
) -> str:
    """The trial's ``config.toml``: provider, permission profile, no inherited environment.

    A judge's profile grants the workspace (empty, its own) for reading only. ``granted``
    are the runtime policy's read roots (the declared tools' install prefixes) and writable
    roots (the role's runtime root and shared caches). ``agent_threads`` is the setting
    imported from the configuration root (:func:`imported_agent_threads`), if any.
    ``hook`` is the passive command run after every tool call (``PostToolUse``, every
    tool): sevro's skill-activation collector. ``plugin_hooks`` are the selected plugins'
    command handlers, each declared as its sandboxing wrapper script."""
    q = _toml_string
    lines = []
    if model is not None:
        lines.append(f"model = {q(model)}")
    if effort is not None:
        lines.append(f"model_reasoning_effort = {q(effort)}")
    if config.provider is not None:
        lines.append(f"model_provider = {q(config.provider.id)}")
    lines += [
        'approval_policy = "never"',
        "allow_login_shell = false",
        f"default_permissions = {q(PROFILE)}",
        # The workspace is the project root: Codex reads AGENTS.md and skills there and never
        # walks up into sevro's workspace root or `/` looking for markers (each probe outside
        # the grants is a sandboxed helper process; about 0.35 s per trial here).
        "project_root_markers = []",
        "",
        "[shell_environment_policy]",
        'inherit = "none"',
        "",
        "[shell_environment_policy.set]",
        *(f"{q(k)} = {q(v)}" for k, v in sorted(command_env.items())),
    ]
    provider = config.provider
    if provider is not None:
        lines += [
            "",
            f"[model_providers.{q(provider.id)}]",
            f"name = {q(provider.id)}",
            f"base_url = {q(provider.base_url)}",
            'wire_api = "responses"',
        ]
        if provider.env_key is not None:
            lines.append(f"env_key = {q(provider.env_key)}")
        for key, value in (
            ("request_max_retries", provider.request_max_retries),
            ("stream_max_retries", provider.stream_max_retries),
            ("stream_idle_timeout_ms", provider.stream_idle_timeout_ms),
        ):
            if value is not None:
                lines.append(f"{key} = {value}")
    if agent_threads is not None:
        lines += ["", "[agents]", f"max_concurrent_threads_per_session = {int(agent_threads)}"]
    lines += projects
    lines += [
        "",
        f"[permissions.{PROFILE}.filesystem]",
        '":minimal" = "read"',
        f'{q(str(executable_tree))} = "read"',
        f'{q(str(layout.bin))} = "read"',
        f'{q(str(layout.home))} = "write"',
        f'{q(str(layout.tmp))} = "write"',
        # CODEX_HOME (credentials, sessions) is not listed, so it is invisible to commands; only
        # the directory where Codex puts its sandbox-helper alias (run inside the sandbox) is.
        f'{q(str(layout.codex_home / "tmp" / "arg0-linux"))} = "read"',
        *(f'{q(str(path))} = "read"' for path in granted[0]),
        *(f'{q(str(path))} = "write"' for path in granted[1]),
        *(f"{q(str(path))} = {q(mode)}" for path, mode in state),
        *(f'{q(str(path))} = "deny"' for path in denied),
        "",
        f'[permissions.{PROFILE}.filesystem.":workspace_roots"]',
        f'"." = "{"read" if judge else "write"}"',
        "",
        f"[permissions.{PROFILE}.network]",
        "enabled = false",
        "",
    ]
    if hook is not None:
        lines += [
            "[[hooks.PostToolUse]]",
            'matcher = ".*"',
            "",
            "[[hooks.PostToolUse.hooks]]",
            'type = "command"',
            f"command = {q(hook)}",
            "timeout = 30",
            "",
        ]
    for declared in plugin_hooks:
        lines.append(f"[[hooks.{declared.event}]]")
        if declared.matcher is not None:
            lines.append(f"matcher = {q(declared.matcher)}")
        lines += [
            "",
            f"[[hooks.{declared.event}.hooks]]",
            'type = "command"',
            f"command = {q(str(declared.script))}",
            f"timeout = {declared.timeout + CODEX_GRACE_SECONDS}",
            "",
        ]
    return "\n".join(lines)


AGENT_THREADS_KEY = "agents.max_concurrent_threads_per_session"
"""The one setting imported from ``<config root>/.codex/config.toml``; nothing else there
(model, permissions, hooks, credentials, environment) reaches a trial."""


def imported_agent_threads(config_root: Path | None) -> int | None:
    """``agents.max_concurrent_threads_per_session`` from the configuration root's
    ``.codex/config.toml``; None when the root, the directory or the file is absent, or the
    setting is. A linked, dangling, unreadable, oversized or malformed file, a ``.codex`` that
    is a link or no directory, or a value that is no positive integer is refused (exit 64)."""
    import os
    import stat
    import tomllib

    from sevro_core.api import InvocationError
    from sevro_hosts_codex.limits import MAX_CODEX_AGENT_THREADS, MAX_CODEX_CONFIG_ROOT_FILE_BYTES

    if config_root is None:
        return None
    directory, file = config_root / ".codex", config_root / ".codex" / "config.toml"
    for path, kind, what in (
        (directory, stat.S_ISDIR, "a directory"),
        (file, stat.S_ISREG, "a file"),
    ):
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise InvocationError(
                f"Codex configuration {path} is unreadable: {exc.strerror}"
            ) from None
        if stat.S_ISLNK(mode) or not kind(mode):
            raise InvocationError(
                f"Codex configuration {path} must be {what}, not a link or anything else "
                "(--config-root imports only a plain .codex/config.toml)"
            )
    try:
        # No link is followed even if one replaced the file since it was checked.
        descriptor = os.open(file, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(descriptor, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise InvocationError(f"Codex configuration {file} must be a file")
            data = handle.read(MAX_CODEX_CONFIG_ROOT_FILE_BYTES + 1)
    except OSError as exc:
        raise InvocationError(f"Codex configuration {file} is unreadable: {exc.strerror}") from None
    if len(data) > MAX_CODEX_CONFIG_ROOT_FILE_BYTES:
        raise InvocationError(
            f"Codex configuration {file} exceeds {MAX_CODEX_CONFIG_ROOT_FILE_BYTES} bytes"
        )
    try:
        document = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InvocationError(f"Codex configuration {file} is malformed: {exc}") from None
    agents = document.get("agents")
    if agents is None:
        return None
    if not isinstance(agents, dict):
        raise InvocationError(f"Codex configuration {file}: agents must be a table")
    value = agents.get("max_concurrent_threads_per_session")
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not 1 <= value <= MAX_CODEX_AGENT_THREADS
    ):
        raise InvocationError(
            f"Codex configuration {file}: {AGENT_THREADS_KEY} must be an integer between 1 and "
            f"{MAX_CODEX_AGENT_THREADS}, not {value!r}"
        )
    return value
