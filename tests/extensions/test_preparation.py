"""``prepare`` results: every runtime rule refused with one line, and real installs.

Each rule has a negative control (the mutated result is refused, naming the rule) next to the
positive one (the minimal result that satisfies it is accepted), so neither side can pass by
accident. Installs write into real directories and real ``git init`` repositories, and are
checked with git itself.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sevro_core.api import CancelToken, Case, CaseSources, InvocationError
from sevro_core.builtins.generated_fixture import GeneratedFixtureProvider
from sevro_core.fixtures.workspace import create_workspace
from sevro_core.run.sources import load_case_sources
from sevro_core.testing import require_tool
from sevro_extensions.fixturesetup import FixtureFailure
from sevro_extensions.preparation import (
    DECLARATION_CAPABILITIES,
    FIXTURE_SETUP_CAPABILITY,
    Preparation,
    check_preparation,
    declared_fixture_paths,
    exclude_pattern,
)
from tests.extensions.conftest import REFERENCE, run
from tests.extensions.test_schemas import CASE

ALL_CAPABILITIES = frozenset({*DECLARATION_CAPABILITIES.values(), FIXTURE_SETUP_CAPABILITY})
PLACEHOLDER = "{{sevro.skill_invocation}}"


def artifact(artifact_id: str, path: str, content: bytes = b"x\n", **extra: Any) -> dict[str, Any]:
    return {
        "id": artifact_id,
        "relativePath": path,
        "sha256": hashlib.sha256(content).hexdigest(),
        "contentBase64": base64.b64encode(content).decode(),
        **extra,
    }


def result(*artifacts: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "artifacts": list(artifacts),
        "requestedInstrumentation": [],
        "extensionData": {},
        **extra,
    }


def case(prompt: str = "Fix the bug.", follow_up: str | None = None) -> Case:
    return Case(id="demo.case", prompt=prompt, fixture={}, follow_up_prompt=follow_up)


def check(
    answer: dict[str, Any],
    *,
    prompt: str = "Fix the bug.",
    follow_up: str | None = None,
    fixture_kind: str = "generated",
    fixture_paths: tuple[str, ...] = (),
    negotiated: frozenset[str] = ALL_CAPABILITIES,
    host: frozenset[str] = ALL_CAPABILITIES,
    sources: CaseSources | None = None,
) -> Preparation:
    return check_preparation(
        answer,
        case=case(prompt, follow_up),
        fixture_kind=fixture_kind,
        fixture_paths=fixture_paths,
        negotiated=negotiated,
        host_capabilities=host,
        sources=sources,
    )


def refused(answer: dict[str, Any], match: str, **kwargs: Any) -> str:
    with pytest.raises(InvocationError, match=match) as raised:
        check(answer, **kwargs)
    message = str(raised.value)
    assert "\n" not in message and raised.value.exit_code == 64
    return message


# ---- artifacts ----------------------------------------------------------------------------


def test_a_plain_artifact_is_accepted_and_recorded_without_its_content() -> None:
    prepared = check(result(artifact("notes", "notes/PREPARED.md", b"hi\n", executable=True)))
    assert [a.content for a in prepared.artifacts] == [b"hi\n"]
    assert prepared.record == {
        "artifacts": [
            {
                "id": "notes",
                "relativePath": "notes/PREPARED.md",
                "sha256": hashlib.sha256(b"hi\n").hexdigest(),
                "executable": True,
                "gitExclude": False,
            }
        ]
    }
    assert prepared.prompt == "Fix the bug." and prepared.follow_up_prompt is None
    assert prepared.host.invocation is None and prepared.fixture_setup is None


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (lambda a: a.update(contentBase64="QR=="), "not canonical base64"),
        (lambda a: a.update(contentBase64="eA==\n"), "not valid base64"),
        (lambda a: a.update(contentBase64="e@=="), "not valid base64"),
        (lambda a: a.update(sha256="0" * 64), "sha256 does not match"),
        (lambda a: a.update(id="sevro.semantic.verdicts"), "is reserved"),
        (lambda a: a.update(sourceRef="src"), "exactly one of contentBase64 and sourceRef"),
    ],
)
def test_artifact_content_rules(mutate: Callable[[dict[str, Any]], None], match: str) -> None:
    bad = artifact("a", "a.txt")
    mutate(bad)
    assert "artifact " in refused(result(bad), match)


@pytest.mark.parametrize(
    ("path", "match"),
    [
        ("../escape", r"'\.\.' part"),
        ("a/../b", r"'\.\.' part"),
        ("/etc/passwd", "is absolute"),
        ("a/./b", r"'\.' "),
        ("a//b", "empty"),
        ("a/", "empty"),
        (".git/hooks/pre-commit", "inside .git"),
        ("sub/.GIT/config", "inside .git"),
        ("line\nbreak", "control character"),
        ("back\\slash", "backslash"),
    ],
)
def test_a_path_that_is_not_normalised_and_relative_is_refused(path: str, match: str) -> None:
    message = refused(result(artifact("a", path)), match)
    assert message.startswith("prepare artifact a: relativePath")


def test_all_artifacts_together_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    two = result(artifact("a", "a", b"12345"), artifact("b", "b", b"12345"))
    monkeypatch.setattr("sevro_extensions.preparation.MAX_PREPARATION_BYTES", 10)
    assert check(two).artifacts
    monkeypatch.setattr("sevro_extensions.preparation.MAX_PREPARATION_BYTES", 9)
    refused(two, "more than 9 bytes together")


def test_extension_data_is_kept_for_evaluate() -> None:
    data = {"acme.prepared": {"n": 1}}
    assert check(result(extensionData=data)).extension_data == data
    refused({**result(), "extensionData": []}, "extensionData must be an object")


def test_artifact_ids_are_unique() -> None:
    refused(result(artifact("a", "x"), artifact("a", "y")), "id is used twice")
    check(result(artifact("a", "x"), artifact("b", "y")))


@pytest.mark.parametrize(
    ("paths", "fixture_paths", "match"),
    [
        (("README.md",), ("README.md",), "is the fixture path 'README.md'"),
        (("readme.MD",), ("README.md",), "is the fixture path 'README.md'"),
        (("cafe\u0301",), ("caf\u00e9",), "is the fixture path"),
        (("src/app.py/x",), ("src/app.py",), "inside the fixture file 'src/app.py'"),
        (("src",), ("src/app.py",), "a parent of the fixture path 'src/app.py'"),
        (("tool", "tool/inner"), (), "a parent of it"),
        (("same", "same"), (), "the same path"),
    ],
)
def test_artifacts_never_collide_with_fixture_paths_or_each_other(
    paths: tuple[str, ...], fixture_paths: tuple[str, ...], match: str
) -> None:
    answer = result(*(artifact(f"a{index}", path) for index, path in enumerate(paths)))
    refused(answer, match, fixture_paths=fixture_paths)


def test_artifacts_beside_fixture_paths_are_accepted() -> None:
    check(result(artifact("a", "src/new.py")), fixture_paths=("src/app.py", "README.md"))
    # a history may turn a file into a directory; the fixture's own paths are not held to it
    check(result(artifact("a", "other")), fixture_paths=("lib", "lib/x.py"))


def test_git_exclude_needs_a_git_fixture() -> None:
    excluded = result(artifact("a", "x", gitExclude=True))
    refused(excluded, "gitExclude needs a Git fixture", fixture_kind="inline")
    for kind in ("generated", "repository"):
        assert check(excluded, fixture_kind=kind).artifacts[0].git_exclude
    assert not check(result(artifact("a", "x")), fixture_kind="inline").artifacts[0].git_exclude


# ---- sourceRef ------------------------------------------------------------------------------


def _sources(tmp_path: Path, **entries: Path) -> CaseSources:
    root = (tmp_path / "sources").resolve()
    return CaseSources(root=root, map_file=root / "map.json", sources=entries)


def _source_artifact(content: bytes, ref: str = "skill") -> dict[str, Any]:
    return {
        "id": "skill",
        "relativePath": ".agents/skills/demo/SKILL.md",
        "sha256": hashlib.sha256(content).hexdigest(),
        "sourceRef": ref,
    }


def test_a_source_ref_is_read_through_the_source_map(tmp_path: Path) -> None:
    (tmp_path / "sources").mkdir()
    file = tmp_path / "sources" / "SKILL.md"
    file.write_bytes(b"# demo\n")
    sources = _sources(tmp_path, skill=file)
    prepared = check(result(_source_artifact(b"# demo\n")), sources=sources)
    assert prepared.artifacts[0].content == b"# demo\n"
    file.write_bytes(b"changed later\n")
    assert prepared.artifacts[0].content == b"# demo\n", "what was checked is what installs"


def test_a_source_ref_through_the_cli_source_map_stays_inside_the_root(tmp_path: Path) -> None:
    root = tmp_path / "sources"
    root.mkdir()
    (root / "SKILL.md").write_bytes(b"# inside\n")
    (tmp_path / "secret").write_bytes(b"# outside\n")
    (root / "link").symlink_to(root / "SKILL.md")
    map_file = tmp_path / "map.json"
    map_file.write_text(json.dumps({"skill": (root / "link").as_uri()}))
    sources = load_case_sources(root, map_file)
    assert sources is not None
    assert check(result(_source_artifact(b"# inside\n")), sources=sources).artifacts
    assert sources.sources["skill"] == (root / "SKILL.md").resolve()
    # The map was checked at start-up; a file swapped for a link since cannot lead out of it.
    (root / "SKILL.md").unlink()
    (root / "SKILL.md").symlink_to(tmp_path / "secret")
    refused(result(_source_artifact(b"# outside\n")), "outside --case-source-root", sources=sources)


def test_source_ref_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "sources").mkdir()
    (tmp_path / "outside").write_bytes(b"secret\n")
    (tmp_path / "sources" / "out").symlink_to(tmp_path / "outside")
    (tmp_path / "sources" / "dir").mkdir()
    big = tmp_path / "sources" / "big"
    big.write_bytes(b"0123456789")
    good = tmp_path / "sources" / "good"
    good.write_bytes(b"good\n")
    sources = _sources(
        tmp_path, out=tmp_path / "sources" / "out", dir=tmp_path / "sources" / "dir", big=big
    )
    refused(result(_source_artifact(b"x", "out")), "needs --case-source-root")
    refused(result(_source_artifact(b"x", "nope")), "is not in", sources=sources)
    refused(
        result(_source_artifact(b"secret\n", "out")), "outside --case-source-root", sources=sources
    )
    refused(result(_source_artifact(b"x", "dir")), "not a regular file", sources=sources)
    good_sources = _sources(tmp_path, good=good)
    refused(
        result(_source_artifact(b"bad\n", "good")), "sha256 does not match", sources=good_sources
    )
    assert check(result(_source_artifact(b"good\n", "good")), sources=good_sources).artifacts
    assert check(result(_source_artifact(b"0123456789", "big")), sources=sources).artifacts
    monkeypatch.setattr("sevro_extensions.preparation.MAX_PREPARATION_SOURCE_FILE_BYTES", 4)
    refused(result(_source_artifact(b"0123456789", "big")), "larger than 4 bytes", sources=sources)


# ---- declarations and capabilities -----------------------------------------------------------


def _marketplace_result(**extra: Any) -> dict[str, Any]:
    return result(
        artifact("m", "market/.claude-plugin/marketplace.json", b"{}", gitExclude=True),
        artifact("p", "market/plugin/.codex-plugin/plugin.json", b"{}", gitExclude=True),
        artifact("s", "market/plugin/skills/review/SKILL.md", b"# review\n", gitExclude=True),
        codexMarketplace={
            "artifactRoot": "market",
            "marketplaceName": "demo-market",
            "pluginNames": ["demo"],
        },
        **extra,
    )


def _plugin_dirs_result(*roots: str) -> dict[str, Any]:
    files = [
        artifact(f"p{i}", f"{root}/.claude-plugin/plugin.json") for i, root in enumerate(roots)
    ]
    return result(*files, claudePluginDirs={"artifactRoots": list(roots)})


DECLARED: dict[str, dict[str, Any]] = {
    "codexMarketplace": _marketplace_result(),
    "claudePluginDirs": _plugin_dirs_result("plugins/one"),
    "codexSkillInvocation": _marketplace_result(
        codexSkillInvocation={"pluginName": "demo", "skillName": "review"}
    ),
    "codexRepositorySkillInvocation": result(
        artifact("s", ".agents/skills/review/SKILL.md", gitExclude=True),
        codexRepositorySkillInvocation={"skillName": "review"},
    ),
    "claudeRepositorySkillInvocation": result(
        artifact("s", ".claude/skills/review/SKILL.md"),
        claudeRepositorySkillInvocation={"skillName": "review"},
    ),
    "claudeSkillInvocation": result(
        claudeSkillInvocation={"pluginName": "demo", "skillName": "review"}
    ),
}


def _prompt_for(key: str) -> str:
    return f"{PLACEHOLDER} please" if "Invocation" in key else "Fix it."


@pytest.mark.parametrize("key", sorted(DECLARATION_CAPABILITIES))
def test_each_declaration_needs_its_capability_negotiated_and_offered_by_the_host(
    key: str,
) -> None:
    answer, capability = DECLARED[key], DECLARATION_CAPABILITIES[key]
    prompt = _prompt_for(key)
    others = ALL_CAPABILITIES - {capability}
    assert check(answer, prompt=prompt) is not None
    refused(
        answer, f"{key}: needs capability {capability} negotiated", prompt=prompt, negotiated=others
    )
    refused(
        answer, f"{key}: needs capability {capability}, which the host", prompt=prompt, host=others
    )


def test_fixture_setup_needs_the_engine_capability_negotiated() -> None:
    answer = result(fixtureSetup={"command": ["/bin/true"], "environment": {"TOKEN": "s3cret"}})
    refused(answer, "sevro.fixture.setup", negotiated=ALL_CAPABILITIES - {FIXTURE_SETUP_CAPABILITY})
    prepared = check(answer, host=frozenset())
    assert prepared.fixture_setup is not None
    assert prepared.record["fixtureSetupDigest"] == prepared.fixture_setup.digest
    assert "s3cret" not in repr(prepared.record) and "TOKEN" not in repr(prepared.record)


def test_a_bad_fixture_setup_is_refused_before_anything_runs() -> None:
    refused(result(fixtureSetup={"command": ["relative"]}), "not an absolute path")


def test_the_marketplace_is_handed_to_the_host() -> None:
    market = check(_marketplace_result()).host.codex_marketplace
    assert market is not None
    assert (market.artifact_root, market.marketplace_name, market.plugin_names) == (
        "market",
        "demo-market",
        ("demo",),
    )


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (lambda r: r["codexMarketplace"].update(marketplaceName="Demo"), "marketplaceName must"),
        (lambda r: r["codexMarketplace"].update(pluginNames=["demo", "demo"]), "not unique"),
        (lambda r: r["codexMarketplace"].update(pluginNames=["9x"]), "plugin names must"),
        (lambda r: r["codexMarketplace"].update(artifactRoot="../market"), "'..' part"),
        (
            lambda r: r["artifacts"][1].pop("gitExclude"),
            "artifact p under market is not gitExclude",
        ),
        (lambda r: r["artifacts"].pop(0), "no artifact market/.claude-plugin/marketplace.json"),
    ],
)
def test_marketplace_rules(mutate: Callable[[dict[str, Any]], None], match: str) -> None:
    answer = _marketplace_result()
    mutate(answer)
    assert refused(answer, match).startswith("prepare codexMarketplace")


def test_claude_plugin_dirs_are_unique_non_overlapping_and_each_has_a_manifest() -> None:
    assert check(_plugin_dirs_result("plugins/one", "plugins/two")).host.claude_plugin_dirs == (
        "plugins/one",
        "plugins/two",
    )
    refused(_plugin_dirs_result("plugins", "plugins/two"), "roots overlap")
    for twice in (["plugins/one", "plugins/one"], ["Plugins/One", "plugins/one"]):
        answer = _plugin_dirs_result("plugins/one")
        answer["claudePluginDirs"]["artifactRoots"] = twice
        refused(answer, "roots overlap")
    missing = result(claudePluginDirs={"artifactRoots": ["plugins/one"]})
    refused(missing, "no artifact plugins/one/.claude-plugin/plugin.json")
    refused(_plugin_dirs_result("/abs"), "is absolute")


# ---- invocation and the placeholder ------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "token"),
    [
        ("codexSkillInvocation", "$demo:review"),
        ("codexRepositorySkillInvocation", "$review"),
        ("claudeRepositorySkillInvocation", "/review"),
        ("claudeSkillInvocation", "/demo:review"),
    ],
)
def test_each_invocation_renders_its_token(key: str, token: str) -> None:
    prepared = check(DECLARED[key], prompt=f"{PLACEHOLDER} please")
    assert prepared.prompt == f"{token} please"
    assert prepared.host.invocation is not None
    assert prepared.record["skillInvocation"] == {
        "kind": prepared.host.invocation.kind,
        "pluginName": prepared.host.invocation.plugin_name,
        "skillName": "review",
    }


def test_the_placeholder_may_sit_in_the_follow_up_and_in_its_legacy_spelling() -> None:
    answer = DECLARED["codexRepositorySkillInvocation"]
    prepared = check(answer, prompt="First.", follow_up=f"Now use {PLACEHOLDER}.")
    assert (prepared.prompt, prepared.follow_up_prompt) == ("First.", "Now use $review.")
    legacy = check(answer, prompt="Use {{sevro.codex.skill_invocation}}.")
    assert legacy.prompt == "Use $review."


def test_the_placeholder_appears_exactly_once_and_only_with_a_declaration() -> None:
    answer = DECLARED["codexRepositorySkillInvocation"]
    refused(answer, "exactly once.*found 0", prompt="No placeholder.")
    refused(answer, "exactly once.*found 2", prompt=f"{PLACEHOLDER}", follow_up=PLACEHOLDER)
    refused(answer, "found 2", prompt=f"{PLACEHOLDER} {{{{sevro.codex.skill_invocation}}}}")
    refused(result(), "no invocation is declared", prompt=f"Use {PLACEHOLDER}")
    refused(result(), "no invocation is declared", follow_up="{{sevro.codex.skill_invocation}}")


def test_only_one_invocation_declaration() -> None:
    both = {**DECLARED["codexRepositorySkillInvocation"]}
    both["claudeSkillInvocation"] = {"pluginName": "demo", "skillName": "review"}
    refused(both, "only one invocation declaration", prompt=PLACEHOLDER)


def test_claude_repository_invocation_must_start_the_initial_prompt() -> None:
    answer = DECLARED["claudeRepositorySkillInvocation"]
    refused(answer, "start with", prompt=f"Please {PLACEHOLDER}")
    refused(answer, "start with", prompt="First.", follow_up=PLACEHOLDER)
    assert check(answer, prompt=f"{PLACEHOLDER} now").prompt == "/review now"


def test_each_invocation_needs_its_skill_where_the_host_looks() -> None:
    codex_plugin = _marketplace_result(
        codexSkillInvocation={"pluginName": "demo", "skillName": "other"}
    )
    refused(codex_plugin, "no artifact market/plugin/skills/other/SKILL.md", prompt=PLACEHOLDER)
    unknown_plugin = _marketplace_result(
        codexSkillInvocation={"pluginName": "nope", "skillName": "review"}
    )
    refused(unknown_plugin, "not in the codexMarketplace pluginNames", prompt=PLACEHOLDER)
    no_market = result(codexSkillInvocation={"pluginName": "demo", "skillName": "review"})
    refused(no_market, "not in the codexMarketplace pluginNames", prompt=PLACEHOLDER)
    repo = result(codexRepositorySkillInvocation={"skillName": "review"})
    refused(repo, r"no artifact \.agents/skills/review/SKILL\.md", prompt=PLACEHOLDER)
    tracked = result(
        artifact("s", ".agents/skills/review/SKILL.md"),
        codexRepositorySkillInvocation={"skillName": "review"},
    )
    refused(tracked, "must be gitExclude", prompt=PLACEHOLDER)
    claude = result(claudeRepositorySkillInvocation={"skillName": "review"})
    refused(claude, r"no artifact \.claude/skills/review/SKILL\.md", prompt=PLACEHOLDER)


@pytest.mark.parametrize("skill", ["..", ".", "a/b", "", "sp ace"])
def test_skill_names_are_plain(skill: str) -> None:
    answer = result(claudeSkillInvocation={"pluginName": "demo", "skillName": skill})
    refused(answer, "skillName must match", prompt=PLACEHOLDER)


# ---- install ---------------------------------------------------------------------------------


def _git_workspace(tmp_path: Path) -> Path:
    git = require_tool("git")
    workspace = tmp_path / "ws"
    workspace.mkdir(parents=True)
    # no template, as sevro's fixtures: .git/info does not exist until an exclude needs it
    subprocess.run([git, "init", "-q", "--template=", str(workspace)], check=True)
    (workspace / "tracked.txt").write_text("tracked\n")
    return workspace


def _git_status(workspace: Path) -> str:
    env = {"PATH": os.environ.get("PATH", ""), "GIT_CONFIG_GLOBAL": os.devnull, "HOME": "/"}
    done = subprocess.run(
        [require_tool("git"), "status", "--porcelain", "--untracked-files=all"],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def _install(prepared: Preparation, workspace: Path, *, git: bool = True) -> None:
    prepared.install(
        workspace, git=git, fixture_bin_dir=None, project_root=workspace, cancel=CancelToken()
    )


def test_install_writes_private_files_and_git_excludes_exactly_the_declared_ones(
    tmp_path: Path,
) -> None:
    workspace = _git_workspace(tmp_path)
    odd = "odd/we*ird [name]?.md "
    prepared = check(
        result(
            artifact("tool", "bin/run.sh", b"#!/bin/sh\necho hi\n", executable=True),
            artifact("skill", ".agents/skills/review/SKILL.md", b"# r\n", gitExclude=True),
            artifact("odd", odd, b"odd\n", gitExclude=True),
            artifact("kept", "notes/KEEP.md", b"keep\n"),
        )
    )
    (workspace / "odd").mkdir()
    (workspace / "odd" / "weXird [name]?.md ").write_text("a lookalike the glob would match\n")
    _install(prepared, workspace)
    assert stat.S_IMODE((workspace / "bin" / "run.sh").stat().st_mode) == 0o700
    assert stat.S_IMODE((workspace / "notes" / "KEEP.md").stat().st_mode) == 0o600
    assert (workspace / ".agents/skills/review/SKILL.md").read_bytes() == b"# r\n"
    assert (workspace / odd).read_bytes() == b"odd\n"
    status = _git_status(workspace)
    assert "bin/run.sh" in status and "notes/KEEP.md" in status, "not excluded: still visible"
    assert ".agents" not in status and '"odd/we*ird' not in status
    assert "weXird" in status, "the escaped pattern matches only the artifact"


def test_install_appends_to_an_existing_exclude_file_on_a_new_line(tmp_path: Path) -> None:
    workspace = _git_workspace(tmp_path)
    exclude = workspace / ".git" / "info" / "exclude"
    exclude.parent.mkdir()
    exclude.write_text("*.log")  # no trailing newline
    _install(check(result(artifact("a", "a.txt", gitExclude=True))), workspace)
    lines = exclude.read_text().splitlines()
    assert lines[0] == "*.log" and lines[-1] == "/a.txt"


def test_exclude_patterns_escape_globs_and_trailing_spaces() -> None:
    assert exclude_pattern("a/b.md") == "/a/b.md"
    assert exclude_pattern("x*?[y]") == "/x\\*\\?\\[y]"
    assert exclude_pattern("t  ") == "/t\\ \\ "


def test_install_never_follows_a_symlink_the_fixture_planted(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    prepared = check(result(artifact("a", "dir/file.txt", b"payload\n")))
    as_file = _git_workspace(tmp_path)
    (as_file / "dir").mkdir()
    (as_file / "dir" / "file.txt").symlink_to(outside / "target.txt")
    with pytest.raises(FixtureFailure, match=r"artifact a \(dir/file.txt\): the path already"):
        _install(prepared, as_file)
    assert not (outside / "target.txt").exists()
    as_parent = tmp_path / "second"
    as_parent.mkdir()
    (as_parent / "dir").symlink_to(outside)
    with pytest.raises(FixtureFailure, match="dir in the workspace is a symlink"):
        _install(prepared, as_parent, git=False)
    assert list(outside.iterdir()) == []
    clean = tmp_path / "third"
    clean.mkdir()
    _install(prepared, clean, git=False)
    assert (clean / "dir" / "file.txt").read_bytes() == b"payload\n"


def test_install_refuses_a_file_the_fixture_already_has(tmp_path: Path) -> None:
    workspace = _git_workspace(tmp_path)
    with pytest.raises(FixtureFailure, match="already exists"):
        _install(check(result(artifact("a", "tracked.txt"))), workspace)
    assert (workspace / "tracked.txt").read_text() == "tracked\n"


def test_install_refuses_a_symlinked_git_info_directory(tmp_path: Path) -> None:
    workspace = _git_workspace(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (workspace / ".git" / "info").symlink_to(elsewhere)
    with pytest.raises(FixtureFailure, match=r"\.git/info in the workspace is a symlink"):
        _install(check(result(artifact("a", "a.txt", gitExclude=True))), workspace)
    assert list(elsewhere.iterdir()) == []


def test_install_refuses_git_exclude_in_a_workspace_without_git(tmp_path: Path) -> None:
    prepared = check(result(artifact("a", "a.txt", gitExclude=True)))
    with pytest.raises(FixtureFailure, match="need a Git fixture"):
        _install(prepared, tmp_path, git=False)


def test_install_runs_the_fixture_setup_after_the_artifacts(tmp_path: Path) -> None:
    workspace = _git_workspace(tmp_path)
    script = "test -f prepared.txt && cp prepared.txt {{sevro.workspace}}/copied.txt"
    answer = result(
        artifact("p", "prepared.txt", b"ready\n"),
        fixtureSetup={"command": ["/bin/sh", "-c", script]},
    )
    _install(check(answer), workspace)
    assert (workspace / "copied.txt").read_bytes() == b"ready\n"
    failing = result(fixtureSetup={"command": ["/bin/sh", "-c", "exit 7"]})
    with pytest.raises(FixtureFailure, match="exited with status 7"):
        _install(check(failing), _git_workspace(tmp_path / "again"))


def test_a_cancelled_install_writes_nothing(tmp_path: Path) -> None:
    token = CancelToken()
    token.cancel("test")
    with pytest.raises(FixtureFailure, match="cancelled"):
        check(result(artifact("a", "a.txt"))).install(
            tmp_path, git=False, fixture_bin_dir=None, project_root=tmp_path, cancel=token
        )
    assert list(tmp_path.iterdir()) == []


# ---- the real reference extension ---------------------------------------------------------------


def test_the_reference_extensions_prepare_answer_checks_and_installs(
    tmp_path: Path, node: str
) -> None:
    params = {
        "case": CASE,
        "host": {"id": "codex", "capabilities": []},
        "condition": "passive",
        "configuration": {},
    }
    answer = run([node, str(REFERENCE)], "prepare", params, tmp_path)
    prepared = check(answer.result)
    assert [a.relative_path for a in prepared.artifacts] == ["notes/PREPARED.md"]
    workspace = tmp_path / "ws"
    workspace.mkdir()
    _install(prepared, workspace, git=False)
    expected = f"prepared for {CASE['id']} on codex\n".encode()
    assert (workspace / "notes" / "PREPARED.md").read_bytes() == expected
    assert prepared.extension_data


def test_a_real_generated_fixture_gets_artifacts_excludes_and_a_setup_using_its_tools(
    tmp_path: Path,
) -> None:
    require_tool("git")
    declaration: dict[str, Any] = {
        "kind": "generated",
        "commits": [{"message": "base", "files": {"src/app.py": "print(1)\n"}}],
        "bin": {"stamp": '#!/bin/sh\necho stamped > "$1"\n'},
    }
    workspace = create_workspace(tmp_path)
    materialised = GeneratedFixtureProvider().compile(declaration).materialise(workspace)
    answer = result(
        artifact("skill", ".agents/skills/review/SKILL.md", b"# review\n", gitExclude=True),
        artifact("tracked", "notes/NOTES.md", b"notes\n"),
        codexRepositorySkillInvocation={"skillName": "review"},
        fixtureSetup={"command": ["/bin/sh", "-c", "stamp .agents/skills/review/stamp"]},
    )
    prepared = check(answer, prompt=f"Use {PLACEHOLDER}.", fixture_paths=("src/app.py",))
    refused(answer, "inside the fixture file", prompt=PLACEHOLDER, fixture_paths=("notes",))
    prepared.install(
        workspace,
        git=True,
        fixture_bin_dir=materialised.bin_dir,
        project_root=tmp_path,
        cancel=CancelToken(),
    )
    assert (workspace / ".agents/skills/review/stamp").read_text() == "stamped\n"
    status = _git_status(workspace)
    assert "notes/NOTES.md" in status and "SKILL.md" not in status
    assert prepared.prompt == "Use $review."


def test_the_artifacts_as_installed_for_evaluate(tmp_path: Path) -> None:
    prepared = check(result(artifact("a", "x/a.sh", b"#!/bin/sh\n", executable=True)))
    (found,) = prepared.artifacts_in(tmp_path)
    assert (found.id, found.path, found.executable, found.git_exclude) == (
        "a",
        tmp_path / "x" / "a.sh",
        True,
        False,
    )
    assert found.sha256 == hashlib.sha256(b"#!/bin/sh\n").hexdigest()


def test_the_declared_fixture_paths_include_every_commit() -> None:
    fixture = {
        "kind": "generated",
        "commits": [{"message": "a", "files": {"src/a.py": ""}}, {"message": "b", "files": {}}],
        "files": {"README.md": "x"},
    }
    assert declared_fixture_paths(fixture) == ("README.md", "src/a.py")
    assert declared_fixture_paths({"kind": "repository", "sourceRef": "r"}) == ()
    refused(
        result(artifact("a", "src/a.py")),
        "is the fixture path",
        fixture_paths=declared_fixture_paths(fixture),
    )


def test_instrumentation_requests_are_refused_unless_negotiated_elsewhere() -> None:
    answer = result(requestedInstrumentation=[{"id": "sevro.host.hooks", "configuration": {}}])
    refused(answer, "requestedInstrumentation: sevro.host.hooks is requested")
    prepared = check_preparation(
        answer,
        case=case(),
        fixture_kind="inline",
        fixture_paths=(),
        negotiated=(),
        host_capabilities=(),
        sources=None,
        instrumentation_negotiated=True,
    )
    assert prepared.artifacts == ()
