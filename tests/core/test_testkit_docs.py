"""docs/plugins.md "Testing your plugin": its example runs as a plugin author's test file, and
fails when the grader it tests is wrong (so the example can fail)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import sevro_core.testing

PAGE = Path(__file__).resolve().parents[2] / "docs" / "plugins.md"
HEADING = "## Testing your plugin"


def section() -> str:
    text = PAGE.read_text("utf-8")
    start = text.index(HEADING)
    following = text.find("\n## ", start + len(HEADING))
    return text[start : None if following == -1 else following]


def example() -> str:
    (block,) = re.findall(r"```python\n(.*?)```", section(), re.DOTALL)
    return block


def run_example(source: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_acme.py").write_text(source, encoding="utf-8")
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_acme.py"],
        cwd=tmp_path,
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_example_passes_as_written(tmp_path: Path) -> None:
    done = run_example(example(), tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout


def test_the_example_fails_when_the_grader_is_wrong(tmp_path: Path) -> None:
    broken = example().replace(".isupper()", ".islower()")
    assert broken != example()
    done = run_example(broken, tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "2 failed" in done.stdout


def test_every_helper_the_section_names_exists() -> None:
    named = {"grade", "trial_view", "observation", "sevro_plugins", "run_in_process"}
    named |= {"fake_processes", "FakeProcess", "ProcessLog", "start_sevro", "CliResult"}
    named |= {"trial_isolation"}
    text = section()
    for name in named:
        assert f"`{name}" in text, name
        assert hasattr(sevro_core.testing, name), name
