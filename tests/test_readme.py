"""The README's two commands: the first is run exactly as written; CI runs the second."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from sevro_core.testing import require_sandbox

ROOT = Path(__file__).resolve().parent.parent


def readme_commands() -> list[str]:
    blocks = re.findall(r"```sh\n(.*?)```", (ROOT / "README.md").read_text(), re.DOTALL)
    commands = []
    for block in blocks[:2]:
        lines = [line for line in block.splitlines() if line and not line.startswith("#")]
        assert len(lines) == 1, block
        commands.append(lines[0])
    return commands


def test_readme_first_screen_has_both_commands() -> None:
    text = (ROOT / "README.md").read_text()
    first_screen = "\n".join(text.splitlines()[:30])
    for command in readme_commands():
        assert command in first_screen


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert readme_commands()[1] in ci


@pytest.mark.slow
def test_quickstart_command_runs_as_written() -> None:
    require_sandbox()  # the quickstart's scripted host runs a command in the sandbox
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", readme_commands()[0]],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (ROOT / ".venv" / "bin" / "sevro").exists()
    lines = done.stdout.splitlines()
    assert lines[2].split()[0] == "greeting" and lines[2].split()[-1] == "passed", done.stdout
    assert lines[3].split()[0] == "summary" and lines[3].split()[-1] == "passed", done.stdout
    evidence = Path(lines[-1].removeprefix("evidence="))
    assert evidence.is_file() and evidence.name == "run.json"
