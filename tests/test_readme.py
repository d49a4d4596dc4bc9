"""The README's two commands: tests/test_docs.py runs the first as pasted in a copy of the
checkout (it writes sevro-results/ where it runs); CI runs the second."""

from __future__ import annotations

import re
from pathlib import Path

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
