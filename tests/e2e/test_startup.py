"""`sevro --help` must not import plugin discovery, jsonschema, structlog or rich."""

from __future__ import annotations

import subprocess
import sys


def imported_modules(*args: str) -> set[str]:
    code = (
        "import sys, runpy; sys.argv = ['sevro', *sys.argv[1:]]\n"
        "try:\n    runpy.run_module('sevro_core', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print('\\n'.join(sorted(sys.modules)), file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, check=True
    )
    return set(done.stderr.split())


def test_help_is_lazy() -> None:
    modules = imported_modules("--help")
    heavy = {
        "jsonschema",
        "rich",
        "jinja2",  # sevro view renders its page with it
        "structlog",
        "importlib_metadata",
        "pluggy",
        "referencing",
        "sevro_core.plugin.manager",
        "sevro_core.api",  # the plugin authors' surface imports what the built-ins need
        "sevro_core.run.engine",
        "sevro_graders",
        "scipy",  # experiments/statistics imports these only when a comparison is computed
        "statsmodels",
        "numpy",
    }
    assert not heavy & modules, heavy & modules


def test_run_help_is_lazy_too() -> None:
    assert "jsonschema" not in imported_modules("run", "--help")
