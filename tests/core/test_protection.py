from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest

from sevro_core.errors import InvocationError
from sevro_core.isolation.protection import (
    OPERATOR,
    WELL_KNOWN_CREDENTIALS,
    ProtectedRoot,
    credential_locations,
    engine_roots,
    existing_canonical,
)
from sevro_core.plugin.manager import load_plugins
from sevro_core.plugin.protocols import CredentialLocations

INSTALLED = credential_locations(load_plugins([]).hosts())
"""The well-known locations and those of the hosts installed here (Codex, Claude, scripted)."""


def test_engine_roots_cover_project_results_inputs_homes_and_cli_homes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    roots = engine_roots(
        project_root=tmp_path / "project",
        results_root=tmp_path / "results",
        run_state_root=tmp_path / "state",
        case_source_roots=[tmp_path / "sources"],
        input_files=[tmp_path / "case.json"],
        environ={"HOME": str(home), "CODEX_HOME": str(tmp_path / "codex"), "CLAUDE_CONFIG_DIR": ""},
        credentials=INSTALLED,
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
    for rel in (".codex", ".claude", ".aws", ".config/gcloud", ".azure", ".cargo/credentials"):
        assert rel in INSTALLED.home_entries and home / rel in by_path
    account_home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    assert account_home / ".ssh" in by_path, "the account's home counts even when HOME lies"


def test_a_home_of_slash_keeps_its_credential_paths(tmp_path: Path) -> None:
    roots = engine_roots(
        project_root=tmp_path,
        results_root=tmp_path / "r",
        environ={"HOME": "/"},
        credentials=INSTALLED,
    )
    assert ProtectedRoot("home", Path("/")) not in roots
    assert ProtectedRoot("home/.ssh", Path("/.ssh")) in roots


def test_cargo_registry_tokens_are_credential_locations(tmp_path: Path) -> None:
    """Cargo keeps registry tokens in ``~/.cargo/credentials(.toml)``; the rest of ``~/.cargo``
    (its toolchain binaries) stays grantable, so only the two files are protected."""
    roots = engine_roots(
        project_root=tmp_path / "p",
        results_root=tmp_path / "r",
        environ={"HOME": "/"},
        credentials=INSTALLED,
    )
    paths = {r.path for r in roots}
    assert {Path("/.cargo/credentials"), Path("/.cargo/credentials.toml")} <= paths
    assert Path("/.cargo") not in paths and Path("/.cargo/bin") not in paths


def test_operator_roots_enter_the_policy_by_path() -> None:
    assert ProtectedRoot(OPERATOR, Path("/srv/x")).symbol == "/srv/x"
    assert ProtectedRoot("home/.ssh", Path("/root/.ssh")).symbol == "home/.ssh"


def test_existing_canonical_resolves_links_and_drops_missing(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    found = existing_canonical([tmp_path / "link", real, tmp_path / "missing", Path("/")])
    assert found == (real.resolve(),)


class AcmeHost:
    id = "acme.host.cli"
    credential_locations = CredentialLocations((".acme", ".config/acme"), ("ACME_HOME",))


def test_each_installed_host_adds_its_credential_locations(tmp_path: Path) -> None:
    hosts = {"acme.host.cli": AcmeHost(), "acme.host.bare": object()}  # one declares nothing
    found = credential_locations(hosts)
    assert set(WELL_KNOWN_CREDENTIALS.home_entries) < set(found.home_entries)
    assert {".acme", ".config/acme"} <= set(found.home_entries)
    assert found.home_variables == ("ACME_HOME",)
    home = tmp_path / "home"
    environ = {"HOME": str(home), "ACME_HOME": str(tmp_path / "acme")}
    roots = engine_roots(
        project_root=tmp_path, results_root=tmp_path / "r", environ=environ, credentials=found
    )
    by_path = {r.path: r.label for r in roots}
    assert by_path[home / ".config/acme"] == "home/.config/acme"
    assert by_path[tmp_path / "acme"] == "acme-home"
    # control: without the host, its locations are not among the roots
    alone = engine_roots(
        project_root=tmp_path,
        results_root=tmp_path / "r",
        environ=environ,
        credentials=credential_locations({}),
    )
    assert not {home / ".acme", tmp_path / "acme"} & {r.path for r in alone}


def test_the_installed_agent_cli_hosts_declare_their_homes() -> None:
    assert {".codex", ".claude", ".claude.json"} <= set(INSTALLED.home_entries)
    assert {"CODEX_HOME", "CLAUDE_CONFIG_DIR"} <= set(INSTALLED.home_variables)
    assert not {".codex", ".claude"} & set(WELL_KNOWN_CREDENTIALS.home_entries)


@pytest.mark.parametrize(
    "declared",
    [
        CredentialLocations(("/etc/acme",)),
        CredentialLocations(("../acme",)),
        CredentialLocations((".acme/../../x",)),
        CredentialLocations(("",)),
        CredentialLocations((), ("acme_home",)),
        CredentialLocations((), ("ACME HOME",)),
    ],
)
def test_a_malformed_declaration_is_refused_naming_the_host(declared: CredentialLocations) -> None:
    host = type("Bad", (), {"credential_locations": declared})()
    with pytest.raises(InvocationError, match=r"host acme\.host\.bad"):
        credential_locations({"acme.host.bad": host})


def test_a_declaration_of_the_wrong_type_is_refused() -> None:
    host = type("Bad", (), {"credential_locations": (".acme",)})()
    with pytest.raises(InvocationError, match="not CredentialLocations"):
        credential_locations({"acme.host.bad": host})
