"""A host profile applied by the real pi CLI, driven through the host directly (no loader).

One run with everything a skill-eval runtime can ask of pi: a declared tool list with a custom
tool an extension bundle registers, ``environment.literal``, a retained session and context
observation; a control run with the built-ins only. The mock records what pi really offered.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sevro_core.api import ExtensionBundle, HostProfile, RuntimeProfile
from sevro_core.models import CancelToken, HostRequest, HostResult
from sevro_core.plugin.protocols import HostOptions
from sevro_core.testing.mockmodel import Message, MockModelServer, ToolCall, reply
from sevro_hosts_pi.host import PiHost
from sevro_hosts_pi.profiles import files_digest
from sevro_hosts_pi.testing import require_pi

pytestmark = pytest.mark.slow

API_KEY_ENV = "SEVRO_TEST_PI_PROFILE_KEY"
API_KEY = "sk-sevro-pi-profile-0123456789abcdef"
PROBE = """export default function (pi) {
  pi.registerTool({
    name: "probe_tool",
    label: "Probe",
    description: "Echo a value with the profile's literal variable.",
    parameters: { type: "object", properties: { value: { type: "string" } }, required: ["value"] },
    async execute(_id, params) {
      const text = `probe:${params.value}:${process.env.PROBE_MODE}`;
      return { content: [{ type: "text", text }], details: {} };
    },
  });
}
"""


def bundle() -> ExtensionBundle:
    files = {"extensions/probe.mjs": PROBE.encode()}
    return ExtensionBundle("extensions/probe.mjs", files, files_digest(files))


def run_pi(
    pi: str,
    server: MockModelServer,
    tmp_path: Path,
    profile: HostProfile | None,
    prompts: int = 1,
    role: str = "candidate",
) -> HostResult:
    settings = {
        "pi.bin": pi,
        "pi.apiKeyEnv": API_KEY_ENV,
        "pi.baseUrl": server.base_url,
    }
    options = HostOptions(config=None, model="mock-model", settings=settings, role=role)
    configured = PiHost().configure(options)
    workspace, private = tmp_path / "ws", tmp_path / "private"
    workspace.mkdir(exist_ok=True)
    private.mkdir(mode=0o700)
    request = HostRequest(
        case_id="profile",
        trial=1,
        prompts=tuple(f"Prompt {n}." for n in range(1, prompts + 1)),
        workspace=workspace,
        condition="passive",
        cancel=CancelToken(),
        private_root=private,
        profile=profile,
        role=role,
    )
    return configured.run(request)


def observed(result: HostResult, obs_id: str) -> Any:
    (found,) = [o for o in result.observations if o.id == obs_id]
    return found


@pytest.fixture
def pi(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(API_KEY_ENV, API_KEY)
    return require_pi()


def test_a_runtime_profile_with_a_custom_tool_literal_session_and_context(
    pi: str, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    server = mock_model(
        [
            reply(ToolCall("probe_tool", {"value": "abc"}, call_id="call_1")),
            reply(Message("first")),
            reply(Message("second")),
        ]
    )
    runtime = RuntimeProfile("pi", True, (bundle(),), {"PROBE_MODE": "on"}, ())
    profile = HostProfile(tools=("read", "probe_tool"), runtime=runtime, observe_context=True)
    result = run_pi(pi, server, tmp_path, profile, prompts=2)
    assert result.error is None and not result.execution_failed, result.error
    for request in server.requests:
        assert request.tools is not None and sorted(request.tools) == ["probe_tool", "read"]
    tool_output = json.dumps(server.requests[1].json()["input"])
    assert "probe:abc:on" in tool_output  # the bundle ran, with the literal variable
    runtime_seen = observed(result, "sevro.host.runtime-profile")
    assert runtime_seen.completeness.value == "complete", runtime_seen.data
    data = runtime_seen.data
    assert data["tools"]["declared"] == ["read", "probe_tool"]
    assert [sorted(names) for names in data["tools"]["offered"]] == [["probe_tool", "read"]] * 2
    (extension,) = data["extensions"]
    assert extension["unchanged"] is True and extension["digestAfter"] == extension["digest"]
    assert data["environment"] == {"literal": {"PROBE_MODE": "on"}, "inherit": []}
    assert data["session"] is True
    context = observed(result, "sevro.host.context")
    assert context.completeness.value == "complete"
    turns = context.data["turns"]
    assert [t["turn"] for t in turns] == [1, 2]
    sent_system = server.requests[0].json()["input"][0]["content"]
    assert turns[0]["systemPrompt"] == sent_system  # what pi sent, as pi sent it
    assert [r["request"] for r in turns[0]["requests"]] == [1, 2]
    assert "probe_tool(" in turns[0]["requests"][1]["text"]
    assert "Prompt 1." in turns[1]["requests"][0]["text"]  # turn 2 continues the session
    (session,) = [a for a in result.artifacts if a.id == "sevro.pi.session"]
    assert b"probe:abc:on" in session.content and API_KEY.encode() not in session.content


def test_without_a_profile_pi_offers_its_default_tools_and_keeps_no_session(
    pi: str, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    server = mock_model([reply(Message("done"))])
    result = run_pi(pi, server, tmp_path, HostProfile())
    assert result.error is None and not result.execution_failed, result.error
    assert sorted(server.requests[0].tools or ()) == ["bash", "edit", "read", "write"]
    ids = {o.id for o in result.observations}
    assert "sevro.host.runtime-profile" not in ids and "sevro.host.context" not in ids
    assert [a.id for a in result.artifacts] == ["sevro.pi.events"]
    assert not (tmp_path / "private" / "sessions" / "session.jsonl").exists()


def test_a_declared_tool_no_bundle_registers_leaves_the_profile_partial(
    pi: str, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    # pi silently drops a --tools name nothing registers: the observer's offered list shows it
    files = {"extensions/empty.mjs": b"export default function (pi) {}\n"}
    empty = ExtensionBundle("extensions/empty.mjs", files, files_digest(files))
    server = mock_model([reply(Message("done"))])
    runtime = RuntimeProfile("pi", False, (empty,), {}, ())
    result = run_pi(
        pi, server, tmp_path, HostProfile(tools=("read", "probe_tool"), runtime=runtime)
    )
    assert result.error is None and not result.execution_failed, result.error
    assert server.requests[0].tools == ("read",)
    seen = observed(result, "sevro.host.runtime-profile")
    assert seen.completeness.value == "partial"
    assert seen.data["tools"]["offered"] == [["read"]]
    assert seen.data["extensions"][0]["unchanged"] is True
    assert "sevro.host.context" not in {o.id for o in result.observations}


def test_a_judge_gets_no_tool_no_skill_and_no_session(
    pi: str, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    server = mock_model([reply(Message('{"verdict": "pass"}'))])
    (tmp_path / "ws" / ".agents" / "skills" / "greet").mkdir(parents=True)
    skill = "---\nname: greet\ndescription: Greets.\n---\nHi.\n"
    (tmp_path / "ws" / ".agents" / "skills" / "greet" / "SKILL.md").write_text(skill)
    result = run_pi(pi, server, tmp_path, None, role="semantic")
    assert result.error is None and result.complete, result.error
    assert result.final_message == '{"verdict": "pass"}'
    (sent,) = server.requests
    assert not sent.tools  # pi offers no tool at all
    assert "greet" not in json.dumps(sent.json()["input"][0])  # and lists no skill
    assert not list((tmp_path / "private" / "sessions").iterdir())


BROKEN = {
    "load": (b'throw new Error("broken bundle");\n', "broken bundle"),
    "handler": (
        b"export default function (pi) {\n"
        b'  pi.on("before_agent_start", () => { throw new Error("handler broke"); });\n}\n',
        "pi reported an extension error",
    ),
}


@pytest.mark.parametrize("how", sorted(BROKEN))
def test_an_extension_that_fails_fails_the_turn(
    pi: str, mock_model: Callable[..., Any], tmp_path: Path, how: str
) -> None:
    # a bundle that cannot load stops pi (exit 1, no stream); a handler that throws is only
    # reported on stderr ("Extension error (...)") while pi goes on: never a pass either way
    source, reason = BROKEN[how]
    files = {"extensions/broken.mjs": source}
    broken = ExtensionBundle("extensions/broken.mjs", files, files_digest(files))
    server = mock_model([reply(Message("done"))])
    runtime = RuntimeProfile("pi", False, (broken,), {}, ())
    result = run_pi(pi, server, tmp_path, HostProfile(runtime=runtime))
    assert result.execution_failed and not result.complete
    assert result.error is not None and reason in result.error, result.error


def test_a_candidate_offers_its_tool_calls_as_passive_instrumentation_a_judge_nothing(
    pi: str,
) -> None:
    settings = {"pi.bin": pi, "pi.apiKeyEnv": API_KEY_ENV}
    for role, offered in (("candidate", ["sevro.tool-calls"]), ("semantic", [])):
        options = HostOptions(config=None, model="m", settings=settings, role=role)
        offers = PiHost().configure(options).instrumentation
        assert [o.id for o in offers] == offered
        assert not any(o.changes_execution for o in offers)


def test_a_record_the_agent_forges_makes_the_observations_unavailable(
    pi: str, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    # the agent's commands share pi's user and see the observer's file: a forged, well-formed
    # record does not match the requests the bridge (outside the sandbox) counted
    forge = 'echo \'{"kind":"tools","request":9,"names":["read"]}\' >> "$SEVRO_PI_OBSERVE"'
    server = mock_model([reply(ToolCall("bash", {"command": forge})), reply(Message("done"))])
    runtime = RuntimeProfile("pi", False, (), {}, ())
    profile = HostProfile(tools=("read", "bash"), runtime=runtime, observe_context=True)
    result = run_pi(pi, server, tmp_path, profile)
    assert result.error is None and not result.execution_failed, result.error
    assert len(server.requests) == 2  # the forge ran (the control: the same run, untouched,
    # is complete in test_a_runtime_profile_with_a_custom_tool_literal_session_and_context)
    seen = observed(result, "sevro.host.runtime-profile")
    assert seen.completeness.value == "partial" and seen.data["tools"]["offered"] == [None]
    context = observed(result, "sevro.host.context")
    assert context.completeness.value == "partial" and context.data["turns"] == []
