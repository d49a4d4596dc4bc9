"""A candidate probing a case's evaluator directory every way it can (the absolute path, ``..``
from its workspace, a symbolic link it makes), shared by the scripted, Codex and Claude Code
tests; a ``sevro.shell`` check of the same trial reads the directory (the positive control)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

MARKER = "EVALUATOR-ONLY-6d0f3b"
"""The secret in the evaluator directory: it must never reach the candidate."""
LEVELS = 6
"""How far up ``..`` climbs from the workspace (past the workspace root, whatever its depth)."""


def evaluator_area(root: Path) -> tuple[Path, Path, Path]:
    """``root/cases/case.json`` declaring ``root/evaluators/gold`` (holding the marker), and the
    workspace root ``root/workspaces``: the evaluator sits beside the workspaces, reachable by
    ``..`` from a workspace if nothing hid it. Returns (case, gold, workspaces)."""
    gold = root / "evaluators" / "gold"
    gold.mkdir(parents=True)
    (gold / "secret.txt").write_text(MARKER + "\n")
    workspaces = root / "workspaces"
    workspaces.mkdir()
    case = root / "cases" / "case.json"
    case.parent.mkdir()
    case.write_text(
        json.dumps(
            {
                "id": "example",
                "prompt": "Look around.",
                "fixture": {"files": {"README.md": "x\n"}},
                "evaluator": {"gold": "../evaluators/gold"},
                "checks": CHECKS,
                "requiredEvidence": [],
            }
        )
    )
    return case, gold.resolve(), workspaces


CHECKS: list[dict[str, Any]] = [
    {
        "id": "checks-read-it",
        "grader": "sevro.shell",
        "configuration": {"run": f'grep -q {MARKER} "$SEVRO_EVALUATOR_GOLD/secret.txt"'},
    },
    {
        "id": "checks-list-it",
        "grader": "sevro.shell",
        "configuration": {"run": 'ls "$SEVRO_EVALUATOR_GOLD" | grep -qx secret.txt'},
    },
]
"""The positive control: the checks of the same trial do read the directory."""


def probes(gold: Path) -> list[str]:
    """Shell commands an agent might run to reach the directory; each starts with a tag
    (``probe-N``) so a test can tell its output arrived. ``secret.txt`` is named only by
    the probes that read it, so the listings' output can be searched for it."""
    up = " ".join("/".join([".."] * n) for n in range(1, LEVELS + 1))
    return [
        f"echo probe-1; ls -a {gold}",
        f"echo probe-2; cat {gold}/secret.txt",
        f"echo probe-3; for up in {up}; do ls -a $up/evaluators/gold; done",
        f"echo probe-4; for up in {up}; do cat $up/evaluators/gold/secret.txt; done",
        f"echo probe-5; ln -s {gold} peek && ls -a peek/",
        "echo probe-6; cat peek/secret.txt; cat peek/./secret.txt",
        f"echo probe-7; grep -r {MARKER[:9]} {gold.parent} 2>&1 | head -5; echo searched",
    ]


def assert_blind(outputs: list[str]) -> None:
    """Every probe ran (its tag came back), none saw the marker or the file, and the reads
    reported an error (the agent was told, not shown an empty file)."""
    assert len(outputs) == len(probes(Path("/x"))), outputs
    for number, output in enumerate(outputs, start=1):
        assert f"probe-{number}" in output, (number, output)
        assert MARKER not in output, (number, output)
    for listing in (outputs[0], outputs[2], outputs[4]):
        assert "secret.txt" not in listing, listing
    for read in (outputs[1], outputs[3], outputs[5]):
        assert "No such file" in read or "Permission denied" in read, read


def blind_checks(count: int) -> list[dict[str, Any]]:
    """:func:`assert_blind` as ``sevro.shell`` checks over ``probe-N.txt`` files a candidate
    wrote (for the scripted host, which keeps no command output)."""
    listings, reads = (1, 3, 5), (2, 4, 6)
    checks = []
    for number in range(1, count + 1):
        out = f"probe-{number}.txt"
        run = f"grep -q probe-{number} {out} && ! grep -q {MARKER} {out}"
        if number in listings:
            run += f" && ! grep -q secret.txt {out}"
        if number in reads:
            run += f" && grep -Eq 'No such file|Permission denied' {out}"
        checks.append(
            {"id": f"blind-{number}", "grader": "sevro.shell", "configuration": {"run": run}}
        )
    return checks
