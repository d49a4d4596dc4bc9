"""`sevro --version` / `-V`: versions of sevro and its plugin distributions, no plugin loaded."""

from __future__ import annotations

from importlib import metadata

from sevro_core.testing import SevroProject
from tests.e2e.test_startup import imported_modules


def test_version_names_sevro_and_installed_plugins(sevro_project: SevroProject) -> None:
    done = sevro_project.sevro("--version")
    assert done.exit_code == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"sevro {metadata.version('sevro-core')}"
    for dist in (
        "sevro-graders",
        "sevro-sandbox",
        "sevro-hosts-codex",
        "sevro-hosts-claude",
        "sevro-hosts-pi",
        "sevro-executor-ray",
    ):
        assert f"  {dist} {metadata.version(dist)}" in lines
    assert lines[-1].startswith("  python ")
    assert sevro_project.sevro("-V").stdout == done.stdout


def test_version_imports_no_plugin() -> None:
    modules = imported_modules("--version")
    assert (
        not {"pluggy", "sevro_core.plugin.manager", "sevro_graders", "jsonschema", "rich"} & modules
    )
