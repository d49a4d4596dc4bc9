"""Plugin discovery: entry points, SEVRO_LOAD_PLUGINS, --plugin files, third-party packages."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from sevro_core.testing import SevroProject, require_tool
from tests.e2e.helpers import regex_check

CONTAINS_GRADER = textwrap.dedent("""
    from sevro_core.api import CheckOutcome, CheckStatus, ConfigurationError, hookimpl


    class Compiled:
        def __init__(self, needle):
            self.needle = needle

        def grade(self, check_id, view):
            if view.final_message is None:
                return CheckOutcome(check_id, "acme.contains", CheckStatus.UNAVAILABLE)
            ok = self.needle in view.final_message
            return CheckOutcome(check_id, "acme.contains",
                                CheckStatus.PASSED if ok else CheckStatus.FAILED)


    class Contains:
        id = "acme.contains"
        version = "2.0.0"
        stage = 10
        capabilities = frozenset()
        requires = frozenset({"sevro.observation.final-message"})

        def compile(self, configuration):
            if set(configuration) != {"needle"}:
                raise ConfigurationError("needs exactly 'needle'", "")
            return Compiled(configuration["needle"])


    @hookimpl
    def sevro_register_graders(register):
        register(Contains())


    @hookimpl
    def sevro_register_commands(app):
        @app.command("acme-hello")
        def hello():
            print("hello from acme")
""")


def test_plugins_lists_every_builtin(sevro_project: SevroProject) -> None:
    done = sevro_project.sevro("plugins", "--json")
    assert done.exit_code == 0, done.stderr
    plugins = done.json()["plugins"]
    registered = {(r["kind"], r["id"]): p for p in plugins for r in p["registers"]}
    for kind, object_id, dist in [
        ("host", "sevro.host.scripted", "sevro-core"),
        ("fixture", "sevro.fixture.inline", "sevro-core"),
        ("fixture", "sevro.fixture.generated", "sevro-core"),
        ("fixture", "sevro.fixture.repository", "sevro-core"),
        ("verdict-policy", "sevro.verdict.default", "sevro-core"),
        ("reporter", "sevro.report.markdown", "sevro-core"),
        ("grader", "sevro.regex", "sevro-graders"),
        ("grader", "sevro.output", "sevro-graders"),
        ("grader", "sevro.git-head", "sevro-graders"),
    ]:
        plugin = registered[(kind, object_id)]
        assert plugin["distribution"] == dist and plugin["version"] == "0.1.0"
        assert plugin["source"] == "entry-point"
    host = next(r for p in plugins for r in p["registers"] if r["id"] == "sevro.host.scripted")
    assert "sevro.host.continuation" in host["capabilities"]
    generated = registered[("fixture", "sevro.fixture.generated")]["registers"]
    fixture = next(r for r in generated if r["id"] == "sevro.fixture.generated")
    assert "sevro.fixture.git" in fixture["capabilities"]
    git_head = registered[("grader", "sevro.git-head")]["registers"]
    assert next(r for r in git_head if r["id"] == "sevro.git-head")["requires"] == [
        "sevro.fixture.git"
    ]
    table = sevro_project.sevro("plugins")
    assert table.exit_code == 0
    assert "sevro.host.scripted" in table.stdout and "sevro-graders 0.1.0" in table.stdout


def test_local_plugin_file_adds_a_grader_and_a_command(sevro_project: SevroProject) -> None:
    plugin = sevro_project.root / "acme.py"
    plugin.write_text(CONTAINS_GRADER)
    case = sevro_project.case(
        checks=[{"id": "n", "grader": "acme.contains", "configuration": {"needle": "blue"}}]
    )
    host = sevro_project.script(default=[[{"reply": {"text": "the sky is blue"}}]])
    done = sevro_project.run(case, "--host-config", host, "--plugin", plugin)
    assert done.exit_code == 0, done.stderr
    run = json.loads(Path(done.json()["evidencePath"]).read_text())
    assert {"id": "acme.contains", "source": f"file:{plugin}", "version": "2.0.0"} in run[
        "graders"
    ]["active"]
    without = sevro_project.run(case, "--host-config", host)
    assert without.exit_code == 64 and "unknown grader 'acme.contains'" in without.stderr
    listed = sevro_project.sevro("plugins", "--json", "--plugin", plugin).json()["plugins"]
    mine = next(p for p in listed if p["source"] == "file")
    assert mine["commands"] == ["acme-hello"]
    hello = sevro_project.sevro("--plugin", plugin, "acme-hello")
    assert hello.exit_code == 0 and hello.stdout == "hello from acme\n"


def test_broken_plugin_file_is_a_one_line_error(sevro_project: SevroProject) -> None:
    plugin = sevro_project.root / "broken.py"
    plugin.write_text("raise RuntimeError('boom')\n")
    done = sevro_project.sevro("plugins", "--plugin", plugin)
    assert done.exit_code == 64
    assert (
        done.stderr == f"sevro: error: {plugin}: plugin file failed to load: RuntimeError: boom\n"
    )


def test_duplicate_and_invalid_registrations(sevro_project: SevroProject) -> None:
    twin = sevro_project.root / "twin.py"
    twin.write_text(CONTAINS_GRADER.replace('"acme.contains"', '"sevro.regex"'))
    done = sevro_project.sevro("plugins", "--plugin", twin)
    assert done.exit_code == 64 and "grader sevro.regex is registered twice" in done.stderr
    bad = sevro_project.root / "bad.py"
    bad.write_text(CONTAINS_GRADER.replace('"acme.contains"', '"NoNamespace"'))
    done = sevro_project.sevro("plugins", "--plugin", bad)
    assert done.exit_code == 64 and "invalid id 'NoNamespace'" in done.stderr


def test_load_plugins_allow_list(sevro_project: SevroProject) -> None:
    case = sevro_project.case(checks=[regex_check("r", "ok")])
    host = sevro_project.script(default=[[{"reply": {"text": "ok"}}]])
    only_core = sevro_project.run(
        case, "--host-config", host, env={"SEVRO_LOAD_PLUGINS": "sevro-core"}
    )
    assert only_core.exit_code == 64 and "unknown grader 'sevro.regex'" in only_core.stderr
    listed = sevro_project.sevro(
        "plugins", "--json", env={"SEVRO_LOAD_PLUGINS": "sevro-core"}
    ).json()["plugins"]
    assert {p["distribution"] for p in listed} == {"sevro-core"}
    both = sevro_project.run(
        case, "--host-config", host, env={"SEVRO_LOAD_PLUGINS": "sevro-core,sevro_graders"}
    )
    assert both.exit_code == 0
    typo = sevro_project.sevro("plugins", env={"SEVRO_LOAD_PLUGINS": "sevro-core,sevro-gradrs"})
    assert typo.exit_code == 64 and "names sevro-gradrs" in typo.stderr


@pytest.mark.slow
def test_third_party_distribution_in_a_fresh_venv(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, repo_root: Path
) -> None:
    """A package with its own pyproject and entry point, installed like any third party."""
    uv = shutil.which("uv") or require_tool("uv")
    package = tmp_path / "acme-grader"
    (package / "src" / "acme_grader").mkdir(parents=True)
    (package / "src" / "acme_grader" / "__init__.py").write_text(CONTAINS_GRADER)
    (package / "pyproject.toml").write_text(
        textwrap.dedent("""
        [project]
        name = "acme-grader"
        version = "2.0.0"
        dependencies = ["sevro-core"]

        [project.entry-points.sevro]
        contains = "acme_grader"

        [build-system]
        requires = ["hatchling"]
        build-backend = "hatchling.build"
    """)
    )
    # outside the project root: sevro refuses a non-Git project root of more than 4096 entries
    venv = tmp_path_factory.mktemp("venv") / "venv"
    env = {**os.environ, "VIRTUAL_ENV": str(venv)}
    env.pop("UV_PROJECT_ENVIRONMENT", None)
    subprocess.run([uv, "venv", "-q", str(venv)], check=True, env=env, cwd=tmp_path)
    subprocess.run(
        [
            uv,
            "pip",
            "install",
            "-q",
            "--python",
            str(venv / "bin" / "python"),
            "-e",
            str(repo_root / "sevro_core"),
            "-e",
            str(repo_root / "sevro_graders"),
            str(package),
        ],
        check=True,
        env=env,
        cwd=tmp_path,
    )
    project = SevroProject(tmp_path)
    case = project.case(
        checks=[
            {"id": "n", "grader": "acme.contains", "configuration": {"needle": "blue"}},
            regex_check("r", "sky"),
        ]
    )
    host = project.script(default=[[{"reply": {"text": "the sky is blue"}}]])
    sevro = venv / "bin" / "sevro"
    listed = subprocess.run(
        [str(sevro), "plugins", "--json"], capture_output=True, text=True, env=env, check=True
    )
    plugin = next(
        p for p in json.loads(listed.stdout)["plugins"] if p["distribution"] == "acme-grader"
    )
    assert plugin["version"] == "2.0.0" and plugin["registers"][0]["id"] == "acme.contains"
    done = subprocess.run(
        [
            str(sevro),
            "run",
            str(case),
            "--host-config",
            str(host),
            "--json",
            "--results-root",
            str(tmp_path / "results"),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert [c["grader"] for c in result["cases"][0]["trials"][0]["checks"]] == [
        "acme.contains",
        "sevro.regex",
    ]
    run = json.loads(Path(result["evidencePath"]).read_text())
    assert {"id": "acme.contains", "source": "acme-grader", "version": "2.0.0"} in run["graders"][
        "active"
    ]
