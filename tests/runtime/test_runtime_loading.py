"""``sevro.runtime.v1`` loading: the file rules, every refused name, every grant rule."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from sevro_core.errors import InvocationError
from sevro_core.isolation.protection import ProtectedRoot, credential_locations
from sevro_core.isolation.runtime import RuntimePolicy, load_runtime, refuse_overlaps
from sevro_core.limits import MAX_RUNTIME_CONFIG_BYTES
from sevro_core.plugin.protocols import CredentialLocations

AGENT = CredentialLocations(home_entries=(".acme-agent",), home_variables=("ACME_AGENT_HOME",))
CREDENTIALS = credential_locations({"acme": type("Host", (), {"credential_locations": AGENT})()})


@pytest.fixture
def area(tmp_path: Path) -> Path:
    root = tmp_path.resolve()
    for directory in ("project", "home/.local/bin", "home/bin", "tools/bin", "tools/share", "cfg"):
        (root / directory).mkdir(parents=True, exist_ok=True)
    return root


def env(area: Path, **extra: str) -> dict[str, str]:
    return {"HOME": str(area / "home"), "PATH": "/usr/bin:/bin", **extra}


def write(area: Path, document: Any, name: str = "cfg/runtime.json") -> Path:
    path = area / name
    path.write_text(json.dumps(document) if not isinstance(document, str) else document)
    return path


def load(area: Path, document: Any, **extra: str) -> RuntimePolicy:
    path = write(area, document)
    policy = load_runtime(area / "project", path, CREDENTIALS, env(area, **extra))
    assert policy is not None
    return policy


def refused(area: Path, document: Any, fragment: str, pointer: str | None = None, **extra: str):
    path = write(area, document)
    with pytest.raises(InvocationError) as caught:
        load_runtime(area / "project", path, CREDENTIALS, env(area, **extra))
    assert fragment in caught.value.message, caught.value.message
    assert caught.value.source == str(path)
    if pointer is not None:
        assert caught.value.pointer == pointer
    return caught.value


def doc(**fields: Any) -> dict[str, Any]:
    return {"format": "sevro.runtime.v1", **fields}


# the file


def test_no_default_file_is_no_policy_and_sevro_json_is_the_default(area: Path) -> None:
    project = area / "project"
    assert load_runtime(project, None, CREDENTIALS, env(area)) is None
    (project / "sevro.json").write_text(json.dumps(doc()))
    policy = load_runtime(project, None, CREDENTIALS, env(area))
    assert policy is not None and policy.source == str(project / "sevro.json")


def test_an_explicit_file_replaces_sevro_json_without_merging(area: Path) -> None:
    (area / "project" / "sevro.json").write_text("{not json")
    explicit = write(area, doc(environment={"set": {"MODE": "ci"}}))
    policy = load_runtime(area / "project", explicit, CREDENTIALS, env(area))
    assert policy is not None and dict(policy.variables) == {"MODE": "ci"}


def test_a_missing_explicit_file_is_refused(area: Path) -> None:
    with pytest.raises(InvocationError, match="does not exist"):
        load_runtime(area / "project", area / "nope.json", CREDENTIALS, env(area))


def test_a_symlinked_file_is_refused_and_its_target_is_accepted(area: Path) -> None:
    target = write(area, doc())
    link = area / "cfg" / "link.json"
    link.symlink_to(target)
    with pytest.raises(InvocationError, match="symbolic link"):
        load_runtime(area / "project", link, CREDENTIALS, env(area))
    assert load_runtime(area / "project", target, CREDENTIALS, env(area)) is not None


def test_an_oversized_file_is_refused_and_one_at_the_bound_is_read(area: Path) -> None:
    text = json.dumps(doc())
    at_bound = text[:-1] + " " * (MAX_RUNTIME_CONFIG_BYTES - len(text)) + "}"
    assert len(at_bound) == MAX_RUNTIME_CONFIG_BYTES
    assert load(area, at_bound).variables == ()
    refused(area, at_bound + " ", "larger than")


def test_a_directory_is_refused(area: Path) -> None:
    with pytest.raises(InvocationError, match="not a regular file"):
        load_runtime(area / "project", area / "cfg", CREDENTIALS, env(area))


@pytest.mark.parametrize(
    ("document", "fragment", "pointer"),
    [
        ('{"format": "sevro.runtime.v1", "format": "sevro.runtime.v1"}', "duplicate", None),
        (doc(unknown=True), "unknown key", "/unknown"),
        ({"format": "sevro.runtime.v2"}, "", "/format"),
        (doc(environment={"inherit": ["1BAD"]}), "", "/environment/inherit/0"),
        (doc(environment={"set": {"A": "x" * 8193}}), "", "/environment/set/A"),
        (doc(network={"localHttp": "yes"}), "", "/network/localHttp"),
        (doc(hooks={"plugins": ["Bad"]}), "", "/hooks/plugins/0"),
        (doc(hooks={"plugins": ["a", "a"]}), "", "/hooks/plugins"),
        (doc(hooks={"plugins": [f"p{i}" for i in range(65)]}), "", "/hooks/plugins"),
        (doc(hooks={"nativeGoal": "yes"}), "", "/hooks/nativeGoal"),
        (doc(hooks={"other": True}), "unknown key", "/hooks/other"),
        (doc(nativeTranscripts=True), "not supported yet", "/nativeTranscripts"),
        (
            doc(filesystem={"readOnlyRoots": ["{{sevro.runtime}}"]}),
            "only understood in environment.set",
            "/filesystem/readOnlyRoots/0",
        ),
    ],
)
def test_malformed_files_are_refused_with_a_pointer(
    area: Path, document: Any, fragment: str, pointer: str | None
) -> None:
    error = refused(area, document, fragment, pointer)
    assert error.exit_code == 64


# names

REFUSED = [
    "HOME",
    "TMPDIR",
    "TMP",
    "TEMP",
    "TMPPREFIX",
    "LANG",
    "UV_OFFLINE",
    "PYTHONDONTWRITEBYTECODE",
    "ACME_AGENT_HOME",  # an installed host's home, from its credential_locations
    "BASH_ENV",
    "ENV",
    "ZDOTDIR",
    "PROMPT_COMMAND",
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "DYLD_INSERT_LIBRARIES",
    "PYTHONPATH",
    "PYTHONSTARTUP",
    "NODE_OPTIONS",
    "PERL5OPT",
    "JAVA_TOOL_OPTIONS",
    "BASH_FUNC_x",
    "SEVRO_ANYTHING",
    "GIT_DIR",
    "GITHUB_TOKEN",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_ACCESS_KEY_ID",
    "NPM_AUTH",
    "SSH_AUTH_SOCK",
    "API_KEY",
    "MY_PASSWORD",
    "home",
]


@pytest.mark.parametrize("name", REFUSED)
def test_every_refused_name_is_refused_in_set_and_inherit(area: Path, name: str) -> None:
    refused(area, doc(environment={"set": {name: "v"}}), f"{name} cannot be declared")
    refused(
        area,
        doc(environment={"inherit": [name]}),
        f"{name} cannot be declared",
        "/environment/inherit/0",
        **{name: "v"},
    )


@pytest.mark.parametrize("name", ["UV_PYTHON_INSTALL_DIR", "NODE_ENV", "MONKEY", "KEYBOARD"])
def test_ordinary_names_are_accepted(area: Path, name: str) -> None:
    assert dict(load(area, doc(environment={"set": {name: "v"}})).variables) == {name: "v"}


def test_an_inherited_name_must_exist_and_set_overrides_it(area: Path) -> None:
    refused(area, doc(environment={"inherit": ["MODE"]}), "MODE is not set")
    policy = load(area, doc(environment={"inherit": ["MODE"], "set": {"MODE": "b"}}), MODE="a")
    assert dict(policy.variables) == {"MODE": "b"}


# PATH


def test_path_entries_must_be_nonempty_and_absolute(area: Path) -> None:
    for value in ("bin:/usr/bin", "/usr/bin::/bin", ""):
        refused(area, doc(environment={"set": {"PATH": value}}), "nonempty absolute")


def test_a_bin_directory_grants_its_install_prefix(area: Path) -> None:
    policy = load(area, doc(environment={"set": {"PATH": f"{area}/tools/bin:/usr/bin"}}))
    assert policy.path == f"{area}/tools/bin:/usr/bin"
    assert policy.read_roots == (area / "tools",)  # /usr/bin: a system tree, no grant


def test_a_bin_in_the_home_grants_the_prefix_but_never_the_home(area: Path) -> None:
    home = area / "home"
    policy = load(area, doc(environment={"set": {"PATH": f"{home}/.local/bin:{home}/bin"}}))
    assert policy.read_roots == (home / ".local", home / "bin")


def test_a_symlinked_tool_grants_its_target(area: Path) -> None:
    real = area / "opt-tool" / "libexec"
    real.mkdir(parents=True)
    (real / "tool").write_text("#!/bin/sh\n")
    (area / "tools" / "bin" / "tool").symlink_to(real / "tool")
    policy = load(area, doc(environment={"set": {"PATH": f"{area}/tools/bin"}}))
    assert set(policy.read_roots) == {area / "tools", real}


def test_a_missing_entry_stays_inert_and_a_file_entry_is_refused(area: Path) -> None:
    policy = load(area, doc(environment={"set": {"PATH": f"{area}/absent/bin:/usr/bin"}}))
    assert policy.path == f"{area}/absent/bin:/usr/bin" and policy.read_roots == ()
    (area / "file").write_text("")
    refused(area, doc(environment={"set": {"PATH": f"{area}/file"}}), "readable directory")


def test_an_inherited_path_drops_credential_entries_and_records_the_rest(area: Path) -> None:
    credential = area / "home" / ".acme-agent" / "bin"  # absent: still a credential location
    ssh = area / "home" / ".ssh"
    value = f"{credential}:{area}/tools/bin:{ssh}:/usr/bin"
    policy = load(area, doc(environment={"inherit": ["PATH"]}), PATH=value)
    assert policy.path == f"{area}/tools/bin:/usr/bin"
    assert policy.dropped_path == (str(credential), str(ssh))
    assert policy.configuration()["environment"]["path"] == policy.path


def test_a_tool_linking_into_a_credential_location_drops_its_entry(area: Path) -> None:
    secret = area / "home" / ".aws"
    secret.mkdir()
    (secret / "helper").write_text("")
    (area / "tools" / "bin" / "helper").symlink_to(secret / "helper")
    policy = load(area, doc(environment={"inherit": ["PATH"]}), PATH=f"{area}/tools/bin:/bin")
    assert policy.dropped_path == (f"{area}/tools/bin",) and policy.read_roots == ()
    refused(area, doc(environment={"set": {"PATH": f"{area}/tools/bin"}}), "credential location")


def test_an_explicit_credential_entry_and_an_emptied_path_are_refused(area: Path) -> None:
    ssh = area / "home" / ".ssh"
    refused(area, doc(environment={"set": {"PATH": f"{ssh}:/bin"}}), "credential location")
    refused(area, doc(environment={"inherit": ["PATH"]}), "no entry left", PATH=str(ssh))


def test_an_explicit_path_is_authoritative_over_an_inherited_one(area: Path) -> None:
    document = doc(environment={"inherit": ["PATH"], "set": {"PATH": "/bin"}})
    assert load(area, document, PATH=f"{area}/tools/bin").path == "/bin"


# read-only roots


def test_roots_resolve_relative_to_the_file_home_and_declared_variables(area: Path) -> None:
    (area / "home" / "data").mkdir()
    (area / "cfg" / "link").symlink_to(area / "tools" / "share")
    document = doc(
        environment={"set": {"TOOLS": str(area / "tools")}},
        filesystem={"readOnlyRoots": ["../tools/bin", "~/data", "${TOOLS}/share", "link"]},
    )
    policy = load(area, document)
    assert policy.read_roots == (area / "tools/bin", area / "home/data", area / "tools/share")


@pytest.mark.parametrize(
    ("root", "fragment"),
    [
        ("${UNDECLARED}/x", "not a declared environment variable"),
        ("$TOOLS/x", "only ${NAME}"),
        ("~other/x", "only ~/"),
        ("../absent", "does not exist"),
        ("runtime.json", "not a directory"),
        ("~/.ssh", "credential location"),
        ("~/.acme-agent", "credential location"),
    ],
)
def test_bad_roots_are_refused(area: Path, root: str, fragment: str) -> None:
    (area / "home" / ".ssh").mkdir(exist_ok=True)
    (area / "home" / ".acme-agent").mkdir(exist_ok=True)
    document = doc(environment={"set": {"TOOLS": "/x"}}, filesystem={"readOnlyRoots": [root]})
    refused(area, document, fragment, "/filesystem/readOnlyRoots/0")


def test_a_missing_optional_root_is_skipped_but_other_errors_remain(area: Path) -> None:
    document = doc(filesystem={"optionalReadOnlyRoots": ["../absent", "../tools"]})
    policy = load(area, document)
    assert policy.read_roots == (area / "tools",) and policy.skipped == ("../absent",)
    refused(area, doc(filesystem={"optionalReadOnlyRoots": ["runtime.json"]}), "not a directory")


# overlaps with protected roots, checked once the run's roots are known


def roots(area: Path) -> list[ProtectedRoot]:
    home = area / "home"
    return [
        ProtectedRoot("project-root", area / "project"),
        ProtectedRoot("home", home),
        ProtectedRoot("home/.ssh", home / ".ssh"),
        ProtectedRoot("acme-agent-home", area / "agent-home"),
    ]


def grant(area: Path, path: Path) -> RuntimePolicy:
    return RuntimePolicy(
        source=str(area / "cfg/runtime.json"),
        variables=(),
        inherited=(),
        explicit=(),
        grants=((path, "/filesystem/readOnlyRoots/0"),),
    )


@pytest.mark.parametrize(
    ("relative", "fragment"),
    [
        ("project", "holds the protected project-root"),
        ("project/src", "lies inside the protected project-root"),
        ("home", "holds the protected home"),
        (".", "holds the protected project-root"),
        ("home/.ssh/keys", "lies inside the protected home/.ssh"),
        ("agent-home/x", "lies inside the protected acme-agent-home"),
        ("workspaces", "where trial workspaces live"),
    ],
)
def test_overlapping_grants_are_refused(area: Path, relative: str, fragment: str) -> None:
    hidden = [area / "workspaces" / "run"]
    with pytest.raises(InvocationError) as caught:
        refuse_overlaps(grant(area, area / relative), roots(area), AGENT, hidden)
    assert fragment in caught.value.message
    assert caught.value.pointer == "/filesystem/readOnlyRoots/0"


@pytest.mark.parametrize("broad", ["/", "/usr", "/usr/local", "/opt"])
def test_broad_grants_are_refused(area: Path, broad: str) -> None:
    with pytest.raises(InvocationError, match="too broad"):
        refuse_overlaps(grant(area, Path(broad)), (), AGENT)


@pytest.mark.parametrize("relative", ["tools", "home/.local", "home"])
def test_grants_inside_a_home_or_holding_a_credential_are_accepted(
    area: Path, relative: str
) -> None:
    protected = [r for r in roots(area) if relative != "home" or r.label != "home"]
    refuse_overlaps(grant(area, area / relative), protected, AGENT, [area / "workspaces"])


# what enters the identity


def test_the_configuration_names_inherited_variables_but_never_their_values(area: Path) -> None:
    document = doc(environment={"inherit": ["SOMETHING"], "set": {"MODE": "ci"}})
    first = load(area, document, SOMETHING="value-one").configuration()
    second = load(area, document, SOMETHING="value-two").configuration()
    assert "value-one" not in json.dumps(first)
    assert first["environment"]["names"] == ["MODE", "SOMETHING"]
    assert first["environment"]["set"] == {"MODE": "ci"}
    assert first["digest"] != second["digest"]
    assert {k: v for k, v in first.items() if k != "digest"} == {
        k: v for k, v in second.items() if k != "digest"
    }


def test_the_environment_adds_the_runner_set_variables(area: Path) -> None:
    policy = load(area, doc(environment={"set": {"MODE": "ci", "PATH": "/bin"}}))
    assert policy.environment(Path("/t")) == {
        "MODE": "ci",
        "UV_OFFLINE": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "TMPPREFIX": "/t/zsh",
    }
    assert os.pathsep == ":"


# what the sandbox makes of it


def isolation(area: Path, policy: RuntimePolicy | None, bin_dir: Path | None = None) -> Any:
    from sevro_core.isolation.sandbox import SandboxSelection
    from sevro_core.models import CancelToken

    (area / "ws" / "w").mkdir(parents=True, exist_ok=True)
    (area / "private").mkdir(exist_ok=True)
    selection = SandboxSelection("none", None, None, "off", runtime=policy)
    return selection.bind(
        workspace=area / "ws" / "w",
        private_root=area / "private",
        cancel=CancelToken(),
        fixture_bin_dir=bin_dir,
    )


def test_the_sandbox_applies_the_policy_beside_its_own_variables(area: Path) -> None:
    document = doc(environment={"set": {"PATH": f"{area}/tools/bin:/bin", "MODE": "ci"}})
    policy = load(area, document)
    built = isolation(area, policy, area / "fixture-bin").policy(
        "checks", {"MODE": "check's own", "EXTRA": "1"}
    )
    environment = built.environment
    assert environment["PATH"] == f"{area}/fixture-bin:{area}/tools/bin:/bin"
    assert environment["MODE"] == "check's own"  # a check's variables win over declared ones
    assert environment["UV_OFFLINE"] == "1" and environment["LANG"] == "C.UTF-8"
    assert environment["TMPPREFIX"].startswith(environment["TMPDIR"])
    assert area / "tools" in built.read_only_roots
    plain = isolation(area, None).policy("checks").environment
    assert plain["PATH"] == "/usr/local/bin:/usr/bin:/bin" and "UV_OFFLINE" not in plain


def test_hook_plugins_are_carried_to_hosts_and_enter_the_identity(area: Path) -> None:
    """``hooks.plugins`` reaches ``HostRuntime.hook_plugins`` and the policy digest; a file
    without it keeps the digest it had (the key is absent, not empty)."""
    plain = load_runtime(area / "project", write(area, doc()), CREDENTIALS, env(area))
    empty = load_runtime(area / "project", write(area, doc(hooks={})), CREDENTIALS, env(area))
    path = write(area, doc(hooks={"plugins": ["guard", "lint-2"]}))
    chosen = load_runtime(area / "project", path, CREDENTIALS, env(area))
    assert plain is not None and empty is not None and chosen is not None
    assert plain.hook_plugins == () and plain.host_runtime().hook_plugins == ()
    assert chosen.host_runtime().hook_plugins == ("guard", "lint-2")
    record = chosen.configuration()
    assert record["hooks"] == {"plugins": ["guard", "lint-2"]}
    assert "hooks" not in plain.configuration()
    assert plain.configuration()["digest"] == empty.configuration()["digest"]
    assert record["digest"] != plain.configuration()["digest"]


def test_hooks_native_goal_enters_the_policy_and_its_digest(area: Path) -> None:
    plain = load(area, doc())
    off = load(area, doc(hooks={"nativeGoal": False}))
    on = load(area, doc(hooks={"nativeGoal": True}))
    assert (plain.native_goal, off.native_goal, on.native_goal) == (False, False, True)
    assert on.host_runtime().native_goal and not off.host_runtime().native_goal
    assert on.configuration()["hooks"] == {"nativeGoal": True}
    assert "hooks" not in off.configuration()
    # Selecting it changes the digest (identity); leaving it off keeps an older file's digest.
    assert off.configuration()["digest"] == plain.configuration()["digest"]
    assert on.configuration()["digest"] != plain.configuration()["digest"]
