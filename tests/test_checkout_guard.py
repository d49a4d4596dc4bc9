"""The checkout guard really fails a session that writes into the checkout, and only then."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sevro_core.testing import require_tool

ROOT = Path(__file__).resolve().parent.parent


def scratch_checkout(tmp_path: Path, test_body: str) -> Path:
    """A Git work tree with one committed file, an ignored results dir and one test."""
    require_tool("git")
    root = tmp_path / "checkout"
    (root / "tests").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[tool.pytest.ini_options]\ntestpaths = ['tests']\n")
    (root / ".gitignore").write_text("sevro-results/\n__pycache__/\n.pytest_cache/\n")
    (root / "tracked.txt").write_text("base\n")
    (root / "sevro-results").mkdir()
    (root / "sevro-results" / "old.json").write_text("{}\n")
    (root / "tests" / "conftest.py").write_text('pytest_plugins = ["tests.checkout_guard"]\n')
    (root / "tests" / "test_it.py").write_text(
        "from pathlib import Path\n\nROOT = Path(__file__).resolve().parent.parent\n\n\n"
        f"def test_it(tmp_path):\n    {test_body}\n"
    )
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    for argv in (
        ["git", "init", "-q"],
        ["git", "add", "-A"],
        ["git", "-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-qm", "base"],
    ):
        subprocess.run(argv, cwd=root, env=env, check=True)
    return root


def run_pytest(root: Path) -> subprocess.CompletedProcess[str]:
    guard_dir = root.parent / "guard"
    (guard_dir / "tests").mkdir(parents=True)
    (guard_dir / "tests" / "__init__.py").write_text("")
    (guard_dir / "tests" / "checkout_guard.py").write_text(
        (ROOT / "tests" / "checkout_guard.py").read_text()
    )
    env = {**os.environ, "PYTHONPATH": str(guard_dir), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(root / "tests")],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("body", "change"),
    [
        ("(ROOT / 'sevro-results' / 'new').mkdir()", "!! sevro-results/"),
        ("(ROOT / 'sevro-results' / 'old.json').write_text('[]  ')", "!! sevro-results/"),
        ("(ROOT / 'tracked.txt').write_text('changed')", " M tracked.txt"),
        ("(ROOT / 'stray.txt').write_text('x')", "?? stray.txt"),
    ],
)
def test_a_session_that_writes_into_the_checkout_fails(
    tmp_path: Path, body: str, change: str
) -> None:
    done = run_pytest(scratch_checkout(tmp_path, body))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "the tests wrote into the checkout" in done.stdout
    assert change in done.stdout, done.stdout


def test_a_session_that_writes_only_to_tmp_path_passes(tmp_path: Path) -> None:
    done = run_pytest(scratch_checkout(tmp_path, "(tmp_path / 'x').write_text('x')"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "wrote into the checkout" not in done.stdout
