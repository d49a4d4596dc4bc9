"""`--config-root` (issue 19, item 4): one Codex setting imported from a separate configuration
root into each role's redacted configuration and the identity; every bad configuration refused
before anything runs; the root and its Git worktrees hidden from candidates and shell checks."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sevro_core.testing import CliResult, SevroProject
from sevro_core.testing.mockmodel import Message, reply
from sevro_hosts_codex.limits import MAX_CODEX_CONFIG_ROOT_FILE_BYTES
from sevro_hosts_codex.testing import require_codex
from tests.hosts_codex.helpers import API_KEY, API_KEY_ENV, run_codex

pytestmark = pytest.mark.slow

KEY = "agents.max_concurrent_threads_per_session"
READY = {"id": "ready", "grader": "sevro.regex", "configuration": {"pattern": "^ready$"}}
UNRELATED = 'model = "config-root-model"\napproval_policy = "on-request"\n'


@pytest.fixture
def codex() -> str:
    return require_codex()


def config_root(tmp_path: Path, text: str | None, name: str = "configuration") -> Path:
    root = tmp_path / name
    (root / ".codex").mkdir(parents=True)
    if text is not None:
        (root / ".codex" / "config.toml").write_text(text)
    return root


def threads(limit: int) -> str:
    return f"{UNRELATED}[agents]\nmax_concurrent_threads_per_session = {limit}\n"


def run_json(project: SevroProject) -> dict[str, Any]:
    (path,) = project.results.glob("*/run.json")
    document: dict[str, Any] = json.loads(path.read_text())
    return document


def dry(project: SevroProject, codex: str, *args: str | Path) -> CliResult:
    case = project.case()
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


def test_only_the_thread_limit_is_imported_and_it_changes_identity(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    identities = []
    for limit in (3, 4):
        root = config_root(tmp_path, threads(limit), f"configuration-{limit}")
        server = mock_model([reply(Message("ready"))])
        case = sevro_project.case(checks=[READY])
        done = run_codex(sevro_project, codex, server, case, "--config-root", str(root))
        # Codex ran with the imported limit (``--strict-config`` accepts the generated file)
        # and with the run's model, not the configuration root's.
        assert done.exit_code == 0, done.stdout + done.stderr
        assert server.requests[0].json()["model"] == "mock-model"
        document = run_json(sevro_project)
        candidate = document["configuration"]["redacted"]["hostConfiguration"]["candidate"]
        assert candidate["configRoot"] == {KEY: limit}
        assert str(root.resolve()) in candidate["protectedRoots"]
        assert "config-root-model" not in json.dumps(document)
        identities.append(document["evaluationIdentity"]["digest"])
        for path in sevro_project.results.iterdir():
            subprocess.run(["rm", "-rf", str(path)], check=True)
    assert identities[0] != identities[1]


def test_without_a_setting_the_host_default_is_kept(
    sevro_project: SevroProject, codex: str, tmp_path: Path
) -> None:
    for text in (None, UNRELATED, "[agents]\n"):
        root = config_root(tmp_path, text, f"configuration-{len(text or '')}")
        done = dry(sevro_project, codex, "--config-root", root)
        assert done.exit_code == 0, done.stderr
        candidate = run_json(sevro_project)["configuration"]["redacted"]["hostConfiguration"]
        assert candidate["candidate"]["configRoot"] == {KEY: None}
        subprocess.run(["rm", "-rf", str(sevro_project.results)], check=True)
    # Without the flag, the project root is the configuration root (Sevro's default).
    (sevro_project.root / ".codex").mkdir()
    (sevro_project.root / ".codex" / "config.toml").write_text(threads(5))
    done = dry(sevro_project, codex)
    assert done.exit_code == 0, done.stderr
    candidate = run_json(sevro_project)["configuration"]["redacted"]["hostConfiguration"]
    assert candidate["candidate"]["configRoot"] == {KEY: 5}


def _bad_roots(tmp_path: Path) -> dict[str, tuple[Path | str, str]]:
    """Each bad configuration root and the reason its refusal names."""
    bad: dict[str, tuple[Path | str, str]] = {}
    for name, text, reason in (
        ("malformed", "[agents\n", "is malformed"),
        ("oversized", "#" * (MAX_CODEX_CONFIG_ROOT_FILE_BYTES + 1), "exceeds"),
        ("not-a-table", "agents = 3\n", "agents must be a table"),
        ("zero", "[agents]\nmax_concurrent_threads_per_session = 0\n", "must be an integer"),
        ("boolean", "[agents]\nmax_concurrent_threads_per_session = true\n", "must be an int"),
        ("string", '[agents]\nmax_concurrent_threads_per_session = "3"\n', "must be an int"),
        ("float", "[agents]\nmax_concurrent_threads_per_session = 3.0\n", "must be an int"),
        ("too-big", "[agents]\nmax_concurrent_threads_per_session = 9007199254740992\n", "between"),
        ("not-utf8", None, "is malformed"),
    ):
        root = config_root(tmp_path, text, name)
        if text is None:
            (root / ".codex" / "config.toml").write_bytes(b"\xff\xfe = 1\n")
        bad[name] = (root, reason)
    target = config_root(tmp_path, threads(2), "link-target")
    linked_file = config_root(tmp_path, None, "linked-file")
    (linked_file / ".codex" / "config.toml").symlink_to(target / ".codex" / "config.toml")
    bad["linked-file"] = (linked_file, "not a link")
    dangling_file = config_root(tmp_path, None, "dangling-file")
    (dangling_file / ".codex" / "config.toml").symlink_to(tmp_path / "nowhere.toml")
    bad["dangling-file"] = (dangling_file, "not a link")
    for name, link_to in (("linked-dir", target / ".codex"), ("dangling-dir", tmp_path / "gone")):
        root = tmp_path / name
        root.mkdir()
        (root / ".codex").symlink_to(link_to)
        bad[name] = (root, "not a link")
    directory = config_root(tmp_path, None, "directory-file")
    (directory / ".codex" / "config.toml").mkdir()
    bad["directory-file"] = (directory, "must be a file")
    fifo = config_root(tmp_path, None, "fifo-file")
    os.mkfifo(fifo / ".codex" / "config.toml")
    bad["fifo-file"] = (fifo, "must be a file")
    plain = tmp_path / "codex-is-a-file"
    plain.mkdir()
    (plain / ".codex").write_text("x")
    bad["codex-is-a-file"] = (plain, "must be a directory")
    (tmp_path / "a-file").write_text("x")
    bad["relative"] = ("configuration", "must be an absolute directory")
    bad["empty"] = ("", "must not be empty")
    bad["missing"] = (tmp_path / "missing", "is not a directory")
    bad["not-a-directory"] = (tmp_path / "a-file", "is not a directory")
    return bad


def test_bad_configuration_exits_64_before_anything_runs(
    sevro_project: SevroProject, codex: str, tmp_path: Path
) -> None:
    bad = _bad_roots(tmp_path / "roots")
    assert len(bad) == 20
    for name, (root, reason) in bad.items():
        done = dry(sevro_project, codex, "--config-root", root)
        assert done.exit_code == 64, (name, done.stdout, done.stderr)
        assert reason in done.stderr, (name, done.stderr)
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, name
        assert not sevro_project.results.exists(), name
    equals = dry(sevro_project, codex, "--config-root=")  # the other spelling of empty
    assert equals.exit_code == 64 and "must not be empty" in equals.stderr, equals.stderr
    if os.geteuid() != 0:  # root reads any file, so unreadability needs another account
        root = config_root(tmp_path, threads(2), "unreadable")
        (root / ".codex" / "config.toml").chmod(0)
        done = dry(sevro_project, codex, "--config-root", root)
        assert done.exit_code == 64 and "is unreadable" in done.stderr, done.stderr
    # The control: the same command with a good root runs.
    good = config_root(tmp_path, threads(2), "good")
    assert dry(sevro_project, codex, "--config-root", good).exit_code == 0


def _git(*args: str | Path) -> None:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    identity = ["-c", "user.name=t", "-c", "user.email=t@t.invalid"]
    subprocess.run(["git", *identity, *map(str, args)], check=True, env=env, capture_output=True)


def configuration_repository(area: Path) -> tuple[Path, Path]:
    """A Git configuration repository with a linked worktree, each holding a secret."""
    primary, linked = area / "configuration", area / "linked"
    primary.mkdir(parents=True)
    _git("init", "-q", "-b", "main", primary)
    (primary / "secret.txt").write_text("PRIMARY-SECRET\n")
    _git("-C", primary, "add", "secret.txt")
    _git("-C", primary, "commit", "-q", "-m", "secret")
    _git("-C", primary, "worktree", "add", "-q", "-b", "other", linked)
    (linked / "secret.txt").write_text("LINKED-SECRET\n")
    return primary.resolve(), linked.resolve()


def test_the_root_and_its_worktrees_are_hidden_from_shell_checks(
    sevro_project: SevroProject, tmp_path: Path
) -> None:
    # The workspaces' holder (``area``) is readable by checks, so the repository beside them
    # would be readable but for its protection.
    area = tmp_path / "area"
    primary, linked = configuration_repository(area)
    workspaces = area / "workspaces"
    workspaces.mkdir()
    checks = [
        {
            "id": f"reads-{name}",
            "grader": "sevro.shell",
            "configuration": {"run": f"cat {path}/secret.txt", "expectExact": secret},
        }
        for name, path, secret in (
            ("primary", primary, "PRIMARY-SECRET"),
            ("linked", linked, "LINKED-SECRET"),
        )
    ]
    case = sevro_project.case(checks=checks)
    script = sevro_project.script(default=[[{"reply": {"text": "ready"}}]])

    def statuses(*args: str | Path) -> dict[str, str]:
        done = sevro_project.run(
            case, "--host-config", script, "--workspace-root", workspaces, *args
        )
        assert done.exit_code in (0, 1), done.stdout + done.stderr
        (trial,) = done.json()["cases"][0]["trials"]
        subprocess.run(["rm", "-rf", str(sevro_project.results)], check=True)
        return {c["id"]: c["status"] for c in trial["checks"]}

    # The control: without --config-root the checks read both secrets.
    assert statuses() == {"reads-primary": "passed", "reads-linked": "passed"}
    # With it, given as the linked worktree, neither (the primary found through git).
    hidden = statuses("--config-root", linked)
    assert hidden == {"reads-primary": "failed", "reads-linked": "failed"}


def test_the_candidate_is_denied_every_worktree(
    sevro_project: SevroProject, codex: str, tmp_path: Path
) -> None:
    primary, linked = configuration_repository(tmp_path / "area")
    done = dry(sevro_project, codex, "--config-root", primary)
    assert done.exit_code == 0, done.stderr
    candidate = run_json(sevro_project)["configuration"]["redacted"]["hostConfiguration"]
    roots = candidate["candidate"]["protectedRoots"]
    assert str(primary) in roots and str(linked) in roots
    # A config root outside any repository protects itself alone (no Git metadata is fine).
    subprocess.run(["rm", "-rf", str(sevro_project.results)], check=True)
    plain = config_root(tmp_path, None, "plain")
    assert dry(sevro_project, codex, "--config-root", plain).exit_code == 0
    roots = run_json(sevro_project)["configuration"]["redacted"]["hostConfiguration"]
    assert str(plain.resolve()) in roots["candidate"]["protectedRoots"]
    assert str(primary) not in roots["candidate"]["protectedRoots"]


def test_every_codex_role_records_the_imported_setting(
    sevro_project: SevroProject, codex: str, tmp_path: Path
) -> None:
    root = config_root(tmp_path, threads(6))
    judges = ("--semantic-host", "codex", "--advisory-host", "codex")
    done = dry(sevro_project, codex, "--config-root", root, *judges)
    assert done.exit_code == 0, done.stderr
    redacted = run_json(sevro_project)["configuration"]["redacted"]
    assert redacted["hostConfiguration"]["candidate"]["configRoot"] == {KEY: 6}
    for role in ("semantic", "advisory"):
        assert redacted["judges"][role]["host"]["configRoot"] == {KEY: 6}, role
