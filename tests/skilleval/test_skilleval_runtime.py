"""skill-eval ``runtime`` profiles and ``context-text`` expectations: loading and mapping.

Each rule has a rejecting control (one line naming the file and the JSON pointer) and an
accepting one; the scripted host, which honours no runtime profile, is refused through the CLI
before anything runs.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from sevro_core.api import RUNTIME_PROFILE_OBSERVATION, ExtensionBundle, HostProfile
from sevro_core.errors import InvocationError
from sevro_core.experiments.skilleval import load_definition
from sevro_core.experiments.skillevalmapping import Selection, skilleval_run
from sevro_core.limits import (
    MAX_SKILLEVAL_EXTENSION_FILES,
    MAX_SKILLEVAL_EXTENSIONS,
    MAX_SKILLEVAL_SNAPSHOT_BYTES,
)
from sevro_core.models import Case
from sevro_core.run.planning import _case_identity
from sevro_core.testing import SevroProject
from tests.skilleval import seed

ENV = {"INHERITED_SETTING": "x", "PROBE_API_TOKEN": "secret-value"}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = seed.seed_repository(tmp_path / "repo").resolve()
    seed.write_probe_bundle(root)
    (root / "extensions" / "lib").mkdir()
    (root / "extensions" / "lib" / "util.mjs").write_text("export const x = 1;\n")
    (root / "shared").mkdir()
    (root / "shared" / "data.json").write_text("{}\n")
    return root


def runtime_group(**runtime: Any) -> dict[str, Any]:
    group = seed.body_group()
    group["runtime"] = {**copy.deepcopy(seed.RUNTIME["runtime"]), **runtime}
    return group


def load(repo: Path, group: dict[str, Any], environ: dict[str, str] | None = None) -> Any:
    path = seed.write_json(repo / "groups" / "runtime.json", group)
    return load_definition(path, repo, ENV if environ is None else environ)


def refused(repo: Path, group: dict[str, Any], environ: dict[str, str] | None = None) -> Any:
    with pytest.raises(InvocationError) as caught:
        load(repo, group, environ)
    assert caught.value.source == str(repo / "groups" / "runtime.json")
    assert "\n" not in caught.value.one_line()
    return caught.value


# ---- the seed's runtime profile loads, its bundle snapshotted ------------------------------


def test_seed_runtime_loads_and_snapshots_the_bundle(repo: Path) -> None:
    (group,) = load(repo, runtime_group()).groups
    runtime = group.runtime
    assert runtime is not None
    assert (runtime.host, runtime.session) == ("pi", False)
    assert dict(runtime.literal) == {"PROBE_MODE": "injection-test"}
    assert runtime.inherit == ()
    (bundle,) = runtime.extensions
    assert bundle.entry == "extensions/probe.mjs"
    assert sorted(bundle.files) == ["extensions/lib/util.mjs", "extensions/probe.mjs"]
    assert bundle.files["extensions/probe.mjs"] == seed.PROBE.encode()
    listing = [[p, hashlib.sha256(bundle.files[p]).hexdigest()] for p in sorted(bundle.files)]
    canonical = json.dumps(listing, separators=(",", ":")).encode()
    assert bundle.digest == "sha256:" + hashlib.sha256(canonical).hexdigest()
    assert bundle.to_json() == {
        "entry": "extensions/probe.mjs",
        "digest": bundle.digest,
        "files": ["extensions/lib/util.mjs", "extensions/probe.mjs"],
    }
    # Snapshotted once: an edit after load changes nothing that was loaded.
    (repo / "extensions" / "probe.mjs").write_text("changed\n")
    assert bundle.files["extensions/probe.mjs"] == seed.PROBE.encode()


def test_a_bundle_digest_changes_with_a_resource_byte(repo: Path) -> None:
    first = load(repo, runtime_group()).groups[0].runtime.extensions[0]
    (repo / "extensions" / "lib" / "util.mjs").write_text("export const x = 2;\n")
    second = load(repo, runtime_group()).groups[0].runtime.extensions[0]
    assert first.digest != second.digest


def test_minimal_runtime_defaults(repo: Path) -> None:
    (group,) = load(repo, runtime_group() | {"runtime": {"host": "pi"}}).groups
    assert group.runtime.to_json() == {
        "host": "pi",
        "session": False,
        "extensions": [],
        "environment": {"literal": {}, "inherit": []},
    }


def test_entry_outside_its_resources_is_snapshotted_under_its_path(repo: Path) -> None:
    (repo / "entry.mjs").write_text("export default () => {};\n")
    group = runtime_group(extensions=[{"entry": "entry.mjs", "resources": ["shared"]}])
    bundle = load(repo, group).groups[0].runtime.extensions[0]
    assert sorted(bundle.files) == ["entry.mjs", "shared/data.json"]


def test_two_resources_keep_their_relative_paths(repo: Path) -> None:
    group = runtime_group(
        extensions=[{"entry": "extensions/probe.mjs", "resources": ["extensions", "shared"]}]
    )
    bundle = load(repo, group).groups[0].runtime.extensions[0]
    assert "shared/data.json" in bundle.files and "extensions/lib/util.mjs" in bundle.files


def test_inherited_names_are_kept_but_never_their_values(repo: Path) -> None:
    group = runtime_group(environment={"literal": {}, "inherit": ["PROBE_API_TOKEN"]})
    runtime = load(repo, group).groups[0].runtime
    assert runtime.inherit == ("PROBE_API_TOKEN",)
    assert "secret-value" not in json.dumps(runtime.to_json())


def test_inherit_is_checked_against_this_process_by_default(repo: Path) -> None:
    group = runtime_group(environment={"inherit": ["SEVRO_TEST_SURELY_UNSET_VARIABLE"]})
    path = seed.write_json(repo / "groups" / "runtime.json", group)
    assert "SEVRO_TEST_SURELY_UNSET_VARIABLE" not in os.environ
    with pytest.raises(InvocationError, match="launch-control"):
        load_definition(path, repo)  # SEVRO_ is the runner's own prefix
    group = runtime_group(environment={"inherit": ["SURELY_UNSET_PROBE_VARIABLE_21"]})
    path = seed.write_json(repo / "groups" / "runtime.json", group)
    with pytest.raises(InvocationError, match="missing inherited variable"):
        load_definition(path, repo)


# ---- the rules: each a rejecting control (the accepting ones are above) ---------------------

BAD_RUNTIME: list[tuple[str, dict[str, Any], str, str]] = [
    ("not-object", {"runtime": "pi"}, "/runtime", "must be a JSON object"),
    ("no-host", {"runtime": {"session": True}}, "/runtime", "missing field 'host'"),
    ("unknown-key", {"runtime": {"host": "pi", "tools": []}}, "/runtime/tools", "unknown field"),
    ("piflow", {"runtime": {"host": "piflow"}}, "/runtime/host", "sevro has no piflow host"),
    ("other-host", {"runtime": {"host": "codex"}}, "/runtime/host", "pi or piflow"),
    ("session-string", {"runtime": {"host": "pi", "session": "yes"}}, "/runtime/session",
     "true or false"),
    ("extensions-object", {"runtime": {"host": "pi", "extensions": {}}}, "/runtime/extensions",
     "array of at most"),
    ("too-many-bundles", {"runtime": {"host": "pi", "extensions": [
        {"entry": "extensions/probe.mjs", "resources": ["extensions"]}
    ] * (MAX_SKILLEVAL_EXTENSIONS + 1)}}, "/runtime/extensions", "array of at most"),
    ("bundle-key", {"runtime": {"host": "pi", "extensions": [
        {"entry": "extensions/probe.mjs", "resources": ["extensions"], "name": "x"}]}},
     "/runtime/extensions/0/name", "unknown field"),
    ("entry-missing", {"runtime": {"host": "pi", "extensions": [
        {"entry": "extensions/none.mjs", "resources": ["extensions"]}]}},
     "/runtime/extensions/0/entry", "does not exist"),
    ("entry-absolute", {"runtime": {"host": "pi", "extensions": [
        {"entry": "/etc/passwd", "resources": ["extensions"]}]}},
     "/runtime/extensions/0/entry", "relative"),
    ("entry-dotdot", {"runtime": {"host": "pi", "extensions": [
        {"entry": "../x.mjs", "resources": ["extensions"]}]}},
     "/runtime/extensions/0/entry", "relative"),
    ("entry-directory", {"runtime": {"host": "pi", "extensions": [
        {"entry": "extensions/lib", "resources": ["extensions"]}]}},
     "/runtime/extensions/0/entry", "not a regular file"),
    ("resources-empty", {"runtime": {"host": "pi", "extensions": [
        {"entry": "extensions/probe.mjs", "resources": []}]}},
     "/runtime/extensions/0/resources", "non-empty array"),
    ("resource-file", {"runtime": {"host": "pi", "extensions": [
        {"entry": "extensions/probe.mjs", "resources": ["extensions/probe.mjs"]}]}},
     "/runtime/extensions/0/resources/0", "not a directory"),
    ("resource-missing", {"runtime": {"host": "pi", "extensions": [
        {"entry": "extensions/probe.mjs", "resources": ["nowhere"]}]}},
     "/runtime/extensions/0/resources/0", "does not exist"),
    ("resource-nested", {"runtime": {"host": "pi", "extensions": [
        {"entry": "extensions/probe.mjs", "resources": ["extensions", "extensions/lib"]}]}},
     "/runtime/extensions/0/resources/1", "repeats or nests"),
    ("resource-symlink-out", {"runtime": {"host": "pi", "extensions": [
        {"entry": "extensions/probe.mjs", "resources": ["escape"]}]}},
     "/runtime/extensions/0/resources/0", "outside the definition root"),
    ("entry-twice", {"runtime": {"host": "pi", "extensions": [
        {"entry": "extensions/probe.mjs", "resources": ["extensions"]},
        {"entry": "extensions/probe.mjs", "resources": ["extensions"]}]}},
     "/runtime/extensions/1/entry", "declared twice"),
    ("environment-key", {"runtime": {"host": "pi", "environment": {"set": {}}}},
     "/runtime/environment/set", "unknown field"),
    ("literal-list", {"runtime": {"host": "pi", "environment": {"literal": []}}},
     "/runtime/environment/literal", "object of strings"),
    ("literal-number", {"runtime": {"host": "pi", "environment": {"literal": {"MODE": 1}}}},
     "/runtime/environment/literal/MODE", "a literal value is a string"),
    ("literal-secret", {"runtime": {"host": "pi", "environment": {
        "literal": {"OPENAI_API_KEY": "sk"}}}},
     "/runtime/environment/literal/OPENAI_API_KEY", "looks like a secret"),
    ("literal-token", {"runtime": {"host": "pi", "environment": {
        "literal": {"GH_TOKEN": "x"}}}},
     "/runtime/environment/literal/GH_TOKEN", "looks like a secret"),
    ("literal-password", {"runtime": {"host": "pi", "environment": {
        "literal": {"DB_PASSWORD": "x"}}}},
     "/runtime/environment/literal/DB_PASSWORD", "looks like a secret"),
    ("literal-path", {"runtime": {"host": "pi", "environment": {"literal": {"PATH": "/x"}}}},
     "/runtime/environment/literal/PATH", "launch-control"),
    ("literal-node-options", {"runtime": {"host": "pi", "environment": {
        "literal": {"NODE_OPTIONS": "--require x"}}}},
     "/runtime/environment/literal/NODE_OPTIONS", "launch-control"),
    ("literal-ld", {"runtime": {"host": "pi", "environment": {
        "literal": {"LD_PRELOAD": "x"}}}},
     "/runtime/environment/literal/LD_PRELOAD", "launch-control"),
    ("literal-pi", {"runtime": {"host": "pi", "environment": {
        "literal": {"PI_CODING_AGENT_DIR": "x"}}}},
     "/runtime/environment/literal/PI_CODING_AGENT_DIR", "launch-control"),
    ("literal-bad-name", {"runtime": {"host": "pi", "environment": {
        "literal": {"A-B": "x"}}}},
     "/runtime/environment/literal/A-B", "not a variable name"),
    ("inherit-home", {"runtime": {"host": "pi", "environment": {"inherit": ["HOME"]}}},
     "/runtime/environment/inherit/0", "launch-control"),
    ("inherit-dyld", {"runtime": {"host": "pi", "environment": {
        "inherit": ["DYLD_INSERT_LIBRARIES"]}}},
     "/runtime/environment/inherit/0", "launch-control"),
    ("inherit-twice", {"runtime": {"host": "pi", "environment": {
        "inherit": ["INHERITED_SETTING", "INHERITED_SETTING"]}}},
     "/runtime/environment/inherit/1", "inherited twice"),
    ("inherit-overlap", {"runtime": {"host": "pi", "environment": {
        "literal": {"INHERITED_SETTING": "x"}, "inherit": ["INHERITED_SETTING"]}}},
     "/runtime/environment/inherit/0", "both literal and inherited"),
    ("inherit-missing", {"runtime": {"host": "pi", "environment": {
        "inherit": ["NOT_IN_THE_PARENT"]}}},
     "/runtime/environment/inherit/0",
     "missing inherited variable NOT_IN_THE_PARENT invalidates the variant"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("change", "pointer", "message"), [b[1:] for b in BAD_RUNTIME], ids=[b[0] for b in BAD_RUNTIME]
)
def test_bad_runtime_is_one_line_naming_file_and_pointer(
    repo: Path, change: dict[str, Any], pointer: str, message: str
) -> None:
    (repo / "escape").symlink_to("/tmp")
    error = refused(repo, seed.body_group() | change)
    assert error.pointer == pointer
    assert message in error.message


def test_a_symlink_inside_a_resource_is_refused(repo: Path) -> None:
    (repo / "extensions" / "link.mjs").symlink_to(repo / "extensions" / "probe.mjs")
    error = refused(repo, runtime_group())
    assert error.pointer == "/runtime/extensions/0/resources/0"
    assert "symbolic link" in error.message


def test_a_bundle_over_its_file_bound_is_refused(repo: Path) -> None:
    many = repo / "extensions" / "many"
    many.mkdir()
    for index in range(MAX_SKILLEVAL_EXTENSION_FILES):
        (many / f"f{index}.txt").write_text("")
    error = refused(repo, runtime_group())
    assert f"more than {MAX_SKILLEVAL_EXTENSION_FILES} files" in error.message


def test_bundles_of_a_suite_are_bounded_together(repo: Path) -> None:
    """Five groups each snapshotting a 15 MiB bundle pass the per-bundle bound (16 MiB) but
    not the definition's (64 MiB): the fifth is refused, naming its file and bundle."""
    big = repo / "big"
    big.mkdir()
    (big / "entry.mjs").write_text("export default () => {};\n")
    (big / "blob.bin").write_bytes(b"\0" * (15 * 1024 * 1024))
    bundle = {"entry": "big/entry.mjs", "resources": ["big"]}
    members = []
    for index in range(5):
        group = runtime_group(extensions=[bundle]) | {"id": f"g{index}"}
        seed.write_json(repo / "groups" / f"g{index}.json", group)
        members.append(f"groups/g{index}.json")
    suite = {"schema_version": 1, "kind": "suite", "id": "big", "groups": members}
    seed.write_json(repo / "big-suite.json", suite)
    with pytest.raises(InvocationError) as caught:
        load_definition(repo / "big-suite.json", repo, ENV)
    assert caught.value.source == str(repo / "groups" / "g4.json")
    assert caught.value.pointer == "/runtime/extensions/0"
    assert f"more than {MAX_SKILLEVAL_SNAPSHOT_BYTES} bytes together" in caught.value.message
    four = {**suite, "groups": members[:4]}
    seed.write_json(repo / "big-suite.json", four)
    assert len(load_definition(repo / "big-suite.json", repo, ENV).groups) == 4


# ---- custom tools need a bundle --------------------------------------------------------------


def test_custom_tool_is_refused_without_a_bundle(repo: Path) -> None:
    group = runtime_group(extensions=[]) | {"tools": ["read", "probe_tool"]}
    error = refused(repo, group)
    assert error.pointer == "/tools/1"
    assert "needs a runtime that declares an extension bundle" in error.message


def test_custom_tool_is_accepted_with_a_bundle(repo: Path) -> None:
    group = runtime_group() | {"tools": ["read", "probe_tool"]}
    assert load(repo, group).groups[0].tools == ("read", "probe_tool")


def test_custom_tool_stays_refused_in_a_description_group(repo: Path) -> None:
    group = seed.description_group() | {"runtime": seed.RUNTIME["runtime"], "tools": ["probe"]}
    error = refused(repo, group)
    assert error.pointer == "/tools/0"
    assert "description group allows no tools or only read" in error.message


def test_native_tools_stay_refused_with_a_bundle(repo: Path) -> None:
    error = refused(repo, runtime_group() | {"tools": ["bash"]})
    assert error.pointer == "/tools/0" and "native tool 'bash'" in error.message


def test_a_custom_tool_name_must_be_a_name(repo: Path) -> None:
    error = refused(repo, runtime_group() | {"tools": ["has space"]})
    assert error.pointer == "/tools/0" and "custom tool name" in error.message


# ---- context-text ----------------------------------------------------------------------------


def context_text(**fields: Any) -> dict[str, Any]:
    group = seed.body_group()
    group["expectations"] = [
        {"id": "ctx", "kind": "context-text", "variant": "candidate", "expect": "contains",
         "value": "guidance", **fields}
    ]  # fmt: skip
    return group


GOOD_CONTEXT: list[tuple[dict[str, Any], dict[str, Any]]] = [
    ({}, {"surface": "system-prompt", "contains": "guidance"}),
    ({"surface": "provider-context"}, {"surface": "provider-context", "contains": "guidance"}),
    ({"surface": "provider-context", "request": "first"},
     {"surface": "provider-context", "request": "first", "contains": "guidance"}),
    ({"surface": "provider-context", "request": 2, "expect": "not-contains"},
     {"surface": "provider-context", "request": 2, "notContains": "guidance"}),
    ({"expect": "equals", "value": ""}, {"surface": "system-prompt", "equals": ""}),
]  # fmt: skip


@pytest.mark.parametrize(("fields", "configuration"), GOOD_CONTEXT)
def test_context_text_maps_onto_the_grader(
    repo: Path, fields: dict[str, Any], configuration: dict[str, Any]
) -> None:
    definition = load(repo, context_text(**fields))
    run = skilleval_run(definition, Selection(), 1, False)
    (check,) = run.cases[0][0]["checks"]
    assert check["grader"] == "sevro.context-text"
    assert check["configuration"] == configuration
    assert check["arm"] == "candidate"
    assert run.profiles["retained-artifact-behavior"].observe_context is True


def test_context_text_turn_is_the_checks_turn(repo: Path) -> None:
    run = skilleval_run(load(repo, context_text(turn=1)), Selection(), 1, False)
    assert run.cases[0][0]["checks"][0]["turn"] == 1


BAD_CONTEXT: list[tuple[dict[str, Any], str, str]] = [
    ({"value": 1}, "/value", "value is a string"),
    ({"value": ""}, "/value", "non-empty for contains"),
    ({"surface": "tools"}, "/surface", "system-prompt or provider-context"),
    ({"request": "last"}, "/request", "provider-context request only"),
    ({"surface": "provider-context", "request": 0}, "/request", "first, last or a positive"),
    ({"surface": "provider-context", "request": True}, "/request", "first, last or a positive"),
    ({"surface": "provider-context", "request": "middle"}, "/request", "first, last"),
    ({"expect": "matches"}, "/expect", "contains, not-contains, equals"),
    ({"path": "a"}, "/path", "unknown field"),
    ({"turn": 3}, "/turn", "from 1 to 2"),
]


@pytest.mark.parametrize(("fields", "pointer", "message"), BAD_CONTEXT)
def test_bad_context_text_is_one_line(
    repo: Path, fields: dict[str, Any], pointer: str, message: str
) -> None:
    error = refused(repo, context_text(**fields))
    assert error.pointer == "/expectations/0" + pointer
    assert message in error.message


# ---- mapping: the host profile and required evidence -----------------------------------------


def test_every_case_gets_a_host_profile_and_a_runtime_requires_its_evidence(repo: Path) -> None:
    definition = load(repo, runtime_group() | {"tools": ["read", "probe_tool"]})
    run = skilleval_run(definition, Selection(), 1, False)
    document = run.cases[0][0]
    assert document["requiredEvidence"] == [RUNTIME_PROFILE_OBSERVATION]
    profile = run.profiles["retained-artifact-behavior"]
    assert profile.tools == ("read", "probe_tool")
    assert profile.runtime is definition.groups[0].runtime
    assert profile.observe_context is False  # no context-text check: nothing observed


def test_run_json_records_the_runtime_only_when_declared(repo: Path) -> None:
    definition = load(repo, runtime_group())
    (group,) = skilleval_run(definition, Selection(), 1, False).design.origin["groups"]
    assert group["runtime"] == definition.groups[0].runtime.to_json()
    schema = json.loads(
        (resources.files("sevro_core") / "schemas" / "run-evidence.v1.schema.json").read_text()
    )
    experiment = schema["properties"]["experiment"]["properties"]
    item = experiment["skillEval"]["properties"]["groups"]["items"]
    assert list(Draft202012Validator(item).iter_errors(group)) == []
    broken = {**group, "runtime": {**group["runtime"], "secretValues": {}}}
    assert list(Draft202012Validator(item).iter_errors(broken)) != []
    plain = load_definition(repo / "groups" / "body-behavior.json", repo)
    (group,) = skilleval_run(plain, Selection(), 1, False).design.origin["groups"]
    assert "runtime" not in group


def test_a_group_without_runtime_gets_a_profile_and_requires_nothing(repo: Path) -> None:
    definition = load_definition(repo / "groups" / "body-behavior.json", repo)
    run = skilleval_run(definition, Selection(), 1, False)
    assert run.cases[0][0]["requiredEvidence"] == []
    assert run.profiles["retained-artifact-behavior"] == HostProfile(
        tools=("read", "write", "edit")
    )


def test_context_observed_only_when_a_selected_variant_checks_it(repo: Path) -> None:
    definition = load(repo, context_text())
    run = skilleval_run(definition, Selection(variant="baseline"), 1, False)
    assert run.profiles["retained-artifact-behavior"].observe_context is False


def test_the_profile_enters_the_case_digest_only_when_present() -> None:
    plain = Case(id="c", prompt="p", fixture={})
    assert _case_identity(plain) == plain.declaration()
    bundle = ExtensionBundle(entry="e.mjs", files={"e.mjs": b"x"}, digest="sha256:0")
    profiled = Case(id="c", prompt="p", fixture={}, host_profile=HostProfile(tools=("read",)))
    assert _case_identity(profiled)["hostProfile"] == {
        "tools": ["read"],
        "runtime": None,
        "observeContext": False,
    }
    assert bundle.to_json()["files"] == ["e.mjs"]


# ---- the CLI: hosts without runtime profiles are refused before anything runs ----------------


def _cli(repo: Path, *args: str | Path) -> Any:
    return SevroProject(repo).sevro(*args, cwd=repo)


def _host(repo: Path) -> None:
    seed.write_json(
        repo / "host.json",
        {"format": "sevro.scripted-host.v1", "cases": {
            "retained-artifact-behavior": {"turns": [[{"reply": {"text": "ok"}}]] * 2}}},
    )  # fmt: skip


@pytest.mark.parametrize(
    ("group", "missing"),
    [
        (runtime_group(), f"required evidence {RUNTIME_PROFILE_OBSERVATION!r}"),
        (context_text(), "grader sevro.context-text needs sevro.host.context"),
    ],
    ids=["runtime", "context-text"],
)
def test_the_scripted_host_is_refused_before_anything_runs(
    repo: Path, group: dict[str, Any], missing: str
) -> None:
    _host(repo)
    path = seed.write_json(repo / "groups" / "runtime.json", group)
    results = repo.parent / "results"
    result = _cli(repo, "run", path, "--host-config", "host.json", "--results-root", results)
    assert result.exit_code == 64, result.stderr
    lines = [line for line in result.stderr.splitlines() if not line.startswith("sevro: note:")]
    assert len(lines) == 1, result.stderr
    assert missing in lines[0]
    assert "scripted" in lines[0]
    runs = [p for p in results.iterdir() if p.name != ".sevro-state"] if results.exists() else []
    assert runs == []


def test_accepting_control_without_runtime_the_scripted_host_runs(
    repo: Path,
) -> None:
    """The refusal above is the runtime's: the group without it plans (a dry run) on the same
    host."""
    _host(repo)
    path = seed.write_json(repo / "groups" / "runtime.json", seed.body_group())
    results = repo.parent / "results"
    result = _cli(repo, "run", path, "--host-config", "host.json", "--dry", "--trials", "1",
                  "--results-root", results)  # fmt: skip
    assert result.exit_code == 0, result.stderr


def test_piflow_is_refused_by_name_through_the_cli(repo: Path) -> None:
    path = seed.write_json(repo / "groups" / "runtime.json", runtime_group(host="piflow"))
    result = _cli(repo, "validate", path)
    assert result.exit_code == 64
    assert "#/runtime/host: sevro has no piflow host" in result.stderr
