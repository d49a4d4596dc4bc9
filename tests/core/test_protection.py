from __future__ import annotations

import os
import pwd
from pathlib import Path

from sevro_core.isolation.protection import (
    CREDENTIAL_PATHS,
    OPERATOR,
    ProtectedRoot,
    engine_roots,
    existing_canonical,
)


def test_engine_roots_cover_project_results_inputs_homes_and_cli_homes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    roots = engine_roots(
        project_root=tmp_path / "project",
        results_root=tmp_path / "results",
        run_state_root=tmp_path / "state",
        case_source_roots=[tmp_path / "sources"],
        input_files=[tmp_path / "case.json"],
        environ={"HOME": str(home), "CODEX_HOME": str(tmp_path / "codex"), "CLAUDE_CONFIG_DIR": ""},
    )
    by_path = {r.path: r.label for r in roots}
    assert by_path[tmp_path / "project"] == "project-root"
    assert by_path[tmp_path / "results"] == "results-root"
    assert by_path[tmp_path / "state"] == "run-state-root"
    assert by_path[tmp_path / "sources"] == "case-source-root"
    assert by_path[tmp_path / "case.json"] == "input-file"
    assert by_path[home] == "home"
    assert by_path[home / ".ssh"] == "home/.ssh"
    assert by_path[tmp_path / "codex"] == "codex-home"
    for rel in (".codex", ".claude", ".aws", ".config/gcloud", ".azure"):
        assert rel in CREDENTIAL_PATHS and home / rel in by_path
    account_home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    assert account_home / ".ssh" in by_path, "the account's home counts even when HOME lies"


def test_a_home_of_slash_keeps_its_credential_paths(tmp_path: Path) -> None:
    roots = engine_roots(project_root=tmp_path, results_root=tmp_path / "r", environ={"HOME": "/"})
    assert ProtectedRoot("home", Path("/")) not in roots
    assert ProtectedRoot("home/.ssh", Path("/.ssh")) in roots


def test_operator_roots_enter_the_policy_by_path() -> None:
    assert ProtectedRoot(OPERATOR, Path("/srv/x")).symbol == "/srv/x"
    assert ProtectedRoot("home/.ssh", Path("/root/.ssh")).symbol == "home/.ssh"


def test_existing_canonical_resolves_links_and_drops_missing(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    found = existing_canonical([tmp_path / "link", real, tmp_path / "missing", Path("/")])
    assert found == (real.resolve(),)
