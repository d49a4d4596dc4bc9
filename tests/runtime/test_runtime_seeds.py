"""``runtime.seedDirectories`` and ``sharedCacheDirectories``: every refusal, the fingerprint,
the capture at first use, and the role runtime roots they fill."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

import pytest

import sevro_core.isolation.seeds as seeds_module
from sevro_core.api import RoleRuntime, RuntimeUnavailable
from sevro_core.errors import InvocationError
from sevro_core.isolation.protection import ProtectedRoot
from sevro_core.isolation.runtime import RuntimePolicy, load_runtime, refuse_overlaps
from tests.runtime.test_runtime_loading import CREDENTIALS, doc, env, write


@pytest.fixture
def area(tmp_path: Path) -> Path:
    root = tmp_path.resolve()
    for directory in ("project", "home/.acme-agent", "cfg", "deps/pkg", "cache", "other"):
        (root / directory).mkdir(parents=True, exist_ok=True)
    (root / "deps" / "pkg" / "module.py").write_text("VALUE = 1\n")
    tool = root / "deps" / "run.sh"
    tool.write_text("#!/bin/sh\necho seeded\n")
    tool.chmod(0o750)
    return root


def seed(source: str = "../deps", target: str = "deps", **extra: Any) -> dict[str, Any]:
    return {"source": source, "target": target, **extra}


def cache(source: str = "../cache", target: str = "uv-cache", **extra: Any) -> dict[str, Any]:
    return {"source": source, "target": target, "roles": ["candidate"], **extra}


def load(area: Path, environment: dict[str, Any] | None = None, **runtime: Any) -> RuntimePolicy:
    path = write(area, doc(runtime=runtime, environment=environment or {}))
    policy = load_runtime(area / "project", path, CREDENTIALS, env(area))
    assert policy is not None
    return policy


def refused(area: Path, fragment: str, pointer: str, **runtime: Any) -> None:
    path = write(area, doc(runtime=runtime))
    with pytest.raises(InvocationError) as caught:
        load_runtime(area / "project", path, CREDENTIALS, env(area))
    assert fragment in caught.value.message, caught.value.message
    assert caught.value.source == str(path)
    assert caught.value.pointer == pointer
    assert caught.value.exit_code == 64


# loading


def test_a_seed_is_canonical_fingerprinted_and_defaults_to_every_role_but_checks(
    area: Path,
) -> None:
    policy = load(area, seedDirectories=[seed()])
    (only,) = policy.seeds
    assert only.source == area / "deps"
    assert only.roles == ("candidate", "hooks", "semantic", "advisory")
    assert (only.entries, only.size) == (3, len("VALUE = 1\n") + len("#!/bin/sh\necho seeded\n"))
    document = policy.configuration()
    assert document["seedDirectories"][0]["digest"] == only.digest
    again = load(area, seedDirectories=[seed()]).configuration()
    assert again["digest"] == document["digest"]


@pytest.mark.parametrize(
    "change",
    [
        lambda root: (root / "deps" / "pkg" / "module.py").write_text("VALUE = 2\n"),
        lambda root: (root / "deps" / "run.sh").chmod(0o755),
        lambda root: (root / "deps" / "new").mkdir(),
    ],
)
def test_content_modes_and_entries_change_the_digest(area: Path, change: Any) -> None:
    before = load(area, seedDirectories=[seed()]).configuration()
    change(area)
    after = load(area, seedDirectories=[seed()]).configuration()
    assert after["seedDirectories"][0]["digest"] != before["seedDirectories"][0]["digest"]
    assert after["digest"] != before["digest"]


@pytest.mark.parametrize(
    ("runtime", "fragment", "pointer"),
    [
        ({"seedDirectories": [seed(target="Deps")]}, "", "/runtime/seedDirectories/0/target"),
        ({"seedDirectories": [seed(target="a/b")]}, "", "/runtime/seedDirectories/0/target"),
        ({"seedDirectories": [seed(target="x" * 65)]}, "", "/runtime/seedDirectories/0/target"),
        (
            {"seedDirectories": [seed(target="home")]},
            "reserved",
            "/runtime/seedDirectories/0/target",
        ),
        (
            {"seedDirectories": [seed(target="tmp")]},
            "reserved",
            "/runtime/seedDirectories/0/target",
        ),
        (
            {"seedDirectories": [seed(), seed(target="deps")]},
            "already used",
            "/runtime/seedDirectories/1/target",
        ),
        (
            {"seedDirectories": [seed()], "sharedCacheDirectories": [cache(target="deps")]},
            "already used",
            "/runtime/sharedCacheDirectories/0/target",
        ),
        ({"seedDirectories": [seed(roles=[])]}, "", "/runtime/seedDirectories/0/roles"),
        (
            {"seedDirectories": [seed(roles=["judge"])]},
            "",
            "/runtime/seedDirectories/0/roles/0",
        ),
        ({"sharedCacheDirectories": [{"source": "../cache", "target": "c"}]}, "roles", None),
        (
            {"seedDirectories": [seed(source="../missing")]},
            "does not exist",
            "/runtime/seedDirectories/0/source",
        ),
        (
            {"seedDirectories": [seed(source="{{sevro.runtime}}/x")]},
            "only understood in environment.set",
            "/runtime/seedDirectories/0/source",
        ),
        (
            {"seedDirectories": [seed(source="~/.acme-agent")]},
            "credential location",
            "/runtime/seedDirectories/0/source",
        ),
        (
            {"seedDirectories": [seed(source="~/")]},
            "overlaps a credential location",
            "/runtime/seedDirectories/0/source",
        ),
        (
            {"sharedCacheDirectories": [cache(source="../missing")]},
            "does not exist",
            "/runtime/sharedCacheDirectories/0/source",
        ),
        (
            {"sharedCacheDirectories": [cache(), cache(source="../cache", target="again")]},
            "overlaps another shared cache",
            "/runtime/sharedCacheDirectories/1/source",
        ),
        (
            {"seedDirectories": [seed()], "sharedCacheDirectories": [cache(source="../deps/pkg")]},
            "overlaps a seed directory",
            "/runtime/sharedCacheDirectories/0/source",
        ),
        (
            {"sharedCacheDirectories": [cache(source="../deps/run.sh")]},
            "not a directory",
            "/runtime/sharedCacheDirectories/0/source",
        ),
        (
            {"artifactDirectories": [{"name": "a", "path": ".."}]},
            "'..' component",
            "/runtime/artifactDirectories/0/path",
        ),
    ],
)
def test_bad_slots_are_refused_with_a_pointer(
    area: Path, runtime: dict[str, Any], fragment: str, pointer: str | None
) -> None:
    path = write(area, doc(runtime=runtime))
    with pytest.raises(InvocationError) as caught:
        load_runtime(area / "project", path, CREDENTIALS, env(area))
    assert fragment in caught.value.message, caught.value.message
    if pointer is not None:
        assert caught.value.pointer == pointer
    assert caught.value.exit_code == 64


def test_a_cache_may_not_overlap_a_read_only_root(area: Path) -> None:
    path = write(
        area,
        doc(
            filesystem={"readOnlyRoots": ["../other"]},
            runtime={"sharedCacheDirectories": [cache(source="../other")]},
        ),
    )
    with pytest.raises(InvocationError, match="overlaps a read-only root"):
        load_runtime(area / "project", path, CREDENTIALS, env(area))


def test_a_cache_that_is_not_owned_or_not_writable_is_refused(area: Path) -> None:
    pointer = "/runtime/sharedCacheDirectories/0/source"
    if os.geteuid() == 0:  # root writes anywhere: give the cache away instead
        os.chown(area / "cache", 65534, 65534)
        refused(area, "not owned by the invoking user", pointer, sharedCacheDirectories=[cache()])
        return
    (area / "cache").chmod(0o500)
    try:
        refused(area, "not readable and writable", pointer, sharedCacheDirectories=[cache()])
    finally:
        (area / "cache").chmod(0o700)


def test_a_seed_with_too_many_entries_is_refused(
    area: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(seeds_module, "MAX_SEED_ENTRIES", 3)
    load(area, seedDirectories=[seed()])  # exactly three: the bound itself is fine
    (area / "deps" / "fourth").write_text("")
    refused(
        area, "more than 3 entries", "/runtime/seedDirectories/0/source", seedDirectories=[seed()]
    )


def test_a_seed_with_too_many_bytes_is_refused(area: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(seeds_module, "MAX_SEED_BYTES", 32)
    load(area, seedDirectories=[seed()])  # 10 + 22 bytes
    (area / "deps" / "one-more").write_text("x")
    refused(
        area, "more than 32 bytes", "/runtime/seedDirectories/0/source", seedDirectories=[seed()]
    )


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (lambda d: os.symlink("../../other", d / "escape"), "escapes the directory"),
        (lambda d: os.symlink(str(d / "pkg"), d / "absolute"), "escapes the directory"),
        (lambda d: os.symlink("missing", d / "dangling"), "dangling symlink"),
        (lambda d: os.symlink(".", d / "pkg" / "loop"), "directory cycle"),
        (lambda d: os.symlink("..", d / "pkg" / "up"), "directory cycle"),
        (lambda d: os.mkfifo(d / "pipe"), "not a file, directory or symlink"),
        (lambda d: socket.socket(socket.AF_UNIX).bind(str(d / "sock")), "not a file, directory"),
    ],
)
def test_unsafe_trees_are_refused(area: Path, make: Any, fragment: str) -> None:
    make(area / "deps")
    refused(area, fragment, "/runtime/seedDirectories/0/source", seedDirectories=[seed()])


def test_a_link_inside_the_tree_is_kept_as_a_link(area: Path, tmp_path: Path) -> None:
    os.symlink("pkg/module.py", area / "deps" / "alias.py")
    policy = load(area, seedDirectories=[seed(roles=["candidate"])])
    runtime = policy.role_runtime("candidate", tmp_path / "root")
    copy = runtime.root / "deps"
    assert os.readlink(copy / "alias.py") == "pkg/module.py"
    assert (copy / "alias.py").read_text() == "VALUE = 1\n"


def test_seeds_and_caches_may_not_overlap_protected_roots(area: Path) -> None:
    roots = [ProtectedRoot("project-root", area / "deps")]
    policy = load(area, seedDirectories=[seed()])
    with pytest.raises(InvocationError, match=r"seed directory .* protected project-root"):
        refuse_overlaps(policy, roots, CREDENTIALS)
    policy = load(area, sharedCacheDirectories=[cache(source="../deps/pkg")])
    with pytest.raises(InvocationError, match=r"shared cache .* protected project-root") as caught:
        refuse_overlaps(policy, roots, CREDENTIALS)
    assert caught.value.pointer == "/runtime/sharedCacheDirectories/0/source"
    with pytest.raises(InvocationError, match="where trial workspaces live"):
        refuse_overlaps(
            load(area, sharedCacheDirectories=[cache()]), [], CREDENTIALS, [area / "cache"]
        )
    refuse_overlaps(load(area, sharedCacheDirectories=[cache()]), [], CREDENTIALS)


# role runtime roots


def test_each_role_gets_its_own_copy_and_only_the_roles_it_selects(
    area: Path, tmp_path: Path
) -> None:
    policy = load(
        area,
        {"set": {"DEPS": "{{sevro.runtime}}/deps"}},
        seedDirectories=[seed(roles=["candidate", "checks"])],
        sharedCacheDirectories=[cache()],
    )
    candidate = policy.role_runtime("candidate", tmp_path / "candidate")
    checks = policy.role_runtime("checks", tmp_path / "checks")
    semantic = policy.role_runtime("semantic", tmp_path / "semantic")
    for runtime in (candidate, checks):
        copy = runtime.root / "deps"
        assert (copy / "pkg" / "module.py").read_text() == "VALUE = 1\n"
        assert (copy / "run.sh").stat().st_mode & 0o777 == 0o750
        assert runtime.environment["DEPS"] == f"{runtime.root}/deps"
    (candidate.root / "deps" / "pkg" / "module.py").write_text("changed by the candidate\n")
    assert (checks.root / "deps" / "pkg" / "module.py").read_text() == "VALUE = 1\n"
    assert (area / "deps" / "pkg" / "module.py").read_text() == "VALUE = 1\n"
    assert not os.path.lexists(semantic.root / "deps")
    assert sorted(os.listdir(semantic.root)) == ["home", "tmp"]
    assert candidate.writable_roots == (candidate.root, area / "cache")
    assert checks.writable_roots == (checks.root,)
    assert os.readlink(candidate.root / "uv-cache") == str(area / "cache")
    assert not os.path.lexists(checks.root / "uv-cache")
    assert isinstance(candidate, RoleRuntime) and candidate.home == candidate.root / "home"
    again = policy.role_runtime("candidate", tmp_path / "candidate")  # idempotent per root
    assert (again.root / "deps" / "pkg" / "module.py").read_text() == "changed by the candidate\n"


def test_a_seed_changed_before_first_use_fails_and_after_capture_changes_nothing(
    area: Path, tmp_path: Path
) -> None:
    policy = load(area, seedDirectories=[seed()])
    (area / "deps" / "pkg" / "module.py").write_text("VALUE = 666\n")
    with pytest.raises(RuntimeUnavailable, match="changed after the runtime configuration"):
        policy.role_runtime("candidate", tmp_path / "first")

    fresh = load(area, seedDirectories=[seed()])
    fresh.role_runtime("candidate", tmp_path / "second")  # captured now
    (area / "deps" / "pkg" / "module.py").write_text("VALUE = 777\n")
    later = fresh.role_runtime("advisory", tmp_path / "third")
    assert (later.root / "deps" / "pkg" / "module.py").read_text() == "VALUE = 666\n"


def test_a_removed_shared_cache_makes_the_role_unavailable(area: Path, tmp_path: Path) -> None:
    policy = load(area, sharedCacheDirectories=[cache()])
    (area / "cache").rmdir()
    with pytest.raises(RuntimeUnavailable, match="does not exist"):
        policy.role_runtime("candidate", tmp_path / "root")
    policy.role_runtime("checks", tmp_path / "other")  # a role that does not select it runs


def test_the_identity_binds_cache_source_slot_and_roles_but_not_contents(area: Path) -> None:
    first = load(area, sharedCacheDirectories=[cache()]).configuration()
    (area / "cache" / "wheel").write_text("new contents\n")
    assert load(area, sharedCacheDirectories=[cache()]).configuration() == first
    other = load(area, sharedCacheDirectories=[cache(roles=["candidate", "checks"])])
    assert other.configuration()["digest"] != first["digest"]
    assert first["sharedCacheDirectories"] == [
        {"source": str(area / "cache"), "target": "uv-cache", "roles": ["candidate"]}
    ]


def test_the_placeholder_is_kept_symbolic_in_the_identity(area: Path) -> None:
    path = write(area, doc(environment={"set": {"UV_CACHE_DIR": "{{sevro.runtime}}/uv-cache"}}))
    policy = load_runtime(area / "project", path, CREDENTIALS, env(area))
    assert policy is not None
    document = policy.configuration()
    assert document["environment"]["set"] == {"UV_CACHE_DIR": "{{sevro.runtime}}/uv-cache"}
    assert policy.environment(Path("/t"), Path("/r"))["UV_CACHE_DIR"] == "/r/uv-cache"


def test_a_hooks_role_is_accepted_beside_hook_plugins(area: Path) -> None:
    runtime = {"seedDirectories": [seed(roles=["hooks"])]}
    path = write(area, doc(runtime=runtime, hooks={"plugins": ["guard"]}))
    policy = load_runtime(area / "project", path, CREDENTIALS, env(area))
    assert policy is not None and policy.seeds[0].roles == ("hooks",)
    assert policy.hook_plugins == ("guard",)
