"""The agent-CLI host skeleton, driven by a tiny host whose "CLI" is a Python script.

The script is a real executable that reads the prompt on stdin and writes a JSONL event stream,
so every step of the skeleton runs for real: the private layout and credential copy, the bounded
turn (stall, timeout, cancellation, process-group and PID-namespace kills), the host's parser,
and the observations, usage, artifacts and failure reasons built from it.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from attrs import frozen

from sevro_core.formats.jsonio import JsonValue
from sevro_core.hosts import agentcli
from sevro_core.hosts.agentcli import (
    AgentCliConfig,
    AgentCliHost,
    AgentCliTrial,
    ConfiguredAgentCliHost,
    EvidenceIds,
    TurnEvidence,
    command_entry,
)
from sevro_core.hosts.binaries import NativeBinary
from sevro_core.hosts.credentials import REDACTED, CredentialFlags
from sevro_core.hosts.skills import MountedSkill, classify_read
from sevro_core.hosts.streams import StreamError, decode_event, stream_lines
from sevro_core.models import CancelToken, HostRequest, HostResult, Observation, Usage
from sevro_core.plugin.protocols import (
    DoctorCheck,
    DoctorRequest,
    HostOptions,
    SkillPlaces,
    skill_places_of,
)
from sevro_core.states import Completeness
from sevro_core.testing import require_tool

SECRET = "sk-tiny-secret-0123456789"

CLI = r"""
import json, os, subprocess, sys, time
if sys.argv[1] == "--version":
    print("tiny 1.0")
    sys.exit(0)
number, session = sys.argv[1], sys.argv[2]
prompt = sys.stdin.read()
mode = os.environ.get("TINY_MODE", "ok")
def emit(event):
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()
if session == "-":
    session = "s-1"
emit({"type": "session", "id": session})
if mode == "stall":
    sys.stderr.write("waiting for the model\n")
    sys.stderr.flush()
    time.sleep(60)
if mode == "orphan":
    # A grandchild in a session of its own: a process-group kill cannot reach it.
    argv = [sys.executable, "-c", "import time; time.sleep(60)", os.environ["TINY_MARKER"]]
    child = subprocess.Popen(argv, start_new_session=True)
    with open(os.environ["TINY_PID_FILE"], "w") as handle:
        handle.write(str(child.pid))
    time.sleep(60)
if mode == "garbage":
    sys.stdout.write("{not json\n")
    sys.exit(0)
notes = os.environ["HOME"] + "/notes"
emit({"type": "command", "command": "cat " + notes, "output": "x", "code": 0})
with open("tiny-" + number + ".txt", "w") as handle:
    handle.write(prompt)
if mode == "fail":
    emit({"type": "done", "ok": False, "error": "model refused"})
    sys.exit(1)
message = "did: " + prompt + " " + os.environ.get("TINY_KEY", "")
emit({"type": "done", "ok": True, "message": message, "tokens": 7})
if mode == "exit":
    for i in range(12):
        sys.stderr.write("trace line %d\n" % i)
    sys.stderr.write("leaked " + os.environ.get("TINY_KEY", "") + "\n")
    sys.exit(3)
"""


@frozen
class TinyTurn:
    session: str
    completed: bool
    final_message: str | None
    failure: str | None
    usage: Usage
    commands: tuple[Mapping[str, Any], ...]


def parse_tiny(stream: bytes) -> TinyTurn:
    session, commands, done = None, [], None
    for number, line in stream_lines(stream):
        event = decode_event(line, number, frozenset({"session", "command", "done"}))
        if event["type"] == "session":
            session = str(event["id"])
        elif event["type"] == "command":
            commands.append(event)
        else:
            done = event
    if session is None or done is None:
        raise StreamError("no session or no done event")
    tokens = done.get("tokens")
    return TinyTurn(
        session=session,
        completed=bool(done["ok"]),
        final_message=done.get("message"),
        failure=done.get("error"),
        usage=Usage(input_tokens=tokens, output_tokens=tokens, complete=tokens is not None),
        commands=tuple(commands),
    )


@frozen(kw_only=True)
class TinyConfig(AgentCliConfig):
    pass


TINY_CREDENTIALS = CredentialFlags.for_host(
    "tiny", "credentialFile", login_fix="log in to tiny", none_fix="pass --tiny-api-key-env"
)


class TinyHost(AgentCliHost[TinyConfig]):
    id = "acme.host.tiny"
    name = "tiny"
    capabilities = AgentCliHost.turn_capabilities("acme.tiny.turns")
    package = "tiny-cli"
    tested_version = "tiny 1.0"
    credential_flags = TINY_CREDENTIALS
    setting_help = ("The tiny CLI.", "Its credential file.", "Its API-key variable.")

    def parse_config(
        self, config: Mapping[str, Any] | None, settings: Mapping[str, str]
    ) -> TinyConfig:
        raw = dict(config or {})
        return TinyConfig(**AgentCliConfig.common(raw, settings, "tiny", TINY_CREDENTIALS))

    def locate(self, configured: str | None) -> NativeBinary:
        if configured is None or not Path(configured).is_file():
            raise agentcli.BinaryError(f"--tiny-bin {configured} is not a file")
        return NativeBinary(native=Path(configured), tree=Path(configured).parent)

    def binary_version(self, binary: NativeBinary) -> str:
        return agentcli.binary_version(binary, lambda t: t.startswith("tiny"), "tiny", {}, 20)

    def doctor_checks(self, binary: NativeBinary, request: DoctorRequest) -> list[DoctorCheck]:
        return [DoctorCheck("tiny-probe", True, "nothing to probe")]


@frozen(kw_only=True)
class ConfiguredTinyHost(ConfiguredAgentCliHost[TinyConfig]):
    def redacted_isolation(self) -> dict[str, JsonValue]:
        return {"sandbox": None}

    def trial(self, request: HostRequest) -> TinyTrial:
        return TinyTrial(self, request)


TinyHost.configured = ConfiguredTinyHost


class NamespacedTinyHost(TinyHost):
    """The same host, asking for a PID namespace around every turn."""

    uses_pid_namespace = True


class TinyTrial(AgentCliTrial[ConfiguredTinyHost, TinyTurn]):
    evidence_ids = EvidenceIds("acme.tiny.turns", "acme.tiny.events", "acme.tiny.follow-ups")
    completion = "done"

    def private_dirs(self) -> Sequence[Path]:
        root = self.request.private_root
        return (root / "home", root / "tmp", root / "config")

    def configure_trial(self) -> None:
        root = self.request.private_root
        self.copy_credential_file(root / "config" / "credentials.json")
        key = self.api_key()
        self.env = {"PATH": os.defpath, "HOME": str(root / "home"), **self.request.environment}
        if key is not None:
            self.env["TINY_KEY"] = key

    def argv(self, number: int) -> list[str]:
        return [str(self.host.binary.native), str(number), self.session or "-"]

    def parse(self, stream: bytes) -> TinyTurn:
        return parse_tiny(stream)

    def continuity_error(self, number: int, turn: TinyTurn) -> str | None:
        expected, self.session = self.session, turn.session
        if expected is not None and turn.session != expected:
            return f"turn {number}: tiny ran session {turn.session}, not {expected}"
        return None

    def turn_summary(self, turn: TinyTurn) -> dict[str, JsonValue]:
        return {"session": turn.session, "completed": turn.completed}

    def collect(
        self, number: int, turn: TinyTurn, skills: Sequence[MountedSkill], into: TurnEvidence
    ) -> None:
        for ordinal, event in enumerate(turn.commands, start=1):
            command, output, code = str(event["command"]), str(event["output"]), event["code"]
            into.calls.append({"turn": number, "ordinal": ordinal, "kind": "command_execution"})
            scrubbed = self.scrub(command)
            into.commands.append(command_entry(number, ordinal, scrubbed, output, code, "done"))
            for skill in skills:
                read = classify_read(skill, self.request.workspace, command, output, code)
                into.read(skill, number, ordinal, read)

    def usage(self, turns: Sequence[TinyTurn], all_turns: bool) -> Usage:
        if not turns:
            return Usage()
        total = sum(t.usage.input_tokens or 0 for t in turns)
        return Usage(input_tokens=total, output_tokens=total, complete=all_turns)


# -- helpers ----------------------------------------------------------------------------------


@pytest.fixture
def cli(tmp_path: Path) -> Path:
    script = tmp_path / "tiny-cli"
    script.write_text(f"#!{sys.executable}\n{CLI}")
    script.chmod(0o755)
    return script


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEVRO_TINY_KEY", SECRET)


def configure(
    cli: Path, *, config: Mapping[str, JsonValue] | None = None, pid_namespace: bool = False
) -> ConfiguredTinyHost:
    settings = {"tiny.bin": str(cli), "tiny.apiKeyEnv": "SEVRO_TINY_KEY"}
    host = NamespacedTinyHost() if pid_namespace else TinyHost()
    configured = host.configure(HostOptions(config=config, settings=settings))
    assert isinstance(configured, ConfiguredTinyHost)
    return configured


def request(
    tmp_path: Path,
    *prompts: str,
    mode: str = "ok",
    cancel: CancelToken | None = None,
    extra_env: Mapping[str, str] | None = None,
) -> HostRequest:
    workspace, private = tmp_path / "workspace", tmp_path / "private"
    workspace.mkdir(parents=True)
    private.mkdir()
    return HostRequest(
        case_id="c",
        trial=1,
        prompts=prompts or ("Go.",),
        workspace=workspace,
        condition="passive",
        cancel=cancel or CancelToken(),
        private_root=private,
        environment={"TINY_MODE": mode, **(extra_env or {})},
    )


def observation(result: HostResult, observation_id: str) -> Observation:
    (found,) = [o for o in result.observations if o.id == observation_id]
    return found


# -- the happy path -----------------------------------------------------------------------------


def test_prepare_turn_parse_and_observations(cli: Path, tmp_path: Path) -> None:
    host = configure(cli)
    trial_request = request(tmp_path, "first", "second")
    result = host.run(trial_request)
    assert result.error is None and result.complete and not result.execution_failed
    assert result.turns_completed == 2
    assert result.final_message == f"did: second {REDACTED}"  # the key is scrubbed
    private = trial_request.private_root
    assert all((private / d).is_dir() for d in ("home", "tmp", "config"))
    assert oct((private / "home").stat().st_mode & 0o777) == "0o700"
    commands = observation(result, "sevro.commands").data["commands"]
    assert isinstance(commands, list) and [c["turn"] for c in commands] == [1, 2]  # type: ignore[index]
    assert commands[0]["command"] == f"cat {private}/home/notes"  # type: ignore[index]
    changed = observation(result, "sevro.files-changed")
    assert changed.completeness is Completeness.COMPLETE
    assert "tiny-1.txt" in json.dumps(changed.data) and "tiny-2.txt" in json.dumps(changed.data)
    turns = observation(result, "acme.tiny.turns").data["turns"]
    assert turns == [
        {"turn": 1, "session": "s-1", "completed": True},
        {"turn": 2, "session": "s-1", "completed": True},
    ]
    assert [a.id for a in result.artifacts] == ["acme.tiny.events", "acme.tiny.follow-ups"]
    assert result.usage.input_tokens == 14 and result.usage.complete
    assert host.capabilities == TinyHost.capabilities and "sevro.tool-calls" in host.capabilities


def test_the_redacted_configuration_names_no_secret(cli: Path) -> None:
    configured = configure(cli, config={"turnTimeoutSeconds": 30})
    document = configured.redacted_configuration()
    assert document == {
        "hostConfig": {"turnTimeoutSeconds": 30},
        "binary": str(cli),
        "credentialFile": {"present": False},
        "apiKeyEnv": {"name": "SEVRO_TINY_KEY", "present": True},
        "protectedRoots": [],
        "sandbox": None,
    }
    assert SECRET not in json.dumps(document)


def test_a_credential_file_is_copied_privately_and_its_secrets_scrubbed(
    cli: Path, tmp_path: Path
) -> None:
    credential = tmp_path / "credential.json"
    credential.write_text(json.dumps({"token": SECRET}))
    settings = {"tiny.bin": str(cli), "tiny.credentialFile": str(credential)}
    host = TinyHost().configure(HostOptions(settings=settings))
    assert isinstance(host, ConfiguredTinyHost)
    trial = host.trial(request(tmp_path))
    trial.prepare()
    copy = trial.request.private_root / "config" / "credentials.json"
    assert copy.read_text() == credential.read_text() and copy.stat().st_mode & 0o777 == 0o600
    assert trial.scrub(f"echo {SECRET}") == f"echo {REDACTED}"


# -- failures -----------------------------------------------------------------------------------


def test_a_stall_kills_the_turn_and_names_the_stderr_tail(cli: Path, tmp_path: Path) -> None:
    host = configure(cli, config={"stallTimeoutSeconds": 1})
    result = host.run(request(tmp_path, mode="stall"))
    assert result.execution_failed and not result.complete
    assert result.error == (
        "turn 1: tiny stalled: no event for 1 s (stallTimeoutSeconds; process group killed); "
        "stderr: waiting for the model"
    )
    assert [a.id for a in result.artifacts] == ["acme.tiny.events"]  # what it streamed is kept
    assert b'"session"' in result.artifacts[0].content


def test_a_turn_timeout_is_not_reported_as_a_stall(cli: Path, tmp_path: Path) -> None:
    host = configure(cli, config={"turnTimeoutSeconds": 1, "stallTimeoutSeconds": 30})
    result = host.run(request(tmp_path, mode="stall"))
    assert result.error is not None
    assert result.error.startswith("turn 1: tiny did not finish within 1 s (process group killed)")


def test_a_non_zero_exit_after_success_fails_with_the_scrubbed_stderr_tail(
    cli: Path, tmp_path: Path
) -> None:
    result = configure(cli).run(request(tmp_path, mode="exit"))
    assert result.execution_failed and not result.complete and result.final_message is None
    assert result.error is not None
    assert result.error.startswith("turn 1: tiny exited 3 after done; stderr: ")
    assert "trace line 11" in result.error and "trace line 0 " not in result.error
    assert f"leaked {REDACTED}" in result.error and SECRET not in result.error
    assert result.turns_completed == 1  # the stream said done; the exit code still fails it


def test_a_failed_turn_and_a_malformed_stream_are_execution_failures(
    cli: Path, tmp_path: Path
) -> None:
    failed = configure(cli).run(request(tmp_path / "a", mode="fail"))
    assert failed.error is not None and failed.error.startswith("turn 1 failed: model refused")
    malformed = configure(cli).run(request(tmp_path / "b", mode="garbage"))
    assert malformed.error is not None
    assert malformed.error.startswith("turn 1: malformed tiny event stream: line 2 is not JSON")
    for result in (failed, malformed):
        assert result.execution_failed and not result.complete and not result.cancelled


def test_negative_control_the_same_cli_succeeds_when_nothing_goes_wrong(
    cli: Path, tmp_path: Path
) -> None:
    """The failure tests above fail because of their mode, not because the tiny CLI is broken."""
    host = configure(cli, config={"stallTimeoutSeconds": 5, "turnTimeoutSeconds": 30})
    result = host.run(request(tmp_path))
    assert result.complete and result.error is None and result.turns_completed == 1


def test_cancellation_ends_the_turn_and_is_not_an_execution_failure(
    cli: Path, tmp_path: Path
) -> None:
    cancel = CancelToken()
    host = configure(cli, config={"stallTimeoutSeconds": 20})  # a missed cancel stalls instead
    timer = threading.Timer(0.5, cancel.cancel, args=("test",))
    timer.start()
    try:
        result = host.run(request(tmp_path, mode="stall", cancel=cancel))
    finally:
        timer.cancel()
    assert result.cancelled and not result.execution_failed and result.error is None
    assert not result.complete


def test_a_protected_root_inside_the_trial_is_a_set_up_failure(cli: Path, tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    settings = {"tiny.bin": str(cli), "tiny.apiKeyEnv": "SEVRO_TINY_KEY"}
    options = HostOptions(settings=settings, protected_roots=(workspace / "inner",))
    host = TinyHost().configure(options)
    result = host.run(request(tmp_path))
    assert result.error is not None and "lies inside the trial's own directories" in result.error
    assert result.artifacts == ()


def test_an_unset_api_key_fails_the_trial_by_its_flag(
    cli: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = configure(cli)
    monkeypatch.setenv("SEVRO_TINY_KEY", "")
    result = host.run(request(tmp_path))
    assert result.error == "--tiny-api-key-env SEVRO_TINY_KEY is not set"


# -- the PID namespace --------------------------------------------------------------------------


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/stat")
    return not status.exists() or status.read_text().split()[2] != "Z"


@pytest.mark.parametrize("pid_namespace", [True, False])
def test_a_detached_grandchild_dies_with_the_turn_only_in_a_pid_namespace(
    cli: Path, tmp_path: Path, pid_namespace: bool
) -> None:
    """With the namespace the kernel ends what a process-group kill cannot reach; without it
    (the negative control) the grandchild survives the turn."""
    if pid_namespace:
        require_tool("unshare")
    pid_file = tmp_path / "grandchild.pid"
    host = configure(cli, config={"stallTimeoutSeconds": 2}, pid_namespace=pid_namespace)
    assert bool(host.pid_namespace) is pid_namespace
    marker = f"tiny-orphan-{uuid.uuid4()}"  # names this test's grandchild among all processes
    extra_env = {"TINY_PID_FILE": str(pid_file), "TINY_MARKER": marker}
    trial_request = request(tmp_path, mode="orphan", extra_env=extra_env)
    result = host.run(trial_request)
    assert result.error is not None and "stalled" in result.error
    if pid_namespace:
        assert pid_file.exists()  # it did start (its PID is one of the namespace's)
        assert _survivors(marker) == []
        return
    pid = int(pid_file.read_text())
    try:
        assert _alive(pid)
    finally:
        os.kill(pid, signal.SIGKILL)


def _survivors(marker: str) -> list[int]:
    """PIDs of this test's grandchild (found by its marker; its namespace PID means nothing
    outside), after giving the kernel a moment to end it; killed here so none leaks."""
    deadline = time.monotonic() + 10
    while True:
        found = [
            int(p.name)
            for p in Path("/proc").iterdir()
            if p.name.isdigit() and _cmdline(p).endswith(marker)
        ]
        if not found or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    for pid in found:
        os.kill(pid, signal.SIGKILL)
    return found


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return ""


# -- configure and doctor -----------------------------------------------------------------------


def test_configure_refuses_a_missing_binary_and_a_missing_credential(cli: Path) -> None:
    from sevro_core.errors import ConfigurationError, InvocationError

    with pytest.raises(ConfigurationError, match=r"is not a file \(run `sevro doctor --host tiny`"):
        TinyHost().configure(HostOptions(settings={"tiny.bin": "/nonexistent/tiny"}))
    with pytest.raises(InvocationError, match="--host tiny: no credential configured"):
        TinyHost().configure(HostOptions(settings={"tiny.bin": str(cli)}))


def test_doctor_reports_binary_version_auth_and_the_host_checks(cli: Path) -> None:
    settings = {"tiny.bin": str(cli), "tiny.apiKeyEnv": "SEVRO_TINY_KEY"}
    checks = TinyHost().doctor(DoctorRequest(settings=settings, registry=None))  # type: ignore[arg-type]
    assert [(c.name, c.ok) for c in checks] == [
        ("binary", True),
        ("version", True),
        ("auth", True),
        ("tiny-probe", True),
    ]
    assert all(SECRET not in c.detail for c in checks)


def test_doctor_names_a_fix_for_each_failure(cli: Path) -> None:
    checks = TinyHost().doctor(DoctorRequest(settings={"tiny.bin": "/x"}, registry=None))  # type: ignore[arg-type]
    assert [(c.name, c.ok, c.fix) for c in checks] == [
        ("binary", False, "npm install -g tiny-cli (or pass --tiny-bin /path/to/tiny)")
    ]
    bad = TinyHost().doctor(
        DoctorRequest(settings={"tiny.apiKeyEnv": "not a name"}, registry=None)  # type: ignore[arg-type]
    )
    assert [(c.name, c.ok, c.fix) for c in bad] == [("settings", False, "correct the Tiny flags")]
    no_auth = TinyHost().doctor(DoctorRequest(settings={"tiny.bin": str(cli)}, registry=None))  # type: ignore[arg-type]
    assert [(c.name, c.ok) for c in no_auth][2] == ("auth", False)
    assert no_auth[2].fix == "pass --tiny-api-key-env"


def test_the_host_declares_its_settings_as_flags() -> None:
    assert [(s.key, s.flag, s.kind, s.secret) for s in TinyHost().settings] == [
        ("tiny.bin", "--tiny-bin", "path", False),
        ("tiny.credentialFile", "--tiny-credential-file", "path", False),
        ("tiny.apiKeyEnv", "--tiny-api-key-env", "string", False),
    ]


def test_doctor_refuses_a_sandbox_choice(cli: Path) -> None:
    """The CLI isolates the agent's commands itself; --sandbox would be silently ignored."""
    from sevro_core.errors import InvocationError

    settings = {"tiny.bin": str(cli), "tiny.apiKeyEnv": "SEVRO_TINY_KEY"}
    with pytest.raises(InvocationError, match="--sandbox applies to hosts"):
        TinyHost().doctor(DoctorRequest(settings, None, sandbox="none"))  # type: ignore[arg-type]
    assert TinyHost().doctor(DoctorRequest(settings, None))  # type: ignore[arg-type]  # the control


# -- where skills are found ---------------------------------------------------------------------


class ElsewhereTinyHost(TinyHost):
    """The same host, its CLI reading skills from a directory of its own."""

    skill_places = SkillPlaces("tools/skills", "TOOLS.md")


@pytest.mark.parametrize(
    ("host", "offered"), [(TinyHost(), "agents"), (ElsewhereTinyHost(), "tools")]
)
def test_sevro_skills_discovers_where_the_host_declares_its_skills(
    cli: Path, tmp_path: Path, host: TinyHost, offered: str
) -> None:
    """One declaration (``skill_places``) drives both mounting and the evidence, so the skills
    an experiment mounts are the skills ``sevro.skills`` reports; the default is the open
    agent-skills layout."""
    settings = {"tiny.bin": str(cli), "tiny.apiKeyEnv": "SEVRO_TINY_KEY"}
    configured = host.configure(HostOptions(settings=settings))
    assert skill_places_of(host) == skill_places_of(configured) == host.skill_places
    trial_request = request(tmp_path)
    for name, directory in (("agents", ".agents/skills"), ("tools", "tools/skills")):
        skill = trial_request.workspace / directory / name / "SKILL.md"
        skill.parent.mkdir(parents=True)
        skill.write_text(f"---\nname: {name}\ndescription: d\n---\n")
    data = observation(configured.run(trial_request), "sevro.skills").data
    assert [s["name"] for s in data["offered"]] == [offered]  # type: ignore[index, union-attr]
