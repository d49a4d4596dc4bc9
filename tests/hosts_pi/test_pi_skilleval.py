"""skill-eval groups end to end with `--host pi` (the real pi against the mock model).

The seed's body group as written (tests/skilleval/test_skilleval_real_clis.py runs it on Codex
and Claude Code): both variants mount their skills in `.agents/skills` and their context in
`AGENTS.md`, the second turn continues the first turn's session, and the turn-scoped checks
grade turn 2. The seed's description group, whose `skill-read` checks see a whole read pass and
a partial one fail. And a runtime-profile group (seed 004's "Runtime Profile"): an extension bundle
that registers a custom tool and appends to the system prompt, `environment.literal` read by
that tool, and `context-text` expectations over the system prompt and the provider context of
the first, last and second request, each with a passing and a failing control. The bundle tries
to change its own file from inside pi (the sandbox mounts it read-only: EROFS).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sevro_core.testing import CliResult, SevroProject, require_sandbox
from sevro_core.testing.mockmodel import Message, ToolCall, reply
from sevro_hosts_pi.testing import require_pi
from tests.e2e.helpers import assert_valid_evidence
from tests.hosts_codex.helpers import retained_bytes
from tests.hosts_pi.qa_helpers import run_pi
from tests.skilleval import seed
from tests.skilleval.test_skilleval_real_clis import GROUP, assert_seed_body_group

pytestmark = pytest.mark.slow


@pytest.fixture
def pi() -> str:
    require_sandbox()
    return require_pi()


def test_pi_runs_the_seed_body_group(
    tmp_path: Path, pi: str, mock_model: Callable[..., Any]
) -> None:
    """Per arm (baseline first, --jobs 1): read the target on turn 1, write on turn 2, with the
    group's declared tools only (read, write, edit: pi is offered no bash)."""
    project = SevroProject(seed.seed_repository(tmp_path / "repo").resolve())
    one_arm = [
        reply(ToolCall("read", {"path": ".agents/skills/target/SKILL.md"})),
        reply(Message("ready")),
        reply(ToolCall("write", {"path": "result.json", "content": '{"status": "complete"}'})),
        reply(Message("done")),
    ]
    server = mock_model(one_arm * 2)
    done = run_pi(project, pi, server, GROUP, "--jobs", "1", "--trials", "1")
    assert_seed_body_group(done)
    assert len(server.requests) == 8 and not server.unexpected
    for request in server.requests:
        assert sorted(request.tools or ()) == ["edit", "read", "write"], request.tools
    # turn 2 continued turn 1's session: its first request carries turn 1's prompt and reply
    second_turn = json.dumps(server.requests[2].json()["input"])
    assert "Inspect the task and prepare the work." in second_turn and "ready" in second_turn
    # the context file reached pi as project instructions
    assert "Contract: status is complete." in json.dumps(server.requests[0].json()["input"])
    # the same evidence, with the same meaning, as on Codex and Claude Code: ordinals count a
    # turn's tool calls from 1, and the target's whole read on turn 1 is a read
    for trial in assert_valid_evidence(done.json())["trials"]:
        evidence = json.loads(
            (Path(done.json()["evidencePath"]).parent / trial["path"]).read_text()
        )
        calls = _observation(evidence["evidence"], "sevro.tool-calls")["data"]["calls"]
        assert [(c["turn"], c["ordinal"], c["tool"]) for c in calls] == [
            (1, 1, "read"),
            (2, 1, "write"),
        ], calls
        skills = _observation(evidence["evidence"], "sevro.skills")["data"]
        assert sorted(s["name"] for s in skills["offered"]) == ["support", "target"]
        assert skills["reads"] == [{"skill": "target", "turn": 1, "ordinal": 1, "status": "read"}]
        assert skills["read"] == ["target"]


PROBE = """\
import { appendFileSync } from "node:fs";
import { suffix } from "./lib/suffix.mjs";

function bundle() {
  // extensions are trusted code, but they run in the sandbox: their own files are read-only
  try {
    appendFileSync(new URL(import.meta.url), "// changed\\n");
    return "bundle-writable";
  } catch (error) {
    return `bundle-${error.code}`;
  }
}

export default function (pi) {
  pi.registerTool({
    name: "probe_tool",
    label: "Probe",
    description: "Returns a probe value.",
    parameters: {
      type: "object",
      properties: { value: { type: "string" } },
      required: ["value"],
    },
    async execute(_id, params) {
      const inherited = (process.env.QA_PROBE_INHERITED || "").length;
      const text = `probe:${process.env.PROBE_MODE}:${inherited}:${params.value}:${bundle()}`;
      return { content: [{ type: "text", text }], details: {} };
    },
  });
  pi.on("before_agent_start", (event) => ({ systemPrompt: event.systemPrompt + suffix }));
}
"""
SUFFIX = 'export const suffix = "\\n\\nPROBE-SYSTEM-MARKER\\n";\n'
PROMPT = "Call the probe tool with the value abc."
INHERITED = "inherited-value-93b1"
"""Passed to pi by name (`environment.inherit`): the tool reports its length, never the value."""
RESULT = f"probe:injection-test:{len(INHERITED)}:abc:bundle-EROFS"
RUNTIME = copy.deepcopy(seed.RUNTIME)
RUNTIME["runtime"]["environment"]["inherit"] = ["QA_PROBE_INHERITED"]


def context(
    check_id: str, expect: str, value: str, variant: str = "candidate", **fields: Any
) -> dict[str, Any]:
    return {
        "id": check_id,
        "kind": "context-text",
        "variant": variant,
        "expect": expect,
        "value": value,
        **fields,
    }


PROVIDER = {"surface": "provider-context"}
EXPECTATIONS: list[tuple[dict[str, Any], str]] = [
    # (expectation, the status it must get): each kind of check passes and fails once
    (context("sys-has-probe", "contains", "PROBE-SYSTEM-MARKER"), "passed"),
    (context("sys-has-absent", "contains", "NOT-IN-ANY-PROMPT-41"), "failed"),
    (context("sys-lacks-absent", "not-contains", "NOT-IN-ANY-PROMPT-41"), "passed"),
    (context("sys-lacks-probe", "not-contains", "PROBE-SYSTEM-MARKER"), "failed"),
    (context("sys-equals-x", "equals", "x", surface="system-prompt"), "failed"),
    (context("first-has-task", "contains", PROMPT, request="first", **PROVIDER), "passed"),
    (context("first-has-result", "contains", RESULT, request="first", **PROVIDER), "failed"),
    (context("last-has-result", "contains", RESULT, request="last", **PROVIDER), "passed"),
    (context("second-lacks-result", "not-contains", RESULT, request=2, **PROVIDER), "failed"),
    (context("first-equals-task", "equals", PROMPT, request="first", **PROVIDER), "passed"),
    (context("third-missing", "contains", PROMPT, request=3, **PROVIDER), "unavailable"),
    (
        {
            "id": "probe-succeeded",
            "kind": "tool-call",
            "variant": "candidate",
            "tool": "probe_tool",
            "expect": "succeeded",
        },
        "passed",
    ),
    (
        {
            "id": "write-called",
            "kind": "tool-call",
            "variant": "candidate",
            "tool": "write",
            "expect": "called",
        },
        "failed",
    ),
    (context("base-sys-has-probe", "contains", "PROBE-SYSTEM-MARKER", "baseline"), "passed"),
    (context("base-last-lacks", "not-contains", RESULT, "baseline", **PROVIDER), "failed"),
]


def runtime_group() -> dict[str, Any]:
    source = {"kind": "working-tree"}
    baseline = {"source": source, "skills": [], "target": None, "context": []}
    candidate = {"source": source, "skills": ["skills/probe-guide"], "target": 0, "context": []}
    return {
        "schema_version": 1,
        "kind": "group",
        "id": "runtime-probe",
        "type": "body",
        "input": {"prompt": PROMPT},
        "fixture": None,
        "tools": ["read", "write", "edit", "probe_tool"],
        "variants": {"baseline": baseline, "candidate": candidate},
        "expectations": [expectation for expectation, _ in EXPECTATIONS],
        "review_questions": [],
        **RUNTIME,
    }


def _run_runtime_group(
    tmp_path: Path, pi: str, mock_model: Callable[..., Any]
) -> tuple[CliResult, Any, Path]:
    root = tmp_path / "defs"
    (root / "extensions" / "lib").mkdir(parents=True)
    (root / "extensions" / "probe.mjs").write_text(PROBE)
    (root / "extensions" / "lib" / "suffix.mjs").write_text(SUFFIX)
    guide = "---\nname: probe-guide\ndescription: How to probe.\n---\nCall probe_tool.\n"
    (root / "skills" / "probe-guide").mkdir(parents=True)
    (root / "skills" / "probe-guide" / "SKILL.md").write_text(guide)
    group = seed.write_json(root / "groups" / "runtime.json", runtime_group())
    project = SevroProject(root.resolve())
    one_arm = [reply(ToolCall("probe_tool", {"value": "abc"})), reply(Message("probed"))]
    server = mock_model(one_arm * 2)
    flags = ("--jobs", "1", "--trials", "1")
    done = run_pi(project, pi, server, group, *flags, env={"QA_PROBE_INHERITED": INHERITED})
    return done, server, root


def test_a_runtime_profile_group_runs_its_extension_environment_and_context_checks(
    tmp_path: Path, pi: str, mock_model: Callable[..., Any]
) -> None:
    done, server, root = _run_runtime_group(tmp_path, pi, mock_model)
    project = SevroProject(root.resolve())
    run = assert_valid_evidence(done.json())
    assert len(server.requests) == 4 and not server.unexpected
    # the declared tools, custom one included, were offered to the model and nothing else
    for request in server.requests:
        assert sorted(request.tools or ()) == ["edit", "probe_tool", "read", "write"]
    # the literal and the inherited variable reached the extension's tool (else it would say
    # probe:undefined:0:abc)
    assert RESULT in json.dumps(server.requests[1].json()["input"])
    expected = {e["id"]: (e["variant"], status) for e, status in EXPECTATIONS}
    results = Path(done.json()["evidencePath"]).parent
    seen: dict[str, str] = {}
    for trial in run["trials"]:
        evidence = json.loads((results / trial["path"]).read_text())["evidence"]
        for check in evidence["checks"]:
            assert expected[check["id"]][0] == trial["arm"], check
            seen[check["id"]] = check["status"]
        profile = _observation(evidence, "sevro.host.runtime-profile")
        assert profile["completeness"] == "complete", profile
        data = profile["data"]
        assert data["host"] == "pi" and data["session"] is False
        environment = {
            "literal": {"PROBE_MODE": "injection-test"},
            "inherit": ["QA_PROBE_INHERITED"],
        }
        assert data["environment"] == environment
        (bundle,) = data["extensions"]
        assert bundle["entry"] == "extensions/probe.mjs" and bundle["unchanged"] is True
        assert bundle["digest"] == bundle["digestAfter"]
        assert data["tools"]["declared"] == ["read", "write", "edit", "probe_tool"]
        contexts = _observation(evidence, "sevro.host.context")["data"]["turns"]
        (turn,) = contexts
        assert "PROBE-SYSTEM-MARKER" in turn["systemPrompt"]
        assert [r["request"] for r in turn["requests"]] == [1, 2]
    assert seen == {check: status for check, (_, status) in expected.items()}, seen
    # an inherited value is never kept
    assert INHERITED.encode() not in retained_bytes(project)
    # the bundle in the definition root is untouched, byte for byte
    assert (root / "extensions" / "probe.mjs").read_text() == PROBE


def _observation(evidence: dict[str, Any], obs_id: str) -> dict[str, Any]:
    (found,) = [o for o in evidence["observations"] if o["id"] == obs_id]
    return dict(found)


def test_pi_runs_the_seed_description_group_with_a_read_and_a_partial_read(
    tmp_path: Path, pi: str, mock_model: Callable[..., Any]
) -> None:
    """The seed's description group (`tools: ["read"]`, two natural turns, `skill-read`
    `by-turn` 2 in both variants): the baseline reads its target whole on turn 2, the candidate
    only its first two lines (a partial read, never a read), so the comparison is pass-to-fail."""
    project = SevroProject(seed.seed_repository(tmp_path / "repo").resolve())
    target = ".agents/skills/target/SKILL.md"
    server = mock_model(
        [
            reply(Message("inspected")),
            reply(ToolCall("read", {"path": target})),
            reply(Message("prepared")),
            reply(Message("inspected")),
            reply(ToolCall("read", {"path": target, "limit": 2})),
            reply(Message("prepared")),
        ]
    )
    group = Path("groups/natural-activation.json")
    done = run_pi(project, pi, server, group, "--jobs", "1", "--trials", "1")
    run = assert_valid_evidence(done.json())
    assert len(server.requests) == 6 and not server.unexpected
    for request in server.requests:
        assert request.tools == ("read",), request.tools
    (row,) = run["statistics"]["checkTransitions"]
    assert row["transitions"]["pass-to-fail"] == 1, row
    root = Path(done.json()["evidencePath"]).parent
    found = {}
    for trial in run["trials"]:
        evidence = json.loads((root / trial["path"]).read_text())["evidence"]
        found.update({c["id"]: c["status"] for c in evidence["checks"]})
        skills = _observation(evidence, "sevro.skills")["data"]
        status = "read" if trial["arm"] == "baseline" else "partial"
        assert skills["reads"] == [{"skill": "target", "turn": 2, "ordinal": 1, "status": status}]
    assert found == {"baseline-read-by-two": "passed", "candidate-read-by-two": "failed"}, found
