"""Plugin command hooks (Sevro's ``hooks.plugins``): curated at configuration, run sandboxed.

Codex runs a plugin's hooks itself, outside the sandbox its agent's commands get, with the
credentials of its own process. So no plugin is installed with its hook declarations: the
default files (``hooks/hooks.json``, ``hooks.json``) and the manifest's ``hooks`` (paths or
inline) are read, checked and removed from the copy Codex installs (its digest is the plugin's
effective digest). Only the command handlers of plugins the runtime policy's ``hooks.plugins``
names are then declared in the trial's generated ``config.toml``, each as a small runner-owned
script that starts the handler in the trial's bubblewrap sandbox (role ``hooks``: its own home
and temp, no credentials, no network, protected roots and the private state hidden, only the
installed plugin readable besides the usual trees), kills it with everything it started after
its timeout, and records its exit code. A handler of another type, exec-form arguments, an
asynchronous handler, an event Codex does not run, or hooks in Markdown frontmatter are refused
before anything runs, never skipped.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from attrs import frozen

from sevro_core.api import Completeness, JsonValue
from sevro_hosts_codex.limits import (
    CODEX_PLUGIN_HOOK_TIMEOUT_SECONDS,
    MAX_CODEX_PLUGIN_HOOK_HANDLERS,
    MAX_CODEX_PLUGIN_HOOK_RECORDS,
    MAX_CODEX_PLUGIN_HOOK_TIMEOUT_SECONDS,
)

HOOK_FILES = (("hooks", "hooks.json"), ("hooks.json",))
"""Plugin-root files Codex reads as hook declarations by default."""
EVENTS = ("PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop", "SessionStart")
"""Events sevro declares for Codex 0.171.0 (``config.toml`` ``[hooks]``)."""
HOOK_ROLE = "hooks"
CODEX_GRACE_SECONDS = 10
"""Added to a handler's timeout for Codex's own: sevro's kill comes first and is recorded."""
_HANDLER_KEYS = {"type", "command", "timeout", "statusMessage"}
_GROUP_KEYS = {"matcher", "hooks"}
_FRONTMATTER_HOOKS = re.compile(r"^hooks\s*:", re.MULTILINE)
_KILLED = 137


class HookRefused(Exception):
    """A plugin hook declaration sevro cannot run as declared; the message says why."""


@frozen
class Handler:
    """One command handler of a plugin, as declared (``matcher`` None: every occurrence)."""

    plugin: str
    event: str
    matcher: str | None
    command: str
    timeout: int


def curate(
    name: str, manifest: Mapping[str, Any], found: Mapping[tuple[str, ...], bytes]
) -> tuple[dict[tuple[str, ...], bytes], tuple[Handler, ...]]:
    """The plugin's files without hook declarations, and its command handlers (checked)."""
    removed: set[tuple[str, ...]] = set()
    documents: list[tuple[str, Any]] = []
    for default in HOOK_FILES:
        if default in found:
            documents.append(("/".join(default), _json(found[default], "/".join(default))))
            removed.add(default)
    declared = manifest.get("hooks")
    if declared is not None:
        for index, item in enumerate(declared if isinstance(declared, list) else [declared]):
            where = f"plugin.json hooks[{index}]" if isinstance(declared, list) else "plugin.json"
            if isinstance(item, dict):
                documents.append((where, item))
            elif isinstance(item, str):
                parts = _relative(item, where)
                if parts in removed:
                    continue  # the default file named again: read once, as Codex loads it
                if parts not in found:
                    raise HookRefused(f"{where} names {item!r}, which the plugin does not hold")
                documents.append((item, _json(found[parts], item)))
                removed.add(parts)
            else:
                raise HookRefused(f"{where}: hooks must be a ./path, an object or a list of them")
    _refuse_frontmatter(found)
    handlers = tuple(h for where, doc in documents for h in _handlers(name, doc, where))
    if len(handlers) > MAX_CODEX_PLUGIN_HOOK_HANDLERS:
        raise HookRefused(f"more than {MAX_CODEX_PLUGIN_HOOK_HANDLERS} hook handlers")
    curated = {parts: data for parts, data in found.items() if parts not in removed}
    if declared is not None:
        kept = {k: v for k, v in manifest.items() if k != "hooks"}
        curated[(".codex-plugin", "plugin.json")] = json.dumps(kept, indent=2).encode()
    return curated, handlers


def _json(data: bytes, where: str) -> Any:
    try:
        return json.loads(data)
    except ValueError as exc:
        raise HookRefused(f"{where} is not JSON: {exc}") from None


def _relative(path: str, where: str) -> tuple[str, ...]:
    parts = tuple(p for p in path[2:].split("/") if p) if path.startswith("./") else ()
    if not parts or any(p in (".", "..") for p in parts):
        raise HookRefused(f"{where}: {path!r} must be a ./path inside the plugin")
    return parts


def _refuse_frontmatter(found: Mapping[tuple[str, ...], bytes]) -> None:
    """Hooks in a skill's or agent's Markdown frontmatter: refused (not run, not skipped)."""
    for parts, data in found.items():
        if not parts[-1].endswith(".md"):
            continue
        text = data.decode("utf-8", "replace")
        if not text.startswith("---"):
            continue
        end = text.find("\n---", 3)
        if _FRONTMATTER_HOOKS.search(text[3 : end if end > 0 else len(text)]):
            raise HookRefused(
                f"{'/'.join(parts)} declares hooks in its frontmatter, which sevro does not run"
            )


def _handlers(plugin: str, document: Any, where: str) -> list[Handler]:
    if not isinstance(document, dict):
        raise HookRefused(f"{where} is not a JSON object")
    nested = document.get("hooks")
    events: dict[str, Any] = nested if isinstance(nested, dict) else document
    if events is not document and set(document) - {"hooks", "description"}:
        raise HookRefused(
            f"{where}: unknown key {sorted(set(document) - {'hooks', 'description'})[0]!r}"
        )
    found: list[Handler] = []
    for event, groups in events.items():
        if event not in EVENTS:
            raise HookRefused(
                f"{where}: hook event {event!r} is not supported (only {', '.join(EVENTS)})"
            )
        if not isinstance(groups, list):
            raise HookRefused(f"{where}: {event} must be a list of matcher groups")
        for group in groups:
            found += _group(plugin, event, group, where)
    return found


def _group(plugin: str, event: str, group: Any, where: str) -> list[Handler]:
    if not isinstance(group, dict) or set(group) - _GROUP_KEYS:
        raise HookRefused(f"{where}: a {event} group must hold only matcher and hooks")
    matcher = group.get("matcher")
    if matcher is not None and (not isinstance(matcher, str) or len(matcher) > 256):
        raise HookRefused(f"{where}: a {event} matcher must be a string of at most 256 characters")
    handlers = group.get("hooks")
    if not isinstance(handlers, list):
        raise HookRefused(f"{where}: a {event} group needs a hooks list")
    return [_handler(plugin, event, matcher or None, h, where) for h in handlers]


def _handler(plugin: str, event: str, matcher: str | None, handler: Any, where: str) -> Handler:
    if not isinstance(handler, dict):
        raise HookRefused(f"{where}: a {event} handler must be an object")
    kind = handler.get("type")
    if kind != "command":
        raise HookRefused(f"{where}: {event} handler type {kind!r} is not supported (only command)")
    if "args" in handler or not isinstance(handler.get("command"), str):
        raise HookRefused(
            f"{where}: {event} handler uses exec-form arguments (only a command string)"
        )
    if handler.get("async"):
        raise HookRefused(f"{where}: asynchronous {event} handlers are not supported")
    unknown = sorted(set(handler) - _HANDLER_KEYS - {"async"})
    if unknown:
        raise HookRefused(f"{where}: {event} handler has unknown key {unknown[0]!r}")
    timeout = handler.get("timeout", CODEX_PLUGIN_HOOK_TIMEOUT_SECONDS)
    if (
        not isinstance(timeout, int)
        or isinstance(timeout, bool)
        or not 1 <= timeout <= MAX_CODEX_PLUGIN_HOOK_TIMEOUT_SECONDS
    ):
        raise HookRefused(
            f"{where}: {event} handler timeout must be 1 to "
            f"{MAX_CODEX_PLUGIN_HOOK_TIMEOUT_SECONDS} seconds"
        )
    command = handler["command"]
    if not command.strip() or len(command) > 8192 or "\0" in command:
        raise HookRefused(f"{where}: {event} handler command must be 1 to 8192 characters")
    return Handler(plugin, event, matcher, command, timeout)


# -- the runner-owned wrapper -----------------------------------------------------------------


@frozen
class Declared:
    """One handler as the generated ``config.toml`` declares it: the wrapper script to run."""

    event: str
    matcher: str | None
    script: Path
    timeout: int


def wrapper(
    handler: Handler,
    index: int,
    sandboxed: tuple[Sequence[str], Mapping[str, str]],
    log: Path,
) -> str:
    """The script Codex runs for ``handler``: the sandboxed command under a kill-after
    timeout, started with only the sandbox's environment, then one execution record."""
    argv, env = sandboxed
    timeout = shutil.which("timeout") or "/usr/bin/timeout"
    q = shlex.quote
    assignments = " ".join(q(f"{k}={v}") for k, v in sorted(env.items()))
    record = json.dumps({"plugin": handler.plugin, "event": handler.event, "handler": index})
    return "\n".join(
        [
            "#!/bin/sh",
            "started=$(date +%s%N)",
            f"/usr/bin/env -i {assignments} {q(timeout)} -s KILL {handler.timeout} "
            + " ".join(q(a) for a in argv),
            "code=$?",
            "ended=$(date +%s%N)",
            f'printf \'%s\\t%s\\t%s\\t%s\\n\' {q(record)} "$code" "$started" "$ended"'
            f' > {q(str(log))}/"$started-$$.rec"',
            'exit "$code"',
            "",
        ]
    )


def executions(
    log: Path, timeouts: Mapping[tuple[str, str, int], int]
) -> tuple[Completeness, list[JsonValue]]:
    """The execution records the wrappers wrote, in order; partial when one is unreadable."""
    try:
        names = sorted(os.listdir(log))
    except OSError:
        return Completeness.UNAVAILABLE, []
    completeness = Completeness.COMPLETE
    if len(names) > MAX_CODEX_PLUGIN_HOOK_RECORDS:
        names, completeness = names[:MAX_CODEX_PLUGIN_HOOK_RECORDS], Completeness.PARTIAL
    found: list[JsonValue] = []
    for name in names:
        entry = _execution(log / name, timeouts)
        if entry is None:
            completeness = Completeness.PARTIAL
        else:
            found.append(entry)
    return completeness, found


def _execution(path: Path, timeouts: Mapping[tuple[str, str, int], int]) -> JsonValue | None:
    try:
        fields = path.read_text().rstrip("\n").split("\t")
        record = json.loads(fields[0])
        code, started, ended = (int(f) for f in fields[1:4])
    except (OSError, ValueError, IndexError, TypeError):
        return None
    key = (str(record.get("plugin")), str(record.get("event")), int(record.get("handler", -1)))
    limit = timeouts.get(key)
    if limit is None:
        return None
    duration = max(0, (ended - started) // 1_000_000)
    return {
        "plugin": key[0],
        "event": key[1],
        "handler": key[2],
        "exitCode": code,
        "timedOut": code == _KILLED and duration >= limit * 1000,
        "durationMs": duration,
    }
