"""The pi host's settings, tool lists, agent-directory files, sandbox argv, credentials and
case checks (no pi process; the real runs are in test_pi_host.py and test_pi_profile.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sevro_core.api import (
    ConfigurationError,
    Credentials,
    HostFailure,
    HostProfile,
    RuntimeProfile,
)
from sevro_hosts_pi import credentials
from sevro_hosts_pi.binary import BinaryError, locate
from sevro_hosts_pi.bridge import BRIDGE_PORT
from sevro_hosts_pi.configuration import (
    DEFAULT_TOOLS,
    SANDBOX_BRIDGE_DIR,
    SandboxMounts,
    TrialLayout,
    check_tools,
    models_json,
    parse,
    sandbox_argv,
    settings_json,
)
from sevro_hosts_pi.host import check_profile
from sevro_hosts_pi.limits import MAX_TOOLS

KEY = {"pi.apiKeyEnv": "PI_KEY"}


def test_defaults_and_the_upstream_path() -> None:
    config = parse(None, KEY)
    assert config.api == "openai-responses" and config.base_url == "https://api.openai.com/v1"
    assert config.upstream_path == "/v1" and config.node is None
    anthropic = parse(None, {**KEY, "pi.api": "anthropic-messages"})
    assert anthropic.base_url == "https://api.anthropic.com" and anthropic.upstream_path == ""


@pytest.mark.parametrize(
    ("config", "settings", "message"),
    [
        ({"format": "other"}, {}, "'format' must be"),
        ({"format": "sevro.pi-host.v1", "baseUrl": "x"}, {}, "unknown key 'baseUrl'"),
        (None, {"pi.api": "google"}, "--pi-api must be one of"),
        (None, {"pi.baseUrl": "ftp://host/v1"}, "--pi-base-url must be an http(s) URL"),
        (None, {"pi.baseUrl": "http://host/v1?key=1"}, "without a query"),
        (None, {"pi.baseUrl": "https://user:sk-1@host/v1"}, "no user, password"),
    ],
)
def test_bad_settings_are_refused(
    config: dict[str, str] | None, settings: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigurationError) as caught:
        parse(config, {**KEY, **settings})
    assert message in caught.value.message


def test_declared_tools_are_checked_because_pi_drops_unknown_names() -> None:
    assert check_tools(None, bundles=0) == DEFAULT_TOOLS
    assert check_tools(["read", "grep", "ls"], bundles=0) == ("read", "grep", "ls")
    assert check_tools(["read", "probe_tool"], bundles=1) == ("read", "probe_tool")
    refusals = {
        "unknown pi tool 'probe_tool'": (["read", "probe_tool"], 0),
        "declared twice": (["read", "read"], 0),
        "is not a pi tool name": (["read,bash"], 1),
        "declare 1 to": ([], 0),
    }
    for message, (declared, bundles) in refusals.items():
        with pytest.raises(ValueError, match=message):
            check_tools(declared, bundles=bundles)
    with pytest.raises(ValueError, match="declare 1 to"):
        check_tools(["read"] * (MAX_TOOLS + 1), bundles=0)


def test_models_json_points_at_the_bridge_with_a_dummy_key() -> None:
    config = parse(None, {**KEY, "pi.baseUrl": "https://models.example/api/v1/"})
    document = json.loads(models_json(config, "m-1", BRIDGE_PORT))
    (provider,) = document["providers"].values()
    assert provider["baseUrl"] == f"http://127.0.0.1:{BRIDGE_PORT}/api/v1"
    assert provider["apiKey"] == credentials.DUMMY_API_KEY and provider["api"] == "openai-responses"
    assert provider["models"] == [{"id": "m-1", "reasoning": False}]
    assert json.loads(settings_json())["retry"]["enabled"] is False


def test_the_sandbox_has_no_network_and_protects_sevro_files(tmp_path: Path) -> None:
    layout = TrialLayout.under(tmp_path / "private")
    workspace, bridge = tmp_path / "ws", tmp_path / "bridge"
    hidden = tmp_path / "protected"
    hidden.mkdir()
    mounts = SandboxMounts(read=[Path("/usr")], hidden=[hidden])
    argv = sandbox_argv(
        "bwrap", workspace=workspace, layout=layout, bridge_dir=bridge, mounts=mounts
    )
    assert "--unshare-net" in argv and argv[-1] == "--" and argv[-2] == str(workspace)
    text = " ".join(argv)
    for path in (layout.sevro, layout.bundles, layout.models_file, layout.settings_file):
        assert f"--ro-bind {path} {path}" in text  # read-only on top of the writable root
    assert text.index(f"--bind {layout.root} ") < text.index(f"--ro-bind {layout.sevro} ")
    assert f"--bind {workspace} {workspace}" in text
    assert f"--bind {bridge} {SANDBOX_BRIDGE_DIR}" in text and f"--tmpfs {hidden}" in text
    judge = sandbox_argv(
        "bwrap", workspace=workspace, layout=layout, bridge_dir=bridge, mounts=mounts, judge=True
    )
    assert f"--ro-bind {workspace} {workspace}" in " ".join(judge)


def test_the_credential_comes_from_a_file_or_a_named_variable(tmp_path: Path) -> None:
    file = tmp_path / "key"
    file.write_text("sk-file-0123456789\n")
    assert credentials.api_key(Credentials(file, None), {}) == "sk-file-0123456789"
    assert credentials.api_key(Credentials(None, "K"), {"K": "sk-env"}) == "sk-env"
    with pytest.raises(HostFailure, match="--pi-api-key-env K is not set"):
        credentials.api_key(Credentials(None, "K"), {"K": ""})
    file.write_text("sk-one\nsk-two\n")
    with pytest.raises(HostFailure, match="one API key line"):
        credentials.api_key(Credentials(file, None), {})
    assert credentials.auth_header("anthropic-messages", "k") == ("x-api-key", "k")
    assert credentials.auth_header("openai-responses", "k") == ("authorization", "Bearer k")


def test_a_pi_binary_is_dist_cli_js_in_a_node_modules_tree(tmp_path: Path) -> None:
    other = tmp_path / "pi"
    other.write_text("#!/bin/sh\n")
    with pytest.raises(BinaryError, match=r"is not pi.s dist/cli\.js"):
        locate(str(other))
    with pytest.raises(BinaryError, match="--pi-node"):
        script = tmp_path / "node_modules/@mariozechner/pi-coding-agent/dist/cli.js"
        script.parent.mkdir(parents=True)
        script.write_text("")
        locate(str(script), str(tmp_path / "no-node"))
    found = locate(str(script), None, need_node=False)
    assert found.script == script.resolve() and found.tree == (tmp_path / "node_modules").resolve()


def test_a_profile_pi_cannot_honour_is_refused_before_anything_runs() -> None:
    check_profile(None, judge=False)
    check_profile(HostProfile(tools=("read", "bash")), judge=False)
    with pytest.raises(ValueError, match="unknown pi tool 'probe_tool'"):
        check_profile(HostProfile(tools=("read", "probe_tool")), judge=False)
    with pytest.raises(ValueError, match="runtime host 'piflow' is not pi"):
        check_profile(HostProfile(runtime=RuntimeProfile("piflow")), judge=False)
    with pytest.raises(ValueError, match="a judge runs with no tools"):
        check_profile(HostProfile(tools=("read",)), judge=True)
