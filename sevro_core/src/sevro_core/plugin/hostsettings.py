"""Host settings: the flags hosts declare, checked at plugin load and parsed for ``run``/``doctor``.

A host lists its settings (:class:`~sevro_core.plugin.protocols.HostSetting`); sevro turns each
into a ``--flag`` on ``sevro run`` and ``sevro doctor`` and also accepts it as
``--host-setting KEY=VALUE``. The core names no host: everything here comes from the registry.
An executor declares its own options the same way (tox 4 style: the plugin owns its options);
they are flags of ``sevro run`` only, read only when that executor runs the trials.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from sevro_core.errors import InvocationError
from sevro_core.plugin.protocols import SETTING_KINDS, HostSetting

HOST_SETTING_FLAG = "--host-setting"
RESERVED_FLAGS = frozenset(
    {
        "--baseline",
        "--prices",
        "--max-cost-usd",
        "--max-call-cost-usd",
        "--accept-exposure",
        "--semantic-host",
        "--semantic-model",
        "--semantic-effort",
        "--semantic-host-config",
        "--advisory-host",
        "--advisory-model",
        "--advisory-effort",
        "--advisory-host-config",
        "--comparator-host",
        "--comparator-model",
        "--comparator-effort",
        "--comparator-host-config",
        "--advisory-exclude",
        "--adapter-module",
        "--advisory-adapter-module",
        "--semantic-adapter-module",
        "--case-file",
        "--case-id",
        "--extension-command-file",
        "--extension-source-file",
        "--extension-configuration-file",
        "--extension-redacted-configuration-file",
        "--task-verdict-policy",
        "--replace-builtin-grader",
        "--project-digest",
        "--runner-build-digest",
        "--runner-checkout-root",
        "--shell-isolation",
        "--toolchain-bin-dir",
        "--case-source-map-file",
        "--case-source-root",
        "--condition",
        "--config-root",
        "--dry",
        "--holdout",
        "--seed",
        "--effort",
        "--executor",
        "--fail-on-regression",
        "--github-summary",
        "--group",
        "--junit",
        "--variant",
        "--help",
        "--host",
        "--host-config",
        HOST_SETTING_FLAG,
        "--jobs",
        "--json",
        "--local-http",
        "--log-format",
        "--model",
        "--plugin",
        "--project-root",
        "--protected-root",
        "--results-root",
        "--resume",
        "--run-state-root",
        "--run-settings-file",
        "--runtime-config-file",
        "--sandbox",
        "--output",
        "--rubric",
        "--skill",
        "--status-interval",
        "--threshold",
        "--trials",
        "--verbose",
        "--verdict-policy",
        "--version",
        "--workspace-root",
    }
)
"""The core's own flags on ``sevro``, ``run``, ``doctor`` and ``judge calibrate``: no host may
declare one (tests/core/test_host_settings.py keeps this list equal to the commands' options)."""

_KEY_RE = re.compile(r"^[a-z][a-z0-9]*(?:\.[a-z][a-zA-Z0-9]*)+$")
_VARIABLE_RE = re.compile(r"^[A-Z][A-Z0-9_]{0,63}$")
_FLAG_RE = re.compile(r"^--[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")


def declared_settings(host: Any) -> tuple[HostSetting, ...]:
    """A host's settings; a host written before settings existed declares none."""
    return tuple(getattr(host, "settings", ()))


def _checked_settings(plugin: Any, where: str) -> Iterator[HostSetting]:
    """A host's or executor's declared settings, each checked (exit 64) as it is reached."""
    if not isinstance(getattr(plugin, "settings", ()), tuple | list):
        raise InvocationError(f"{where} declares settings that are not a tuple of HostSetting")
    for setting in declared_settings(plugin):
        _check_one(setting, where)
        yield setting


def check_declarations(hosts: Mapping[str, Any], owners: Mapping[str, str]) -> None:
    """Refuse malformed settings, a key or flag declared twice, or a core flag (exit 64).

    ``owners`` maps a host id to the plugin that registered it, for the message.
    """
    keys: dict[str, str] = {}
    flags: dict[str, str] = {}
    for host_id, host in hosts.items():
        where = f"host {host_id} (plugin {owners.get(host_id, '?')})"
        for setting in _checked_settings(host, where):
            for table, name, what in ((keys, setting.key, "key"), (flags, setting.flag, "flag")):
                if name in table:
                    raise InvocationError(
                        f"host setting {what} {name} is declared twice: by {table[name]} and by "
                        f"{where}; uninstall one or restrict SEVRO_LOAD_PLUGINS"
                    )
                table[name] = where


def _check_one(setting: Any, where: str) -> None:
    if not isinstance(setting, HostSetting):
        raise InvocationError(f"{where} declares a setting that is not a HostSetting: {setting!r}")
    if not _KEY_RE.match(setting.key) or len(setting.key) > 128:
        raise InvocationError(
            f"{where} declares an invalid setting key {setting.key!r} (namespaced: acme.bin)"
        )
    if not _FLAG_RE.match(setting.flag) or len(setting.flag) > 64:
        raise InvocationError(
            f"{where} declares an invalid flag {setting.flag!r} (a long option: --acme-bin)"
        )
    if setting.flag in RESERVED_FLAGS:
        raise InvocationError(f"{where} declares {setting.flag}, which is a flag of sevro itself")
    if setting.kind not in SETTING_KINDS:
        raise InvocationError(
            f"{where} declares setting {setting.key} of kind {setting.kind!r}; "
            f"kinds: {', '.join(SETTING_KINDS)}"
        )
    seed = setting.runtime_seed
    if seed is not None and (setting.kind != "path" or not _VARIABLE_RE.match(seed)):
        raise InvocationError(
            f"{where} declares setting {setting.key} as runtime seed {seed!r}: it must be a "
            "path setting and name a variable like UV_CACHE_DIR"
        )


OPTION_PREFIX = "host_setting__"
"""Click parameter names of host flags start with this; no core parameter's name does."""


def option_name(setting: HostSetting) -> str:
    """The click parameter name of a setting's flag."""
    return OPTION_PREFIX + setting.flag[2:].replace("-", "_")


def click_options(hosts: Mapping[str, Any]) -> list[Any]:
    """One ``click.Option`` per declared setting, in registry order."""
    return [
        _click_option(setting, option_name(setting), f"--host {short_name(host_id)}")
        for host_id, setting in _all_settings(hosts)
    ]


def _click_option(setting: HostSetting, name: str, needs: str) -> Any:
    import click

    switch: dict[str, Any] = (
        {"is_flag": True, "flag_value": "true"} if setting.kind == "switch" else {}
    )
    return click.Option(
        [setting.flag, name],
        help=f"{setting.help} [{setting.key}; {needs}]",
        metavar=None if switch else ("PATH" if setting.kind == "path" else "TEXT"),
        default=None,
        show_default=False,
        **switch,
    )


def short_name(host_id: str) -> str:
    """What ``--host`` accepts for a host: ``scripted`` for ``sevro.host.scripted``."""
    return host_id.removeprefix("sevro.host.")


def resolve_settings(
    hosts: Mapping[str, Any],
    host: str | None,
    flag_values: Mapping[str, str | None],
    pairs: Sequence[str],
) -> dict[str, str]:
    """The settings for ``--host host``, by key, from the host flags and ``--host-setting``.

    ``flag_values`` maps :func:`option_name` to the value given (None when absent). A flag of
    another host, an unknown key, a malformed pair or one key given twice is exit 64. Path
    settings are expanded and resolved to absolute paths. ``host`` None accepts every installed
    host's settings: a run whose arms or judges use other hosts checks them once it knows them
    (:func:`check_settings_used`).
    """

    def mine(host_id: str) -> bool:
        return host is None or host in (host_id, short_name(host_id))

    given: dict[str, str] = {}
    for host_id, setting in _all_settings(hosts):
        value = flag_values.get(option_name(setting))
        if value is None:
            continue
        if not mine(host_id):
            raise InvocationError(f"{setting.flag} needs --host {short_name(host_id)}")
        given[setting.key] = _normalise(setting, value)
    own = {s.key: s for host_id, s in _all_settings(hosts) if mine(host_id)}
    for pair in pairs:
        key, value = _split(pair)
        declared = own.get(key)
        if declared is None:
            known = ", ".join(sorted(own)) or "none"
            where = f"--host {host}" if host is not None else "any installed host"
            raise InvocationError(
                f"{HOST_SETTING_FLAG} {key[:64]!r} is not a setting of {where} (known: {known})"
            )
        if key in given:
            raise InvocationError(f"{key} is given twice ({declared.flag} and {HOST_SETTING_FLAG})")
        given[key] = _normalise(declared, value)
    return given


def check_settings_used(
    hosts: Mapping[str, Any],
    given: Mapping[str, str],
    used: Iterable[str],
    candidates: Iterable[str] = (),
) -> None:
    """Refuse (exit 64) a setting of a host the run does not use: not its ``--host``, an arm's
    host nor a judge's. Every route of a run gets the same settings; each host reads its own.
    A ``candidate_only`` setting needs its host among the ``candidates`` (``--host``, arms)."""
    used_ids = {h for host_id in used for h in (host_id, f"sevro.host.{host_id}")}
    candidate_ids = {h for host_id in candidates for h in (host_id, f"sevro.host.{host_id}")}
    for host_id, setting in _all_settings(hosts):
        if setting.key not in given:
            continue
        short = short_name(host_id)
        if host_id not in used_ids:
            raise InvocationError(
                f"{setting.flag} ({setting.key}) needs --host {short}, an arm on that host "
                f"or a judge on it (such as --semantic-host {short})"
            )
        if setting.candidate_only and host_id not in candidate_ids:
            raise InvocationError(
                f"{setting.flag} ({setting.key}) needs --host {short} or an arm on that host: "
                "it sets how the candidate runs, a judge does not read it"
            )


def runtime_seed_settings(
    hosts: Mapping[str, Any], given: Mapping[str, str]
) -> tuple[tuple[str, str, str], ...]:
    """The given settings that stand for a runtime seed: (flag, variable, directory) each."""
    return tuple(
        (setting.flag, setting.runtime_seed, given[setting.key])
        for _, setting in _all_settings(hosts)
        if setting.runtime_seed is not None and setting.key in given
    )


def file_pairs(hosts: Mapping[str, Any], values: Mapping[str, str], base: Path) -> list[str]:
    """A run settings file's ``hostSettings`` as ``KEY=VALUE`` pairs, a relative path setting
    resolved against the file's directory ``base`` (not the working directory)."""
    kinds = {setting.key: setting.kind for _, setting in _all_settings(hosts)}
    pairs = []
    for key, value in values.items():
        relative = kinds.get(key) == "path" and value.strip() and value[0] not in "/~"
        pairs.append(f"{key}={base / value if relative else value}")
    return pairs


def _all_settings(hosts: Mapping[str, Any]) -> Iterable[tuple[str, HostSetting]]:
    for host_id, host in hosts.items():
        for setting in declared_settings(host):
            yield host_id, setting


def _split(pair: str) -> tuple[str, str]:
    key, sep, value = pair.partition("=")
    if not sep or not key.strip():  # the value is never echoed: it may be a secret
        raise InvocationError(f"{HOST_SETTING_FLAG} must be KEY=VALUE with a non-empty KEY")
    if not value.strip():
        raise InvocationError(f"{HOST_SETTING_FLAG} {key[:64]!r} must not have an empty value")
    return key, value


def _normalise(setting: HostSetting, value: str) -> str:
    if setting.kind == "switch" and value not in ("true", "false"):
        raise InvocationError(f"{setting.key} is a switch: its value must be true or false")
    if setting.kind == "path":
        return str(Path(value).expanduser().resolve())
    return value


EXECUTOR_PREFIX = "sevro.executor."
"""``--executor local`` names ``sevro.executor.local``: the built-in executors' namespace."""
EXECUTOR_OPTION_PREFIX = "executor_setting__"
"""Click parameter names of executor flags start with this; no core parameter's name does."""


def executor_short_name(executor_id: str) -> str:
    """What ``--executor`` accepts for an executor: ``local`` for ``sevro.executor.local``."""
    return executor_id.removeprefix(EXECUTOR_PREFIX)


def executor_option_name(setting: HostSetting) -> str:
    """The click parameter name of an executor setting's flag."""
    return EXECUTOR_OPTION_PREFIX + setting.flag[2:].replace("-", "_")


def check_executor_declarations(
    executors: Mapping[str, Any], hosts: Mapping[str, Any], owners: Mapping[str, str]
) -> None:
    """An executor's settings follow a host setting's rules (exit 64 otherwise), share no key
    or flag with a host or another executor, and are neither runtime seeds nor candidate-only
    (those describe how a candidate runs, which is a host's business)."""
    taken = {name: f"host {hid}" for hid, s in _all_settings(hosts) for name in (s.key, s.flag)}
    for executor_id, executor in executors.items():
        where = f"executor {executor_id} (plugin {owners.get(executor_id, '?')})"
        for setting in _checked_settings(executor, where):
            if setting.runtime_seed is not None or setting.candidate_only:
                raise InvocationError(
                    f"{where} declares {setting.key} as a runtime seed or candidate-only: "
                    "only a host's settings can be"
                )
            for name, what in ((setting.key, "key"), (setting.flag, "flag")):
                if name in taken:
                    raise InvocationError(
                        f"setting {what} {name} is declared twice: by {taken[name]} and by "
                        f"{where}; uninstall one or restrict SEVRO_LOAD_PLUGINS"
                    )
                taken[name] = where


def executor_click_options(executors: Mapping[str, Any]) -> list[Any]:
    """One ``click.Option`` per executor setting (``sevro run`` only), in registry order."""
    return [
        _click_option(setting, executor_option_name(setting), f"--executor {short}")
        for executor_id, executor in executors.items()
        for short in (executor_short_name(executor_id),)
        for setting in declared_settings(executor)
    ]


def resolve_executor_settings(
    executors: Mapping[str, Any], executor: str, flag_values: Mapping[str, str | None]
) -> dict[str, str]:
    """The settings of ``--executor executor`` by key, from the executor flags given
    (``flag_values`` by :func:`executor_option_name`, None when absent). A flag of an executor
    the run does not use is exit 64: it would silently do nothing."""
    given: dict[str, str] = {}
    for executor_id, plugin in executors.items():
        short = executor_short_name(executor_id)
        for setting in declared_settings(plugin):
            value = flag_values.get(executor_option_name(setting))
            if value is None:
                continue
            if executor not in (executor_id, short):
                raise InvocationError(f"{setting.flag} needs --executor {short}")
            given[setting.key] = _normalise(setting, value)
    return given
