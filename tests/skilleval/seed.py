"""The skill-eval seed's examples as files in a real Git repository with the refs they name.

``skills/target`` has three versions: ``before-body-change`` (old description, old body),
``before-description-change`` (old description, new body) and the working tree (new
description, new body), so the description group's targets differ only in ``description`` and
the body group's in their body. ``skills/support``, ``fixtures/task`` and
``context/contract.md`` are the other paths the examples name.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from sevro_core.fixtures.git import Git
from sevro_core.testing import require_tool

OLD_DESCRIPTION = "Prepares deployment rollbacks."
NEW_DESCRIPTION = "Use when asked to prepare a deployment rollback or revert a release."
OLD_BODY = "# Rollback\nRevert the last release.\n"
NEW_BODY = "# Rollback\nWrite result.json with status complete.\n"


def skill(description: str, body: str, name: str = "target") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n{body}"


def common_group() -> dict[str, Any]:
    """The seed's "Common Group Shape"."""
    return {
        "schema_version": 1,
        "kind": "group",
        "id": "one-behavioral-question",
        "type": "description",
        "input": {"prompt": "Natural task prompt."},
        "fixture": None,
        "tools": ["read"],
        "variants": {
            "baseline": {
                "source": {"kind": "working-tree"},
                "skills": [],
                "target": None,
                "context": [],
            },
            "candidate": {
                "source": {"kind": "working-tree"},
                "skills": ["skills/target"],
                "target": 0,
                "context": [],
            },
        },
        "expectations": [],
        "review_questions": [],
        "model": {"model": "openai-codex/gpt-5.6-sol", "thinking": "low"},
    }


def description_group() -> dict[str, Any]:
    """The seed's "Description Group Example"."""
    return {
        "schema_version": 1,
        "kind": "group",
        "id": "natural-activation",
        "type": "description",
        "input": {
            "turns": ["Help me inspect this ordinary change.", "Now prepare a deployment rollback."]
        },
        "fixture": None,
        "tools": ["read"],
        "variants": {
            "baseline": {
                "source": {"kind": "git", "ref": "before-description-change"},
                "skills": ["skills/target"],
                "target": 0,
                "context": [],
            },
            "candidate": {
                "source": {"kind": "working-tree"},
                "skills": ["skills/target"],
                "target": 0,
                "context": [],
            },
        },
        "expectations": [
            {
                "id": "baseline-read-by-two",
                "kind": "skill-read",
                "variant": "baseline",
                "expect": "by-turn",
                "turn": 2,
                "comparison": "target-read-by-two",
            },
            {
                "id": "candidate-read-by-two",
                "kind": "skill-read",
                "variant": "candidate",
                "expect": "by-turn",
                "turn": 2,
                "comparison": "target-read-by-two",
            },
        ],
        "review_questions": [],
    }


def body_group() -> dict[str, Any]:
    """The seed's "Body Group Example"."""
    variant = {
        "skills": ["skills/support", "skills/target"],
        "target": 1,
        "context": ["context/contract.md"],
    }
    return {
        "schema_version": 1,
        "kind": "group",
        "id": "retained-artifact-behavior",
        "type": "body",
        "input": {
            "turns": [
                "Inspect the task and prepare the work.",
                "Complete it and write result.json.",
            ]
        },
        "fixture": "fixtures/task",
        "tools": ["read", "write", "edit"],
        "variants": {
            "baseline": {
                "source": {"kind": "git", "ref": "before-body-change"},
                **copy.deepcopy(variant),
            },
            "candidate": {"source": {"kind": "working-tree"}, **copy.deepcopy(variant)},
        },
        "expectations": [
            {
                "id": "baseline-result",
                "kind": "path",
                "variant": "baseline",
                "path": "result.json",
                "turn": 2,
                "expect": "exists",
                "comparison": "result-exists",
            },
            {
                "id": "candidate-result",
                "kind": "path",
                "variant": "candidate",
                "path": "result.json",
                "turn": 2,
                "expect": "exists",
                "comparison": "result-exists",
            },
            {
                "id": "candidate-status",
                "kind": "json",
                "variant": "candidate",
                "path": "result.json",
                "turn": 2,
                "expect": "field-equals",
                "pointer": "/status",
                "value": "complete",
            },
            {
                "id": "candidate-changes",
                "kind": "changed-paths",
                "variant": "candidate",
                "turn": 2,
                "expect": "equals",
                "paths": ["result.json"],
            },
        ],
        "review_questions": [
            "Did the second turn apply the first-turn guidance without redelivery?"
        ],
    }


JSON_STATES = [
    {"id": "file-missing", "kind": "json", "variant": "candidate", "path": "missing.json",
     "expect": "missing"},
    {"id": "file-malformed", "kind": "json", "variant": "candidate", "path": "broken.json",
     "expect": "malformed"},
    {"id": "field-absent", "kind": "json", "variant": "candidate", "path": "result.json",
     "expect": "field-absent", "pointer": "/optional"},
    {"id": "field-null", "kind": "json", "variant": "candidate", "path": "result.json",
     "expect": "field-equals", "pointer": "/value", "value": None},
]  # fmt: skip
"""The seed's "JSON states" example."""

RUNTIME = {
    "runtime": {
        "host": "pi",
        "session": False,
        "extensions": [{"entry": "extensions/probe.mjs", "resources": ["extensions"]}],
        "environment": {"literal": {"PROBE_MODE": "injection-test"}, "inherit": []},
    }
}
"""The seed's "Runtime Profile" (its bundle: :func:`write_probe_bundle`)."""

PROBE = "export default function (pi) {\n  // a probe extension: registers nothing\n}\n"


def write_probe_bundle(root: Path) -> Path:
    """The seed runtime's bundle, ``extensions/probe.mjs``, under ``root``."""
    entry = root / "extensions" / "probe.mjs"
    entry.parent.mkdir(parents=True, exist_ok=True)
    entry.write_text(PROBE)
    return entry


SUITE = {
    "schema_version": 1,
    "kind": "suite",
    "id": "workflow-core",
    "groups": ["groups/natural-activation.json", "groups/body-behavior.json"],
}


def write_json(path: Path, document: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2) + "\n")
    return path


def seed_repository(root: Path) -> Path:
    """A Git repository at ``root`` with the seed's paths, refs and definition files."""
    git = Git(require_tool("git"))
    root.mkdir(parents=True, exist_ok=True)
    env = ("-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false")
    git.run("init", "-q", "-b", "main", cwd=root)
    support = root / "skills" / "support"
    support.mkdir(parents=True)
    (support / "SKILL.md").write_text(skill("Shared support notes.", "Be brief.\n", "support"))
    (root / "fixtures" / "task").mkdir(parents=True)
    (root / "fixtures" / "task" / "TASK.md").write_text("Write result.json.\n")
    (root / "context").mkdir()
    (root / "context" / "contract.md").write_text("Contract: status is complete.\n")
    target = root / "skills" / "target"
    target.mkdir(parents=True)
    for body, tag in ((OLD_BODY, "before-body-change"), (NEW_BODY, "before-description-change")):
        (target / "SKILL.md").write_text(skill(OLD_DESCRIPTION, body))
        git.run("add", "-A", cwd=root)
        git.run(*env, "commit", "-q", "-m", tag, cwd=root)
        git.run("tag", tag, cwd=root)
    (target / "SKILL.md").write_text(skill(NEW_DESCRIPTION, NEW_BODY))
    write_json(root / "groups" / "natural-activation.json", description_group())
    write_json(root / "groups" / "body-behavior.json", body_group())
    write_json(root / "groups" / "common.json", common_group())
    write_json(root / "suite.json", SUITE)
    return root
