"""Docs are tested where they show commands: marked shell blocks run exactly as written."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from sevro_core.testing import require_sandbox

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted((ROOT / "docs").rglob("*.md"))
MARKER = "<!-- sevro-doc-test -->"
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.DOTALL)


def marked_blocks() -> list[tuple[str, str]]:
    found = []
    for doc in DOCS:
        text = doc.read_text()
        for part in text.split(MARKER)[1:]:
            match = BLOCK.search(part)
            assert match and part.lstrip().startswith("```sh"), f"{doc}: marker without sh block"
            found.append(
                (
                    f"{doc.relative_to(ROOT)}:{text.count(chr(10), 0, text.index(part))}",
                    match.group(2),
                )
            )
    return found


def test_every_doc_is_linked_from_the_index() -> None:
    index = (ROOT / "docs" / "README.md").read_text()
    for doc in DOCS:
        if doc.name != "README.md":
            assert str(doc.relative_to(ROOT / "docs")) in index, doc


@pytest.mark.parametrize("where", ["json"])
def test_json_blocks_are_valid_json(where: str) -> None:
    for doc in DOCS:
        for lang, body in BLOCK.findall(doc.read_text()):
            if lang == where:
                json.loads(body)


def test_doc_commands_run_as_written(tmp_path: Path) -> None:
    require_sandbox()  # the quickstart's commands and security.md's checks run sandboxed
    blocks = marked_blocks()
    assert blocks, "no marked doc commands found"
    env = {**os.environ, "SEVRO_DOC_TMP": str(tmp_path)}
    for where, script in blocks:
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, f"{where}\n{script}\n{done.stdout}\n{done.stderr}"


def test_schema_links_resolve() -> None:
    schemas = ROOT / "docs" / "schemas"
    for link in schemas.iterdir():
        assert link.resolve().is_file(), link
        json.loads(link.read_text())
    packaged = {p.name for p in (ROOT / "sevro_core/src/sevro_core/schemas").glob("*.json")}
    assert packaged <= {p.name for p in schemas.iterdir()}
