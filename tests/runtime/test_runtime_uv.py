"""Issue 17, item 6: a runtime file makes a ``sevro.shell`` check run the project's own
uv-installed test runner (docs/runtime.md, "Run your project's test suite as the check").

The virtualenv is made with ``uv`` and pytest installed into it from uv's cache (or, on a fresh
machine, the package registry); the check itself runs offline. Without the runtime file the
same check finds no ``uv`` (127)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sevro_core.isolation.runtime import SYSTEM_TREES
from sevro_core.testing import SevroProject, require_sandbox, require_tool
from tests.e2e.helpers import trial_evidence

PROJECT = {
    "pyproject.toml": (
        '[project]\nname = "demo"\nversion = "0"\nrequires-python = ">=3.9"\n\n'
        '[tool.pytest.ini_options]\npythonpath = ["."]\n'
    ),
    "demo.py": "def add(a, b):\n    return a + b\n",
    "tests/test_demo.py": "from demo import add\n\n\ndef test_adds():\n    assert add(1, 2) == 3\n",
}
RECIPE = "## Run your project's test suite as the check"


def _documented() -> tuple[dict[str, Any], dict[str, Any]]:
    """The runtime file and the check docs/runtime.md shows in its recipe: tested as written."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "runtime.md").read_text("utf-8")
    section = page.split(RECIPE, 1)[1].split("\n## ", 1)[0]
    runtime, check = (json.loads(b) for b in re.findall(r"```json\n(.*?)```", section, re.S))
    return runtime, check


RUNTIME, CHECK = _documented()


def _missing(message: str) -> None:
    """A missing prerequisite: fail in CI, skip locally (as ``require_tool``)."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{message}; CI must provide it (.ci/run)")
    pytest.skip(message)


def real_uv() -> Path:
    """uv's own binary: a version manager's shim (pyenv's is a shell script) runs only where
    its home is readable, which no sandbox grants."""
    found = Path(require_tool("uv")).resolve()
    if not found.read_bytes().startswith(b"#!"):
        return found
    which = subprocess.run(["pyenv", "which", "uv"], capture_output=True, text=True, check=False)
    if which.returncode != 0:
        _missing(f"uv at {found} is a shim that does not name its binary")
    return Path(which.stdout.strip()).resolve()


def _uv(step: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(step, capture_output=True, text=True, check=False, timeout=180)


def uv_venv(uv: Path, venv: Path) -> None:
    """A virtualenv of this interpreter with pytest installed by uv: from its cache, offline,
    where the cache holds pytest's index page; otherwise from the package registry (a fresh
    machine's ``uv sync`` of the lock file never fetched that page)."""
    made = _uv([str(uv), "venv", "--offline", "--quiet", "--python", sys.executable, str(venv)])
    if made.returncode != 0:
        _missing(f"uv venv failed offline: {made.stderr.strip()[:300]}")
    install = [str(uv), "pip", "install", "--quiet", "--python", str(venv), "pytest"]
    if _uv([*install, "--offline"]).returncode == 0:
        return
    online = _uv(install)
    if online.returncode != 0:
        _missing(f"uv pip install pytest failed (cache and registry): {online.stderr[:300]}")


def interpreter_root() -> list[str]:
    """The installation the virtualenv's python links to, unless a system tree shows it."""
    base = Path(sys.base_prefix).resolve()
    return [] if any(base.is_relative_to(t) for t in SYSTEM_TREES) else [str(base)]


def test_a_shell_check_runs_the_project_s_uv_installed_test_suite(
    sevro_project: SevroProject, tmp_path: Path
) -> None:
    require_sandbox()
    uv = real_uv()
    venv = tmp_path.resolve() / "venv"
    uv_venv(uv, venv)
    case = sevro_project.case(fixture={"files": PROJECT}, checks=[CHECK])
    host = sevro_project.script(default=[[{"reply": {"text": "done"}}]])
    env = {"PATH": f"{uv.parent}:/usr/bin:/bin"}

    without = sevro_project.run(case, "--host-config", host, env=env)
    assert without.exit_code == 1, without.stdout + without.stderr
    evidence = trial_evidence(without.json())
    assert [c["status"] for c in evidence["checks"]] == ["failed"]
    observations = {o["id"]: o["data"] for o in evidence["observations"]}
    assert observations["sevro.observation.shell.suite"]["exitCode"] == 127

    runtime = json.loads(json.dumps(RUNTIME))
    runtime["environment"]["set"]["UV_PROJECT_ENVIRONMENT"] = str(venv)
    runtime["filesystem"]["readOnlyRoots"] += interpreter_root()
    (sevro_project.root / "sevro.json").write_text(json.dumps(runtime))
    done = sevro_project.run(case, "--host-config", host, env=env)
    assert done.exit_code == 0, done.stdout + done.stderr
    evidence = trial_evidence(done.json())
    assert [c["status"] for c in evidence["checks"]] == ["passed"]

    broken = {**PROJECT, "demo.py": "def add(a, b):\n    return a - b\n"}
    failing = sevro_project.case("failing.json", fixture={"files": broken}, checks=[CHECK])
    failed = sevro_project.run(failing, "--host-config", host, env=env)
    assert failed.exit_code == 1, "the control: the suite really ran and can fail"
    observations = {o["id"]: o["data"] for o in trial_evidence(failed.json())["observations"]}
    assert observations["sevro.observation.shell.suite"]["exitCode"] == 1
