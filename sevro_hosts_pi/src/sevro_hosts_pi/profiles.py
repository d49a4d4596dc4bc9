"""A case's host profile applied to pi: extension bundles, environment and the evidence that
shows what was applied (``sevro.host.runtime-profile``, ``sevro.host.context``).

Bundles are copied into the trial's private root from the bytes snapshotted at load (never
re-read from the case's directory), mounted read-only in the sandbox, and read back after the
run: a bundle is ``unchanged`` only when the same files hold the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from attrs import frozen

from sevro_core.api import (
    Completeness,
    ExtensionBundle,
    HostFailure,
    HostProfile,
    JsonValue,
    RuntimeProfile,
    write_private,
)

_MAX_BUNDLE_READ_BYTES = 64 * 1024 * 1024
"""Bytes read back from one copied bundle (the loader bounds what a bundle may hold)."""


def bundle_root(bundles: Path, index: int) -> Path:
    return bundles / str(index + 1)


def copy_bundles(profile: RuntimeProfile | None, bundles: Path) -> list[Path]:
    """Write every bundle's snapshotted files under ``bundles/<n>/``; the entry files, in
    declaration order (each passed to pi as ``-e``)."""
    entries: list[Path] = []
    for index, bundle in enumerate(profile.extensions if profile is not None else ()):
        root = bundle_root(bundles, index)
        root.mkdir(mode=0o700)
        for relative in sorted(bundle.files):
            target = root.joinpath(*relative.split("/"))
            if not target.resolve().is_relative_to(root.resolve()):  # the loader refuses these
                raise HostFailure(f"extension bundle file {relative!r} leaves its bundle")
            target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            write_private(target, bundle.files[relative])
        entries.append(root.joinpath(*bundle.entry.split("/")))
    return entries


def files_after(root: Path) -> dict[str, bytes] | None:
    """The regular files under ``root`` by relative POSIX path; None when anything else (a link,
    an unreadable or oversized file) is there, so a bundle is never proven unchanged wrongly."""
    found: dict[str, bytes] = {}
    total = 0
    for directory, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            path = Path(directory) / name
            if path.is_symlink():
                return None
        for name in files:
            path = Path(directory) / name
            try:
                data = path.read_bytes()
            except OSError:
                return None
            total += len(data)
            if total > _MAX_BUNDLE_READ_BYTES:
                return None
            found[path.relative_to(root).as_posix()] = data
    return found


def files_digest(files: Mapping[str, bytes]) -> str:
    """``sha256:`` over the sorted ``[[path, sha256hex], ...]`` list (the loader's digest of the
    same files: an unchanged bundle reports the loader's own value)."""
    listing = [[path, hashlib.sha256(files[path]).hexdigest()] for path in sorted(files)]
    encoded = json.dumps(listing, separators=(",", ":"), ensure_ascii=False).encode()
    return "sha256:" + hashlib.sha256(encoded).hexdigest()


def bundle_report(bundle: ExtensionBundle, root: Path) -> dict[str, JsonValue]:
    """One bundle's entry in ``sevro.host.runtime-profile``."""
    after = files_after(root)
    unchanged = after is not None and after == dict(bundle.files)
    digest_after: str | None = None
    if unchanged:
        digest_after = bundle.digest
    elif after is not None:
        digest_after = files_digest(after)
    return {
        "entry": bundle.entry,
        "digest": bundle.digest,
        "digestAfter": digest_after,
        "unchanged": unchanged,
    }


def environment(profile: RuntimeProfile | None, environ: Mapping[str, str]) -> dict[str, str]:
    """The profile's literal values and inherited variables for pi's environment; an inherited
    variable unset now fails the trial (the loader checked it was set at load)."""
    if profile is None:
        return {}
    found = dict(profile.literal)
    for name in profile.inherit:
        value = environ.get(name)
        if value is None:
            raise HostFailure(f"missing inherited variable {name} invalidates the variant")
        found[name] = value
    return found


@frozen
class TurnOffer:
    """What the observer saw one turn offer: the tools of each model request."""

    turn: int
    tools: tuple[tuple[str, ...], ...] | None
    """None when the turn's observer records are missing or unreadable."""


def runtime_observation_data(
    profile: HostProfile,
    offers: Sequence[TurnOffer],
    bundles: Sequence[dict[str, JsonValue]],
    expected_turns: int,
) -> tuple[Completeness, dict[str, JsonValue]]:
    """``sevro.host.runtime-profile``: complete only when every turn was observed, every bundle
    is unchanged and every request offered exactly the declared tools (when declared)."""
    runtime = profile.runtime
    assert runtime is not None
    declared = profile.tools
    complete = len(offers) == expected_turns and all(b["unchanged"] is True for b in bundles)
    offered: list[JsonValue] = []
    for offer in offers:
        if offer.tools is None or not offer.tools:
            offered.append(None)
            complete = False
            continue
        offered.append(list(offer.tools[0]))
        if declared is not None and any(set(t) != set(declared) for t in offer.tools):
            complete = False
        if any(set(t) != set(offer.tools[0]) for t in offer.tools):
            complete = False
    env = runtime.to_json()["environment"]
    data: dict[str, JsonValue] = {
        "host": runtime.host,
        "session": runtime.session,
        "tools": {"declared": None if declared is None else list(declared), "offered": offered},
        "extensions": list(bundles),
        "environment": env,
    }
    return (Completeness.COMPLETE if complete else Completeness.PARTIAL), data
