"""The in-process test kit (sevro_core.testing): each helper against a positive and a negative
control, and against what a real run records."""

from __future__ import annotations

import json
import os
import signal
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import structlog

from sevro_core.errors import ConfigurationError, GradingError, InvocationError
from sevro_core.models import CheckOutcome, TrialView
from sevro_core.plugin.hookspecs import hookimpl
from sevro_core.states import CheckStatus, Completeness
from sevro_core.testing import (
    FakeProcess,
    ProcessCall,
    ProcessLog,
    ScopedPlugins,
    SevroProject,
    grade,
    observation,
    require_sandbox,
    run_in_process,
    start_sevro,
    trial_isolation,
    trial_view,
)
from sevro_core.testing.mockmodel import (
    Message,
    MockModelServer,
    OpenAIChatCompletions,
    Reasoning,
    RecordedRequest,
    ToolCall,
    reply,
)

REGEX = "sevro.regex"


class Echo:
    """A grader that passes when the final message equals its configuration's ``text``."""

    id = "acme.grader.echo"
    version = "1"
    stage = 10
    capabilities: frozenset[str] = frozenset()
    requires: frozenset[str] = frozenset()

    def compile(self, configuration: Any) -> Echo.Compiled:
        text = configuration.get("text")
        if not isinstance(text, str):
            raise ConfigurationError("text must be a string", "/text")
        return Echo.Compiled(text)

    class Compiled:
        def __init__(self, text: str) -> None:
            self.text = text

        def grade(self, check_id: str, view: TrialView) -> CheckOutcome:
            if view.final_message is None:
                raise GradingError("no final message")
            ok = view.final_message == self.text
            return CheckOutcome(check_id, Echo.id, CheckStatus.PASSED if ok else CheckStatus.FAILED)


def installed_grader(name: str) -> Any:
    from sevro_core.plugin.manager import load_plugins

    return load_plugins().get("grader", name)


# -- grade() and trial_view() ------------------------------------------------------------------


def test_grade_passes_and_fails_a_message() -> None:
    assert grade(Echo(), {"text": "ok"}, trial_view("ok")).status is CheckStatus.PASSED
    assert grade(Echo(), {"text": "ok"}, trial_view("no")).status is CheckStatus.FAILED


def test_grade_surfaces_a_refused_configuration_with_its_pointer() -> None:
    with pytest.raises(ConfigurationError) as refused:
        grade(Echo(), {"text": 3})
    assert refused.value.pointer == "/text"


def test_grade_lets_a_grading_error_through() -> None:
    with pytest.raises(GradingError):
        grade(Echo(), {"text": "ok"}, trial_view(None))


def test_grade_drives_an_installed_grader() -> None:
    regex = installed_grader(REGEX)
    assert grade(regex, {"pattern": "^re"}, trial_view("ready")).status is CheckStatus.PASSED
    assert grade(regex, {"pattern": "^re"}, trial_view("not ready")).status is CheckStatus.FAILED
    with pytest.raises(ConfigurationError):
        grade(regex, {"pattern": 5})


def test_trial_view_has_the_engines_final_message_observation() -> None:
    view = trial_view("done", observations=[observation("acme.facts", {"n": 1})])
    final = view.observations["sevro.observation.final-message"]
    assert final.completeness is Completeness.COMPLETE
    assert final.data["byteLength"] == 4
    assert view.observations["acme.facts"].data == {"n": 1}
    partial = trial_view("do", complete=False)
    assert not partial.final_message_complete
    assert partial.observations["sevro.observation.final-message"].completeness.value == "partial"
    missing = trial_view(None).observations["sevro.observation.final-message"]
    assert missing.completeness is Completeness.UNAVAILABLE


def test_trial_view_refuses_a_duplicate_observation_and_files_without_a_workspace() -> None:
    with pytest.raises(ValueError, match="twice"):
        trial_view("x", observations=[observation("acme.a"), observation("acme.a")])
    with pytest.raises(ValueError, match="workspace"):
        trial_view("x", files={"a.txt": "a"})


def test_trial_view_writes_files_into_the_workspace(tmp_path: Path) -> None:
    view = trial_view("x", workspace=tmp_path, files={"src/a.txt": "a", "b.bin": b"\0"})
    assert (view.workspace / "src/a.txt").read_text() == "a"
    assert (view.workspace / "b.bin").read_bytes() == b"\0"


def test_trial_view_matches_what_a_run_records(sevro_project: SevroProject) -> None:
    """The builder's final-message observation is byte for byte the engine's."""
    case = sevro_project.case()
    host = sevro_project.script(default=[[{"reply": {"text": "héllo"}}]])
    done = sevro_project.run(case, "--host-config", host, "--sandbox", "none")
    assert done.exit_code == 0, done.stderr
    trial = json.loads(Path(done.json()["cases"][0]["trials"][0]["artifactPath"]).read_text())
    (recorded,) = [
        o for o in trial["evidence"]["observations"] if o["id"] == "sevro.observation.final-message"
    ]
    built = trial_view("héllo").observations["sevro.observation.final-message"]
    assert recorded == built.to_json()
    assert trial_view("hello").observations[built.id].to_json() != recorded  # control


def shell() -> Any:
    return installed_grader("sevro.shell")


def test_trial_isolation_runs_a_shell_check_in_the_sandbox(tmp_path: Path) -> None:
    require_sandbox()
    view = trial_view("done", isolation=trial_isolation(tmp_path), files={"a.txt": "a"})
    assert view.workspace.parent == tmp_path / "workspaces"
    assert grade(shell(), {"run": "test -f a.txt"}, view).status is CheckStatus.PASSED
    assert grade(shell(), {"run": "test -f b.txt"}, view).status is CheckStatus.FAILED
    peer = trial_isolation(tmp_path).workspace
    (peer / "secret").write_text("x")
    read_peer = {"run": f"cat {peer}/secret"}
    assert grade(shell(), read_peer, view).status is CheckStatus.FAILED, "peers are hidden"
    unsandboxed = trial_view(isolation=trial_isolation(tmp_path, sandbox="none"))
    assert grade(shell(), read_peer, unsandboxed).status is CheckStatus.PASSED  # control


def test_trial_isolation_without_a_backend_is_a_grading_error(tmp_path: Path) -> None:
    only_graders = {"SEVRO_LOAD_PLUGINS": "sevro-core,sevro-graders"}
    view = trial_view("done", isolation=trial_isolation(tmp_path, environ=only_graders))
    with pytest.raises(GradingError, match="isolation error"):
        grade(shell(), {"run": "true"}, view)
    opted_out = trial_view("done", isolation=trial_isolation(tmp_path, sandbox="none"))
    assert grade(shell(), {"run": "true"}, opted_out).status is CheckStatus.PASSED


# -- sevro_plugins -----------------------------------------------------------------------------


def test_a_registered_grader_is_in_the_registry(sevro_plugins: ScopedPlugins) -> None:
    assert sevro_plugins.registry().get("grader", Echo.id) is None  # control: not yet
    sevro_plugins.register("grader", Echo())
    registry = sevro_plugins.registry()
    assert isinstance(registry.get("grader", Echo.id), Echo)
    assert registry.get("grader", REGEX) is not None, "installed plugins stay"


def test_registration_ends_with_the_scope() -> None:
    from sevro_core.plugin.manager import load_plugins

    with pytest.MonkeyPatch.context() as patch:
        ScopedPlugins(patch).register("grader", Echo())
        assert load_plugins().get("grader", Echo.id) is not None
    assert load_plugins().get("grader", Echo.id) is None


def test_duplicate_ids_are_still_refused(sevro_plugins: ScopedPlugins) -> None:
    class Impostor(Echo):
        id = REGEX

    sevro_plugins.register("grader", Impostor())
    with pytest.raises(InvocationError, match=f"grader {REGEX} is registered twice"):
        sevro_plugins.registry()


def test_a_hook_module_is_registered_and_filtered_like_an_installed_one(
    sevro_plugins: ScopedPlugins,
) -> None:
    class Plugin:
        @hookimpl
        def sevro_register_graders(self, register: Callable[[Any], None]) -> None:
            register(Echo())

    name = sevro_plugins.add(Plugin(), name="acme-echo")
    assert sevro_plugins.registry().get("grader", Echo.id) is not None
    only_it = sevro_plugins.registry({"SEVRO_LOAD_PLUGINS": name})
    assert only_it.ids("grader") == [Echo.id]
    assert (
        sevro_plugins.registry({"SEVRO_LOAD_PLUGINS": "sevro-graders"}).get("grader", Echo.id)
        is None
    )


def test_an_unknown_kind_is_refused(sevro_plugins: ScopedPlugins) -> None:
    with pytest.raises(ValueError, match="unknown plugin kind"):
        sevro_plugins.register("graders", Echo())


# -- run_in_process ----------------------------------------------------------------------------


def regex_case(project: SevroProject, pattern: str = "ok") -> Path:
    return project.case(
        checks=[{"id": "r", "grader": REGEX, "configuration": {"pattern": pattern}}]
    )


def run_args(project: SevroProject, case: Path, host: Path, *extra: str | Path) -> list[str | Path]:
    return ["run", case, "--host-config", host, "--json", "--results-root", project.results,
            "--sandbox", "none", *extra]  # fmt: skip


def test_an_in_process_run_matches_a_subprocess_run(sevro_project: SevroProject) -> None:
    case = regex_case(sevro_project)
    host = sevro_project.script(default=[[{"reply": {"text": "ok"}}]])
    inside = run_in_process(run_args(sevro_project, case, host), cwd=sevro_project.root)
    outside = sevro_project.sevro(*run_args(sevro_project, case, host))
    assert inside.exit_code == outside.exit_code == 0, inside.stderr
    assert inside.json()["task"] == outside.json()["task"]
    assert identity(inside.json()) == identity(outside.json()), "same evaluation"


def identity(result: dict[str, Any]) -> str:
    trial = json.loads(Path(result["cases"][0]["trials"][0]["artifactPath"]).read_text())
    return str(trial["evidence"]["evaluationDigest"])


def test_in_process_exit_codes_and_one_line_errors(sevro_project: SevroProject) -> None:
    case = regex_case(sevro_project)
    host = sevro_project.script(default=[[{"reply": {"text": "no"}}]])
    failed = run_in_process(run_args(sevro_project, case, host), cwd=sevro_project.root)
    assert failed.exit_code == 1 and failed.json()["task"]["verdict"] == "failed"
    bad = run_in_process(["run", case, "--trials", "0"], cwd=sevro_project.root)
    assert bad.exit_code == 64
    assert bad.stderr.strip().count("\n") == 0 and "Traceback" not in bad.stderr
    assert run_in_process(["--help"]).exit_code == 0


def test_an_in_process_run_leaks_no_global_state(sevro_project: SevroProject) -> None:
    case = regex_case(sevro_project)
    host = sevro_project.script(default=[[{"reply": {"text": "ok"}}]])
    plugin = sevro_project.root / "local.py"
    plugin.write_text("x = 1\n")
    before = (
        {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)},
        dict(os.environ),
        Path.cwd(),
        structlog.get_config(),
    )
    import sys

    modules = set(sys.modules)
    done = run_in_process(
        [*run_args(sevro_project, case, host, "--plugin", plugin), "-vv", "--log-format", "json"],
        cwd=sevro_project.root,
        env={"SEVRO_TESTKIT_PROBE": "1"},
    )
    assert done.exit_code == 0, done.stderr
    assert '"event"' in done.stderr, "the run's own logging went to its captured stderr"
    after = (
        {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)},
        dict(os.environ),
        Path.cwd(),
        structlog.get_config(),
    )
    assert after == before
    assert not [m for m in set(sys.modules) - modules if m.startswith("sevro_local_plugin_")]


def test_a_scoped_plugin_joins_an_in_process_run(
    sevro_project: SevroProject, sevro_plugins: ScopedPlugins
) -> None:
    case = sevro_project.case(
        checks=[{"id": "e", "grader": Echo.id, "configuration": {"text": "ok"}}]
    )
    host = sevro_project.script(default=[[{"reply": {"text": "ok"}}]])
    outside = sevro_project.sevro(*run_args(sevro_project, case, host))
    assert outside.exit_code == 64 and "unknown grader" in outside.stderr  # control
    sevro_plugins.register("grader", Echo())
    inside = run_in_process(run_args(sevro_project, case, host), cwd=sevro_project.root)
    assert inside.exit_code == 0, inside.stderr
    assert inside.json()["cases"][0]["trials"][0]["checks"][0]["status"] == "passed"


# -- fake_processes ----------------------------------------------------------------------------


def test_a_faked_command_launches_nothing(
    sevro_project: SevroProject, fake_processes: Callable[..., ProcessLog]
) -> None:
    marker = sevro_project.root / "ran"
    case = sevro_project.case(
        checks=[
            {
                "id": "s",
                "grader": "sevro.shell",
                "configuration": {"run": "true", "expectExact": "7"},
            }
        ]
    )
    host = sevro_project.script(
        default=[[{"run": {"command": f"touch {marker}"}}, {"reply": {"text": "ok"}}]]
    )

    def handler(call: ProcessCall) -> FakeProcess | None:
        if call.role == "checks":
            return FakeProcess(output=b"7\n")
        return FakeProcess(exit_code=3, output=b"scripted")

    log = fake_processes(handler)
    done = run_in_process(run_args(sevro_project, case, host), cwd=sevro_project.root)
    assert done.exit_code == 0, done.stderr
    assert not marker.exists(), "the candidate's command was not launched"
    assert [(c.role, c.argv[-1]) for c in log.faked] == [
        ("candidate", f"touch {marker}"),
        ("checks", "true"),
    ]
    trial = json.loads(Path(done.json()["cases"][0]["trials"][0]["artifactPath"]).read_text())
    (commands,) = [o for o in trial["evidence"]["observations"] if o["id"] == "sevro.commands"]
    assert commands["data"]["commands"][0]["exitCode"] == 3


def test_a_handler_that_declines_lets_the_real_process_run(
    sevro_project: SevroProject, fake_processes: Callable[..., ProcessLog]
) -> None:
    marker = sevro_project.root / "ran"
    case = sevro_project.case()
    host = sevro_project.script(
        default=[[{"run": {"command": f"touch {marker}"}}, {"reply": {"text": "ok"}}]]
    )
    log = fake_processes(lambda call: None)
    done = run_in_process(run_args(sevro_project, case, host), cwd=sevro_project.root)
    assert done.exit_code == 0, done.stderr
    assert marker.exists()
    assert [c.role for c in log.calls] == ["candidate"], "seen once, not again inside"
    assert log.faked == []


def test_direct_launches_are_faked_too(fake_processes: Callable[..., ProcessLog]) -> None:
    from sevro_core.isolation.processes import run_bounded
    from sevro_core.models import CancelToken

    log = fake_processes(lambda call: FakeProcess(exit_code=9, output=b"fake"))
    outcome = run_bounded(
        ["false"], cwd=Path("/"), env={}, timeout_s=5, cancel=CancelToken(), output_limit=100
    )
    assert (outcome.exit_code, outcome.output) == (9, b"fake")
    assert log.faked[0].argv == ("false",) and not log.faked[0].sandboxed


def test_without_the_fake_direct_launches_are_real() -> None:
    from sevro_core.isolation.processes import run_bounded
    from sevro_core.models import CancelToken

    outcome = run_bounded(
        ["false"], cwd=Path("/"), env={}, timeout_s=5, cancel=CancelToken(), output_limit=100
    )
    assert outcome.exit_code == 1


# -- start_sevro -------------------------------------------------------------------------------


def test_start_sevro_waits_signals_and_collects(sevro_project: SevroProject) -> None:
    started = sevro_project.root / "started"
    case = regex_case(sevro_project)
    host = sevro_project.script(
        default=[
            [{"run": {"command": f"touch {started}; exec sleep 60"}}, {"reply": {"text": "ok"}}]
        ]
    )
    with start_sevro(run_args(sevro_project, case, host, "-v"), cwd=sevro_project.root) as sevro:
        sevro.wait_for_line("run started")
        sevro.wait_until(started)
        assert os.getpgid(sevro.pid) == sevro.pid, "in a process group of its own"
        sevro.send_signal(signal.SIGTERM)
        done = sevro.finish(timeout=60)
    assert done.exit_code == 143
    assert "run started" in done.stderr, "what wait_for_line read is kept"
    assert done.json()["execution"]["status"] == "cancelled"


def test_start_sevro_reports_a_run_that_ends_before_the_marker(
    sevro_project: SevroProject,
) -> None:
    with (
        start_sevro(["run", "missing.json"], cwd=sevro_project.root) as sevro,
        pytest.raises(AssertionError, match="sevro ended before"),
    ):
        sevro.wait_until(sevro_project.root / "never")


def test_start_sevro_reports_a_hang(sevro_project: SevroProject, tmp_path: Path) -> None:
    with start_sevro([], cwd=tmp_path, launcher=("sleep", "30")) as sleeper:
        with pytest.raises(AssertionError, match="did not end within"):
            sleeper.finish(timeout=0.5)
        assert sleeper.poll() is not None, "the hung process was killed"


# The mock model's OpenAI Chat Completions protocol, on its wire.


def _chat(server: MockModelServer, body: dict[str, Any], path: str = "/v1/chat/completions") -> Any:
    request = urllib.request.Request(
        server.origin + path, data=json.dumps(body).encode(), method="POST"
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.headers["content-type"] == "text/event-stream"
        lines = response.read().decode().split("\n\n")
    assert lines[-1] == "", "every event ends with a blank line"
    events = [line.removeprefix("data: ") for line in lines[:-1]]
    assert all(not line.startswith("event:") for line in lines[:-1])
    return [e if e == "[DONE]" else json.loads(e) for e in events]


def _choices(events: list[Any]) -> list[dict[str, Any]]:
    return [e["choices"][0] for e in events if isinstance(e, dict) and e.get("choices")]


USAGE_ASKED = {"model": "m", "stream": True, "stream_options": {"include_usage": True}}


def test_chat_completions_streams_text_then_stop_then_usage_then_done() -> None:
    with MockModelServer([reply(Message("hello"))], (OpenAIChatCompletions(),)) as server:
        events = _chat(server, USAGE_ASKED)
    assert events[-1] == "[DONE]"
    chunks = events[:-1]
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    assert {c["id"] for c in chunks} == {"chatcmpl-mock-1"} and chunks[0]["model"] == "m"
    choices = _choices(chunks)
    assert choices[0]["delta"] == {"role": "assistant", "content": ""}
    assert "".join(c["delta"].get("content") or "" for c in choices) == "hello"
    assert [c["finish_reason"] for c in choices] == [None, None, "stop"]
    *streamed, last = chunks
    assert all(c["usage"] is None for c in streamed)  # asked: every chunk has the key
    assert last["choices"] == [] and last["usage"] == {
        "prompt_tokens": 100,
        "completion_tokens": 10,
        "total_tokens": 110,
        "prompt_tokens_details": {"cached_tokens": 20},
        "completion_tokens_details": {"reasoning_tokens": 3},
    }
    assert server.requests[0].protocol == "openai-chat-completions"


def test_chat_completions_sends_no_usage_unless_asked_or_known() -> None:
    script = [reply(Message("a")), reply(Message("b"), usage=None)]
    with MockModelServer(script, (OpenAIChatCompletions(),)) as server:
        unasked = _chat(server, {"model": "m", "stream": True})
        unknown = _chat(server, USAGE_ASKED, path="/chat/completions")
    for events in (unasked, unknown):
        assert events[-1] == "[DONE]" and _choices(events)[-1]["finish_reason"] == "stop"
        assert all(e["choices"] for e in events[:-1]), "no usage chunk"
    assert all("usage" not in e for e in unasked[:-1])


def test_chat_completions_streams_tool_calls_by_index() -> None:
    calls = (ToolCall("bash", {"command": "ls -la"}, call_id="call_a"), ToolCall("read", {"p": 1}))
    script = [reply(Reasoning("think"), Message("running"), *calls)]
    with MockModelServer(script, (OpenAIChatCompletions(),)) as server:
        choices = _choices(_chat(server, USAGE_ASKED))
    assert choices[1]["delta"] == {"reasoning_content": "think"}
    assert choices[2]["delta"] == {"content": "running"}
    deltas = [d for c in choices for d in c["delta"].get("tool_calls", [])]
    starts = [d for d in deltas if "id" in d]
    assert [(d["index"], d["id"], d["type"], d["function"]["name"]) for d in starts] == [
        (0, "call_a", "function", "bash"),
        (1, "call_mock_1_3", "function", "read"),
    ]
    for index, call in enumerate(calls):
        arguments = "".join(d["function"]["arguments"] for d in deltas if d["index"] == index)
        assert json.loads(arguments) == call.arguments
        assert len([d for d in deltas if d["index"] == index]) == 3  # start, then two parts
    assert [c["finish_reason"] for c in choices][-1] == "tool_calls"
    assert all(c["finish_reason"] is None for c in choices[:-1])


def test_chat_completions_error_and_cut_end_without_a_finish_or_done() -> None:
    script = [reply(Message("partial"), error="boom"), reply(Message("partial"), cut=True)]
    with MockModelServer(script, (OpenAIChatCompletions(),)) as server:
        failed = _chat(server, USAGE_ASKED)
        cut = _chat(server, USAGE_ASKED)
    assert failed[-1] == {
        "error": {"message": "boom", "type": "server_error", "param": None, "code": None}
    }
    for events in (failed, cut):
        assert "[DONE]" not in events
        assert [c["finish_reason"] for c in _choices(events)] == [None, None]
        assert all(e.get("choices") for e in events if "error" not in e), "no usage chunk"
    assert cut[-1]["choices"][0]["delta"] == {"content": "partial"}


def test_chat_completions_answers_only_its_own_path() -> None:
    protocol = OpenAIChatCompletions()
    assert protocol.handles("POST", "/v1/chat/completions?x=1")
    assert protocol.handles("POST", "/chat/completions")
    assert not protocol.handles("GET", "/v1/chat/completions")
    assert not protocol.handles("POST", "/v1/responses")
    with MockModelServer([reply(Message("x"))], (OpenAIChatCompletions(),)) as server:
        with pytest.raises(urllib.error.HTTPError) as refused:
            _chat(server, USAGE_ASKED, path="/v1/responses")
        assert refused.value.code == 500 and server.unexpected[0].protocol == "unknown"


@pytest.mark.parametrize(
    ("tools", "expected"),
    [
        ([{"type": "function", "function": {"name": "bash", "parameters": {}}}], ("bash",)),
        ([{"type": "function", "name": "read"}, {"type": "web_search"}], ("read", "web_search")),
        ([{"name": "Bash", "input_schema": {}}], ("Bash",)),
        ([], ()),
        (None, None),
        ("bash", None),
    ],
)
def test_recorded_tools_read_every_protocols_shape(tools: Any, expected: Any) -> None:
    body = {"model": "m"} if tools is None else {"model": "m", "tools": tools}
    recorded = RecordedRequest("p", "POST", "/", {}, json.dumps(body).encode())
    assert recorded.tools == expected
    assert RecordedRequest("p", "POST", "/", {}, b"not json").tools is None
