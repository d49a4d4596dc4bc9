"""Command-line values refused before any command parses them."""

from __future__ import annotations

from pathlib import Path

import pytest

from sevro_core.arguments import check_arguments, check_results_root, check_writable_directory
from sevro_core.errors import InvocationError


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "case.json", "--model", "gpt-5.1", "--effort=high", "-v", "--json"],
        ["run", "cases/", "--results-root", "out", "--", "more.json"],
        ["report", "runs/x", "--details"],
        ["run", "c.json", "--model", "claude-sonnet-4-5@2025-09-29"],
    ],
)
def test_ordinary_command_lines_pass(argv: list[str]) -> None:
    check_arguments(argv)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", ""], "an argument must not be empty"),
        (["run", "c.json", "--results-root", ""], "--results-root must not be empty"),
        (["run", "c.json", "--results-root="], "--results-root must not be empty"),
        (["run", "c.json", "--workspace-root", "  "], "--workspace-root must not be empty"),
        (["run", "c.json", "--model", "a\nb"], "--model must be one line of printable text"),
        (["run", "c.json", "--model=a\tb"], "--model must be one line of printable text"),
        (["run", "c.json", "--effort", "high "], "--effort must be one line of printable text"),
        (["run", "c.json", "--model", "x" * 201], "--model is longer than 200 characters"),
        (["run", "c.json", "--model", "a\x00b"], "--model must be one line of printable text"),
    ],
)
def test_values_no_command_could_mean_are_refused(argv: list[str], message: str) -> None:
    with pytest.raises(InvocationError) as info:
        check_arguments(argv)
    assert info.value.message.startswith(message)
    assert "\n" not in info.value.one_line()


def test_unwritable_directories_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    check_writable_directory(tmp_path, "--workspace-root")
    check_results_root(tmp_path / "new" / "results")
    with pytest.raises(InvocationError, match="--workspace-root is not a directory"):
        check_writable_directory(tmp_path / "missing", "--workspace-root")
    (tmp_path / "file").write_text("")
    with pytest.raises(InvocationError, match="exists and is not a directory"):
        check_results_root(tmp_path / "file")
    monkeypatch.setattr("os.access", lambda path, mode: False)  # a read-only mount, as root
    with pytest.raises(InvocationError, match="--workspace-root is not writable"):
        check_writable_directory(tmp_path, "--workspace-root")
    with pytest.raises(InvocationError, match=r"cannot be created or written \(.* is not writable"):
        check_results_root(tmp_path / "new" / "results")
