"""The Codex host's safety gates (issue 19, item 2): the sandbox preflight before every fresh
request, no executable inside a protected root, and no fixture-local `.codex` configuration."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sevro_core.api import DEFAULT_PATH, CancelToken, HostFailure
from sevro_core.testing import SevroProject
from sevro_core.testing.mockmodel import Message, reply
from sevro_hosts_codex import binary as binaries
from sevro_hosts_codex.configuration import TrialLayout, parse, render_config_toml
from sevro_hosts_codex.preflight import PROBLEMS, preflight_argv, run_preflight
from sevro_hosts_codex.testing import require_codex
from tests.hosts_codex.helpers import API_KEY, API_KEY_ENV, run_codex, trial

pytestmark = pytest.mark.slow

READY = {"id": "ready", "grader": "sevro.regex", "configuration": {"pattern": "^ready$"}}


@pytest.fixture
def codex() -> str:
    return require_codex()


# -- the preflight ------------------------------------------------------------------------


def _probe(tmp_path: Path, codex: str, *, weaken: str | None, judge: bool = False) -> None:
    """Run the real preflight against a trial-shaped layout whose profile is the trial's own,
    or weakened (``codex-home``, ``protected``: granted read) to show the probe notices."""
    binary = binaries.locate(codex)
    root = tmp_path / "trial"
    workspace, protected = root / "workspace", root / "protected"
    layout = TrialLayout(root / "codex-home", root / "home", root / "tmp", root / "bin")
    for directory in (workspace, protected, layout.codex_home, layout.home, layout.tmp):
        directory.mkdir(parents=True, mode=0o700)
    layout.bin.mkdir(mode=0o700)
    (protected / "secret.txt").write_text("PROTECTED\n")
    (layout.codex_home / "auth.json").write_text('{"OPENAI_API_KEY": "sk-planted"}')
    os.symlink(binary.native, layout.bin / "codex-linux-sandbox")
    env = {"PATH": DEFAULT_PATH, "HOME": str(layout.home), "TMPDIR": str(layout.tmp)}
    weakened = {"codex-home": layout.codex_home, "protected": protected}
    granted = [weakened[weaken]] if weaken is not None else []
    text = render_config_toml(
        parse(None, {}),
        model=None,
        effort=None,
        layout=layout,
        executable_tree=binary.tree,
        denied=[],
        command_env=env,
        granted=(granted, ()),
    )
    (layout.codex_home / "config.toml").write_text(text)
    argv = preflight_argv(
        binary.native, workspace, (layout.tmp, layout.codex_home), judge, protected
    )
    run_preflight(
        argv,
        workspace=workspace,
        env={**env, "PATH": f"{layout.bin}:{DEFAULT_PATH}", "CODEX_HOME": str(layout.codex_home)},
        timeout_s=60,
        cancel=CancelToken(),
    )
    assert not any(workspace.iterdir()), "the probe wrote into the workspace"


def test_the_preflight_holds_for_the_trial_profile(tmp_path: Path, codex: str) -> None:
    _probe(tmp_path, codex, weaken=None)


@pytest.mark.parametrize(
    ("weaken", "judge", "code"),
    [("codex-home", False, 23), ("protected", False, 24), (None, True, 22)],
)
def test_the_preflight_notices_a_weak_profile(
    tmp_path: Path, codex: str, weaken: str | None, judge: bool, code: int
) -> None:
    # A judge expects a read-only workspace; the candidate's profile grants write.
    with pytest.raises(HostFailure) as failure:
        _probe(tmp_path, codex, weaken=weaken, judge=judge)
    assert PROBLEMS[code] in failure.value.message


def test_a_preflight_that_does_not_finish_fails_the_trial_before_the_model(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any]
) -> None:
    server = mock_model([reply(Message("ready"))])
    case = sevro_project.case(checks=[READY])
    done = run_codex(sevro_project, codex, server, case, config={"preflightTimeoutSeconds": 0.001})
    execution = trial(sevro_project)["evidence"]["execution"]
    assert execution["status"] == "failed", done.stdout
    assert "codex sandbox preflight did not finish within 0.001 s" in execution["message"]
    assert done.exit_code == 2  # an execution failure, never a pass
    assert server.requests == []  # Codex itself never started
    # The control: the same run with the default bound reaches the model and passes.
    subprocess.run(["rm", "-rf", str(sevro_project.results)], check=True)
    done = run_codex(sevro_project, codex, server, case)
    assert done.exit_code == 0 and len(server.requests) == 1, done.stdout + done.stderr


def test_a_preflight_timeout_outside_its_bound_is_refused(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any]
) -> None:
    server = mock_model([])
    case = sevro_project.case()
    done = run_codex(sevro_project, codex, server, case, config={"preflightTimeoutSeconds": 61})
    assert done.exit_code == 64 and "/preflightTimeoutSeconds" in done.stderr, done.stderr


# -- executables inside protected roots -----------------------------------------------------


def _dry(project: SevroProject, codex: str, case: Path, *args: str | Path) -> Any:
    return project.run(
        case,
        "--host",
        "codex",
        "--codex-bin",
        codex,
        "--codex-api-key-env",
        API_KEY_ENV,
        "--dry",
        *args,
        env={API_KEY_ENV: API_KEY},
    )


def test_a_codex_inside_a_protected_root_is_refused(
    sevro_project: SevroProject, codex: str
) -> None:
    native = binaries.locate(codex).native
    case = sevro_project.case()
    for root in (native.parent, native.parent.parent):
        done = _dry(sevro_project, codex, case, "--protected-root", root)
        assert done.exit_code == 64, done.stdout + done.stderr
        assert f"lies inside the protected root {root}" in done.stderr
        assert done.stderr.count("\n") == 1 and not sevro_project.results.exists()
    # The control: an unrelated protected root is fine.
    other = sevro_project.root / "private"
    other.mkdir()
    assert _dry(sevro_project, codex, case, "--protected-root", other).exit_code == 0


# -- fixture-local .codex configuration -----------------------------------------------------


@pytest.mark.parametrize(
    "fixture",
    [
        {"files": {".codex/config.toml": 'model = "fixture"\n'}},
        {"files": {"README.md": "x\n", ".codex/hooks.json": "{}"}},
        {
            "kind": "generated",
            "commits": [{"message": "init", "files": {".codex/config.toml": "x = 1\n"}}],
        },
    ],
)
def test_dry_refuses_a_declared_codex_directory(
    sevro_project: SevroProject, codex: str, fixture: dict[str, Any]
) -> None:
    case = sevro_project.case(fixture=fixture)
    done = _dry(sevro_project, codex, case)
    assert done.exit_code == 64, done.stdout + done.stderr
    assert "fixture-local Codex configuration" in done.stderr and ".codex/" in done.stderr
    assert "#/fixture/" in done.stderr and not sevro_project.results.exists()


def test_dry_accepts_codex_named_files_elsewhere(sevro_project: SevroProject, codex: str) -> None:
    # The controls: a `.codex` below the root, or a similar name at it, is no configuration.
    files = {"docs/.codex/config.toml": "x = 1\n", ".codexrc": "x\n", "codex.toml": "x\n"}
    case = sevro_project.case(fixture={"files": files})
    done = _dry(sevro_project, codex, case)
    assert done.exit_code == 0, done.stdout + done.stderr


def _git(cwd: Path, *args: str) -> None:
    env = {
        "PATH": "/usr/bin:/bin",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": "Source",
        "GIT_AUTHOR_EMAIL": "source@example.invalid",
        "GIT_COMMITTER_NAME": "Source",
        "GIT_COMMITTER_EMAIL": "source@example.invalid",
    }
    subprocess.run(["git", *args], cwd=cwd, capture_output=True, env=env, check=True)


@pytest.mark.parametrize("with_codex", [True, False])
def test_a_repository_with_a_codex_directory_fails_before_codex_starts(
    sevro_project: SevroProject,
    codex: str,
    mock_model: Callable[..., Any],
    tmp_path: Path,
    with_codex: bool,
) -> None:
    repo = tmp_path / "sources" / "app"
    repo.mkdir(parents=True)
    (repo / "README.md").write_text("app\n")
    if with_codex:
        (repo / ".codex").mkdir()
        (repo / ".codex" / "config.toml").write_text('model = "fixture"\n')
    _git(repo, "init", "-q", "-b", "trunk")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "app")
    sources = tmp_path / "sources.json"
    sources.write_text(json.dumps({"app": repo.as_uri()}))
    server = mock_model([reply(Message("ready"))])
    case = sevro_project.case(fixture={"sourceRef": "app"}, checks=[READY])
    flags = ("--case-source-root", str(repo.parent), "--case-source-map-file", str(sources))
    done = run_codex(sevro_project, codex, server, case, *flags)
    execution = trial(sevro_project)["evidence"]["execution"]
    if with_codex:
        assert execution["status"] == "failed", done.stdout
        assert "fixture-local Codex configuration" in execution["message"]
        assert server.requests == []
    else:  # the control: the same repository without `.codex` runs
        assert execution["status"] == "completed", done.stdout + done.stderr
        assert done.exit_code == 0
