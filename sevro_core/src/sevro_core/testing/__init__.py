"""sevro's test kit, a pytest plugin (entry point ``pytest11: sevro``).

Plugin authors get the fixtures sevro's own tests use: a temporary project, helpers to write
cases and scripted-host configurations, and a runner for the real ``sevro`` CLI in a subprocess.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from attrs import frozen

# The in-process kit (one module per concept; see docs/plugins.md, "Testing your plugin").
from sevro_core.testing.background import SevroProcess as SevroProcess
from sevro_core.testing.background import start_sevro as start_sevro
from sevro_core.testing.cliresult import CliResult as CliResult
from sevro_core.testing.grading import grade as grade
from sevro_core.testing.inprocess import run_in_process as run_in_process
from sevro_core.testing.plugins import ScopedPlugins as ScopedPlugins
from sevro_core.testing.plugins import sevro_plugins as sevro_plugins
from sevro_core.testing.processes import FakeProcess as FakeProcess
from sevro_core.testing.processes import ProcessCall as ProcessCall
from sevro_core.testing.processes import ProcessLog as ProcessLog
from sevro_core.testing.processes import fake_processes as fake_processes
from sevro_core.testing.processes import patch_processes as patch_processes
from sevro_core.testing.sandboxes import trial_isolation as trial_isolation
from sevro_core.testing.views import observation as observation
from sevro_core.testing.views import trial_view as trial_view


def require_tool(name: str) -> str:
    """Return the path of ``name``; skip when missing locally, fail when ``CI=true``."""
    found = shutil.which(name)
    if found is None:
        message = f"{name} is not installed"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{message}; CI must install it (.ci/run)")
        pytest.skip(message)
    return found


AGENT_CLIS_PREFIX = ".agent-clis"
"""Where scripts/setup installs the pinned agent CLIs (an npm prefix)."""


def require_agent_cli(name: str, env: str, what: str) -> str:
    """An agent CLI for real-CLI tests: ``$<env>``, else PATH, else a repo-local npm prefix
    (``.agent-clis``, made by scripts/setup) above the working directory; skip locally, fail in
    CI. Host distributions wrap it (``sevro_hosts_<name>.testing``)."""
    configured = os.environ.get(env)
    if configured:
        if not Path(configured).is_file():
            pytest.fail(f"{env}={configured} is not a file")
        return configured
    found = shutil.which(name)
    if found is not None:
        return found
    for directory in (Path.cwd(), *Path.cwd().parents):
        local = directory / AGENT_CLIS_PREFIX / "node_modules" / ".bin" / name
        if local.is_file():
            return str(local)
    message = f"the {what} CLI is not installed (set {env} or put {name} on PATH)"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{message}; CI must install it (.ci/run)")
    pytest.skip(message)


def require_sandbox() -> str:
    """The sandbox tool this platform's backend needs (bwrap, sandbox-exec), as ``require_tool``.

    Tests that run host commands or shell checks need one: without it those fail by design.
    """
    return require_tool("sandbox-exec" if sys.platform == "darwin" else "bwrap")


CHROMIUM = "/usr/bin/chromium"
"""The browser the viewer's browser tests drive (Debian's Chromium; scripts/setup installs it)."""


def require_chromium() -> str:
    """Chromium and Playwright for the viewer's browser tests; skip when missing locally, fail
    when ``CI=true``."""
    import importlib.util

    missing = [
        what
        for what, present in (
            (f"Chromium ({CHROMIUM})", Path(CHROMIUM).is_file()),
            ("Playwright for Python", importlib.util.find_spec("playwright") is not None),
        )
        if not present
    ]
    if missing:
        message = f"{' and '.join(missing)} not installed"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{message}; CI must install it (scripts/setup)")
        pytest.skip(message)
    return CHROMIUM


@frozen
class SevroProject:
    """A temporary project directory with its own results root."""

    root: Path

    @property
    def results(self) -> Path:
        return self.root / "results"

    def write_json(self, relative: str, value: Any) -> Path:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")
        return path

    def case(self, relative: str = "case.json", **fields: Any) -> Path:
        """Write a case file; unspecified fields get a minimal valid default."""
        case = {
            "id": "example",
            "prompt": "Return ready.",
            "fixture": {"files": {}},
            "checks": [],
            "requiredEvidence": [],
        }
        case.update(fields)
        return self.write_json(relative, case)

    def skill(
        self, relative: str, name: str, description: str, body: str = "", **resources: str
    ) -> Path:
        """Write a skill bundle: ``SKILL.md`` with its front matter, and resource files."""
        bundle = self.root / relative
        bundle.mkdir(parents=True, exist_ok=True)
        front = f"---\nname: {name}\ndescription: {description}\n---\n"
        (bundle / "SKILL.md").write_text(front + body, encoding="utf-8")
        for path, content in resources.items():
            (bundle / path).parent.mkdir(parents=True, exist_ok=True)
            (bundle / path).write_text(content, encoding="utf-8")
        return bundle

    def script(
        self,
        relative: str = "host.json",
        *,
        default: Sequence[Sequence[Mapping[str, Any]]] | None = None,
        cases: Mapping[str, Sequence[Sequence[Mapping[str, Any]]]] | None = None,
    ) -> Path:
        """Write a scripted-host configuration: turns of steps, per case or as a default."""
        config: dict[str, Any] = {"format": "sevro.scripted-host.v1"}
        if default is not None:
            config["default"] = {"turns": [list(t) for t in default]}
        if cases is not None:
            config["cases"] = {k: {"turns": [list(t) for t in v]} for k, v in cases.items()}
        return self.write_json(relative, config)

    def sevro(
        self,
        *args: str | Path,
        env: Mapping[str, str] | None = None,
        timeout: float = 120,
        cwd: Path | None = None,
    ) -> CliResult:
        """Run the real CLI (``python -m sevro_core``) in a subprocess."""
        completed = subprocess.run(
            [sys.executable, "-m", "sevro_core", *map(str, args)],
            cwd=cwd or self.root,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, **(env or {})},
            check=False,
        )
        return CliResult(completed.returncode, completed.stdout, completed.stderr)

    def run(self, *args: str | Path, **kwargs: Any) -> CliResult:
        """``sevro run ... --json --results-root <project>/results``."""
        return self.sevro("run", *args, "--json", "--results-root", self.results, **kwargs)


@pytest.fixture
def sevro_project(tmp_path: Path) -> SevroProject:
    """A fresh project directory for one test."""
    root = tmp_path / "project"
    root.mkdir()
    return SevroProject(root.resolve())


@pytest.fixture
def mock_model() -> Iterator[Callable[..., Any]]:
    """Start ``MockModelServer(replies)`` servers for one test; all stop at teardown."""
    from sevro_core.testing.mockmodel import MockModelServer

    servers: list[MockModelServer] = []

    def start(replies: Sequence[Any], **kwargs: Any) -> MockModelServer:
        server = MockModelServer(replies, **kwargs).__enter__()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


@pytest.fixture
def reply(sevro_project: SevroProject) -> Callable[[str], Path]:
    """Write a scripted-host config whose default turn replies with ``text``."""

    def make(text: str) -> Path:
        return sevro_project.script(default=[[{"reply": {"text": text}}]])

    return make
