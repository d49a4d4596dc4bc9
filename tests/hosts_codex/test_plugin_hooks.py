"""Plugin hook declarations as the Codex host curates them: every declaration place is read,
left out of what is installed, and checked; what sevro cannot run as declared is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sevro_hosts_codex.limits import MAX_CODEX_PLUGIN_HOOK_TIMEOUT_SECONDS
from sevro_hosts_codex.pluginhooks import HookRefused, curate, executions

MANIFEST = (".codex-plugin", "plugin.json")


def handler(**extra: Any) -> dict[str, Any]:
    return {"type": "command", "command": "true", **extra}


def events(**extra: Any) -> dict[str, Any]:
    return {"PostToolUse": [{"matcher": "Bash", "hooks": [handler(**extra)]}]}


def files(manifest: dict[str, Any], **more: Any) -> dict[tuple[str, ...], bytes]:
    found = {MANIFEST: json.dumps({"name": "p", "version": "1", **manifest}).encode()}
    for path, value in more.items():
        data = value if isinstance(value, bytes) else json.dumps(value).encode()
        found[tuple(path.split("__"))] = data
    return found


def test_default_files_manifest_paths_and_inline_objects_are_read_and_left_out() -> None:
    found = files(
        {"hooks": ["./extra/more.json", events()], "skills": "./skills/"},
        **{"hooks__hooks.json": {"hooks": events(timeout=5)}},
        **{"hooks.json": {"description": "d", "hooks": events()}},
        **{"extra__more.json": events()},
        **{"hooks__run.sh": b"#!/bin/sh\n"},
    )
    manifest = json.loads(found[MANIFEST])
    curated, handlers = curate("p", manifest, found)
    assert len(handlers) == 4 and {h.timeout for h in handlers} == {5, 60}
    assert all(h.plugin == "p" and h.matcher == "Bash" for h in handlers)
    assert ("hooks", "hooks.json") not in curated and ("hooks.json",) not in curated
    assert ("extra", "more.json") not in curated and ("hooks", "run.sh") in curated
    assert "hooks" not in json.loads(curated[MANIFEST])
    assert json.loads(curated[MANIFEST])["skills"] == "./skills/"


def test_a_plugin_without_hooks_is_installed_unchanged() -> None:
    found = files({}, **{"skills__s__SKILL.md": b"---\nname: s\n---\nbody\n"})
    curated, handlers = curate("p", json.loads(found[MANIFEST]), found)
    assert curated == found and handlers == ()


@pytest.mark.parametrize(
    ("manifest", "more", "reason"),
    [
        ({"hooks": "./absent.json"}, {}, "does not hold"),
        ({"hooks": "../outside.json"}, {}, "must be a ./path"),
        ({"hooks": 3}, {}, "must be a ./path, an object"),
        ({}, {"hooks.json": b"{"}, "is not JSON"),
        ({"hooks": {"Notification": []}}, {}, "'Notification' is not supported"),
        ({"hooks": {"Stop": {}}}, {}, "list of matcher groups"),
        ({"hooks": {"Stop": [{"hooks": [], "x": 1}]}}, {}, "only matcher and hooks"),
        ({"hooks": {"Stop": [{"matcher": 1, "hooks": []}]}}, {}, "matcher must be a string"),
        ({"hooks": events(type="http")}, {}, "handler type 'http' is not supported"),
        ({"hooks": events(command=["a", "b"])}, {}, "exec-form arguments"),
        ({"hooks": events(args=["x"])}, {}, "exec-form arguments"),
        ({"hooks": events(**{"async": True})}, {}, "asynchronous"),
        ({"hooks": events(once=True)}, {}, "unknown key 'once'"),
        ({"hooks": events(timeout=0)}, {}, "timeout must be 1 to"),
        ({"hooks": events(timeout=MAX_CODEX_PLUGIN_HOOK_TIMEOUT_SECONDS + 1)}, {}, "timeout"),
        ({"hooks": events(command=" ")}, {}, "1 to 8192 characters"),
        ({}, {"agents__a.md": b"---\nname: a\nhooks:\n  Stop: []\n---\n"}, "frontmatter"),
    ],
)
def test_what_sevro_cannot_run_as_declared_is_refused(
    manifest: dict[str, Any], more: dict[str, Any], reason: str
) -> None:
    found = files(manifest, **more)
    with pytest.raises(HookRefused, match=reason):
        curate("p", json.loads(found[MANIFEST]), found)


def test_execution_records_are_read_and_an_unreadable_one_makes_them_partial(
    tmp_path: Path,
) -> None:
    record = json.dumps({"plugin": "p", "event": "Stop", "handler": 0})
    (tmp_path / "1-1.rec").write_text(f"{record}\t0\t1000000000\t1500000000\n")
    (tmp_path / "2-2.rec").write_text(f"{record}\t137\t2000000000\t4100000000\n")
    completeness, found = executions(tmp_path, {("p", "Stop", 0): 2})
    assert completeness.value == "complete"
    assert [(e["exitCode"], e["timedOut"], e["durationMs"]) for e in found] == [  # type: ignore[index]
        (0, False, 500),
        (137, True, 2100),
    ]
    (tmp_path / "3-3.rec").write_text("garbage")
    assert executions(tmp_path, {("p", "Stop", 0): 2})[0].value == "partial"
    assert executions(tmp_path / "absent", {})[0].value == "unavailable"
