"""Docs are tested where they show commands: every ``sh`` block in README and docs runs as a
reader would paste it, in a fresh shell at the root of a copy of this checkout.

The copy is set up with ``bash scripts/setup`` (its own ``.venv``; the pinned agent CLIs are
linked, not installed again). Each block runs in ``bash -euo pipefail`` with the login
environment minus every ``SEVRO_*`` variable, the copy's ``.venv/bin`` first on ``PATH`` and
``TMPDIR`` in the test's tmp_path, so a block that needs a variable or a path it does not make
itself fails. A block that cannot run here is
marked ``<!-- sevro-doc-test: skip REASON -->``, and each reason is checked for what it claims.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from attrs import frozen

from sevro_core.testing import require_sandbox, require_tool

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted((ROOT / "docs").rglob("*.md"))
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *DOCS]
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.DOTALL)
SHELL_BLOCK = re.compile(
    r"^(?:<!-- sevro-doc-test: skip (?P<reason>[a-z-]+) -->\n)?```sh\n(?P<body>.*?)^```$",
    re.MULTILINE | re.DOTALL,
)
CREDENTIAL_FLAGS = ("--codex-api-key-env", "--claude-api-key-env", "--pi-api-key-env")
FROM_THE_TEST_RUN = ("SEVRO_", "PYTEST_", "COV_")
"""Variables a reader's shell would not have: the blocks get the login environment otherwise."""
MOCK_TESTED = {"docs/hosts/codex.md", "docs/hosts/claude.md", "docs/hosts/pi.md"}
"""Pages whose credential blocks run in tests/test_examples.py with the mock model instead."""


@frozen
class ShellBlock:
    where: str
    body: str
    skip: str | None


def shell_blocks() -> list[ShellBlock]:
    found = []
    for page in PAGES:
        text = page.read_text("utf-8")
        assert text.count("<!-- sevro-doc-test") == len(
            re.findall(r"<!-- sevro-doc-test: skip [a-z-]+ -->\n```sh\n", text)
        ), f"{page}: a doc-test marker must be 'skip REASON' right above a sh block"
        for match in SHELL_BLOCK.finditer(text):
            line = text.count("\n", 0, match.start("body"))
            found.append(
                ShellBlock(f"{page.relative_to(ROOT)}:{line}", match["body"], match["reason"])
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


def test_every_shell_block_is_found() -> None:
    blocks = shell_blocks()
    fenced = sum(page.read_text("utf-8").count("```sh\n") for page in PAGES)
    assert len(blocks) == fenced
    assert not any("SEVRO_DOC_TMP" in block.body for block in blocks)


def test_skipped_blocks_are_skipped_for_the_reason_they_give() -> None:
    readme_commands = ROOT / ".ci" / "run"
    for block in shell_blocks():
        page = block.where.split(":")[0]
        if block.skip is None:
            continue
        if block.skip == "needs-credentials":
            # a real account; tests/test_examples.py runs the page's example with the mock model
            assert any(flag in block.body for flag in CREDENTIAL_FLAGS), block
            assert page in MOCK_TESTED, block
        elif block.skip == "runs-the-test-suite":
            # running the suite inside the suite would recurse; CI runs this line verbatim
            (command,) = [line for line in block.body.splitlines() if not line.startswith("#")]
            assert command in readme_commands.read_text().splitlines(), block
        elif block.skip == "benchmark":
            # timings are measured in benchmarks/, never in the tests
            script = re.search(r"benchmarks/\S+\.py", block.body)
            assert script and (ROOT / script.group(0)).is_file(), block
        else:
            pytest.fail(f"{block.where}: unknown skip reason {block.skip!r}")


def _copy_checkout(target: Path) -> None:
    """A clone of the working tree as Git sees it (tracked and untracked files, nothing
    ignored), committed, so uncommitted changes are tested too."""
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if name == ".agent-clis" or not source.exists() or source.is_dir():
            continue
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target / name, follow_symlinks=False)
    git = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    for argv in (
        ["git", "init", "-q"],
        ["git", "add", "-A"],
        [
            "git",
            "-c",
            "user.name=doc",
            "-c",
            "user.email=doc@example.invalid",
            "commit",
            "-qm",
            ".",
        ],
    ):
        subprocess.run(argv, cwd=target, env=git, check=True, capture_output=True)
    clis = ROOT / ".agent-clis"
    if clis.exists():
        (target / ".agent-clis").symlink_to(clis.resolve())


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    require_tool("git")
    require_sandbox()  # the blocks run scripted hosts and shell checks in the sandbox
    root = tmp_path_factory.mktemp("clone") / "sevro"
    root.mkdir()
    _copy_checkout(root)
    done = _paste(root, "bash scripts/setup", tmp_path_factory.mktemp("tmp"))
    assert done.returncode == 0, done.stdout + done.stderr
    yield root


def _paste(clone: Path, script: str, tmpdir: Path) -> subprocess.CompletedProcess[str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(FROM_THE_TEST_RUN) and name not in ("VIRTUAL_ENV", "PYTHONPATH")
    }
    env["PATH"] = f"{clone / '.venv' / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    env["TMPDIR"] = str(tmpdir)  # mktemp -d in a block lands in the test's tmp_path
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


RUNNABLE = [block for block in shell_blocks() if block.skip is None]


@pytest.mark.slow
@pytest.mark.parametrize("block", RUNNABLE, ids=[block.where for block in RUNNABLE])
def test_shell_block_runs_as_pasted(block: ShellBlock, clone: Path, tmp_path: Path) -> None:
    done = _paste(clone, block.body, tmp_path)
    assert done.returncode == 0, f"{block.where}\n{block.body}\n{done.stdout}\n{done.stderr}"
    if block.where.startswith("README.md"):
        # the first screen's quickstart: both cases pass and the evidence is named
        lines = done.stdout.splitlines()
        rows = {line.split()[0]: line.split()[-1] for line in lines[2:4]}
        assert rows == {"greeting": "passed", "summary": "passed"}, done.stdout
        evidence = Path(lines[-1].removeprefix("evidence="))
        assert evidence.is_file() and evidence.name == "run.json"
        assert evidence.is_relative_to(clone / "sevro-results")


def test_schema_links_resolve() -> None:
    schemas = ROOT / "docs" / "schemas"
    for link in schemas.iterdir():
        assert link.resolve().is_file(), link
        json.loads(link.read_text())
    packaged = {p.name for p in (ROOT / "sevro_core/src/sevro_core/schemas").glob("*.json")}
    assert packaged <= {p.name for p in schemas.iterdir()}
