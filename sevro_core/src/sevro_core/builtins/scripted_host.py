"""The scripted host (``sevro.host.scripted``): a deterministic stand-in for an agent.

It performs the steps its configuration lists for each turn (write, run, read, reply, fail,
sleep) in the real workspace, with real processes, so the whole engine is exercised without any
model or credential. ``run`` steps go through the trial's sandbox, so demos and tests exercise
the same boundary as real agents. It reports ``sevro.skills`` by the same rules as the agent-CLI
hosts, over both hosts' skill directories, so one skill case runs on every host. Usage is
reported as unknown.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from attrs import evolve, frozen

from sevro_core.api import (
    COMMANDS_OBSERVATION,
    CONTINUATION_CAPABILITY,
    FILE_READS_OBSERVATION,
    FILES_CHANGED_OBSERVATION,
    NO_HOST_PREPARATION,
    SKILLS_OBSERVATION,
    UNKNOWN_USAGE,
    Case,
    Completeness,
    ConfigurationError,
    ConfiguredHost,
    CredentialLocations,
    DoctorCheck,
    DoctorRequest,
    Host,
    HostOptions,
    HostPreparation,
    HostRequest,
    HostResult,
    HostSetting,
    InvocationError,
    IsolationError,
    JsonValue,
    MountedSkill,
    Observation,
    ReadLog,
    Route,
    SkillPlaces,
    Usage,
    WorkspaceEscapeError,
    WorkspaceFiles,
    builtin_prices,
    changes,
    check_relative_path,
    command_reads,
    describe_first_error,
    discover_skills,
    hookimpl,
    instructions_file,
    join_pointer,
    limits,
    read_confined,
    skill_files,
    skill_touches,
    snapshot,
    validator,
    write_confined,
)
from sevro_core.api import skills_data as make_skills_data

HOST_ID = "sevro.host.scripted"

SKILLS_DIRS = (".agents/skills", ".claude/skills")
"""Where the scripted host discovers skills: the directories the agent CLIs read, in order."""
MAX_REASON_COMMAND_CHARS = 200

PROMPT_TOKEN = "{{sevro.prompt}}"  # noqa: S105 - a template token, not a secret
TRIAL_TOKEN = "{{sevro.trial}}"  # noqa: S105 - a template token, not a secret
TRIAL_VARIABLE = "SEVRO_TRIAL"
"""Set for ``run`` steps to the trial number (the repetition, in an experiment)."""

Step = Mapping[str, Any]


@frozen
class _Script:
    turns: tuple[tuple[Step, ...], ...]
    pointer: str


class _TurnFailed(Exception):
    pass


class ScriptedHost:
    id = HOST_ID
    version = "1.0.0"
    capabilities = frozenset(
        {
            CONTINUATION_CAPABILITY,
            COMMANDS_OBSERVATION,
            FILE_READS_OBSERVATION,
            FILES_CHANGED_OBSERVATION,
            SKILLS_OBSERVATION,
        }
    )
    requires: frozenset[str] = frozenset()
    settings: tuple[HostSetting, ...] = ()
    credential_locations = CredentialLocations()  # its commands are the script's, no CLI's
    skill_places = SkillPlaces(SKILLS_DIRS[0], "AGENTS.md")
    """Where experiments mount an arm's skills and context (it discovers both skill dirs)."""

    def doctor(self, request: DoctorRequest) -> list[DoctorCheck]:
        """Checks for `sevro doctor --host scripted`: `run` steps need sevro's sandbox."""
        from sevro_core.api import sandbox_check

        return [sandbox_check(request.registry, request.sandbox)]

    def configure(self, options: HostOptions) -> ConfiguredHost:
        if options.config is None:
            raise ConfigurationError(
                "the scripted host needs --host-config FILE.json (see docs/hosts/scripted.md)"
            )
        config = options.config
        found = describe_first_error(validator("scripted-host.v1").iter_errors(config))
        if found is not None:
            raise ConfigurationError(found[1], found[0])
        if options.role != "candidate":
            return _configure_judge(options, config)
        if options.runtime is not None and options.runtime.hook_plugins:
            raise InvocationError(
                f"runtime configuration hooks.plugins names {options.runtime.hook_plugins[0]!r}, "
                "but the scripted host mounts no plugins; remove hooks.plugins"
            )
        scripts: dict[str, _Script] = {}
        for case_id, script in dict(config.get("cases", {})).items():
            scripts[case_id] = _compile_script(script, join_pointer("/cases", case_id))
        default = None
        if "default" in config:
            default = _compile_script(config["default"], "/default")
        if not scripts and default is None:
            raise ConfigurationError("declares neither 'cases' nor 'default'")
        route = Route(
            host=HOST_ID,
            model=options.model or str(config.get("model", "scripted")),
            effort=options.effort or "none",
        )
        return ConfiguredScriptedHost(
            route=route,
            scripts=scripts,
            default=default,
            config=dict(config),
            turn_usage=_reported_usage(config, options, route),
        )


def _reported_usage(config: Mapping[str, Any], options: HostOptions, route: Route) -> Usage:
    """What each turn (or judge call) reports having used (``usage``), priced from the run's
    table for the route's model like a real CLI's usage; unknown without ``usage``."""
    declared = config.get("usage")
    if declared is None:
        return UNKNOWN_USAGE
    usage = Usage(
        input_tokens=declared["inputTokens"],
        output_tokens=declared["outputTokens"],
        cached_input_tokens=declared["cachedInputTokens"],
        reasoning_tokens=declared["reasoningTokens"],
        complete=True,
    )
    return (options.prices or builtin_prices()).priced(route.model or "", usage)


def _configure_judge(options: HostOptions, config: Mapping[str, Any]) -> ConfiguredHost:
    rules = config.get("judges", {}).get(options.role)
    if rules is None:
        raise ConfigurationError(
            f"the scripted host as the {options.role} judge needs 'judges.{options.role}' "
            "rules in its configuration (see docs/hosts/scripted.md)"
        )
    route = Route(
        host=HOST_ID,
        model=options.model or str(config.get("model", "scripted")),
        effort=options.effort or "none",
    )
    judged = tuple((rule.get("promptContains"), rule["reply"]) for rule in rules)
    kept: dict[str, JsonValue] = {"judges": {options.role: list(rules)}}
    if "usage" in config:
        kept["usage"] = config["usage"]
    usage = _reported_usage(config, options, route)
    return ScriptedJudge(route, options.role, judged, kept, usage=usage)


@frozen
class ScriptedJudge:
    """The scripted host playing a judge: a deterministic reply chosen by the prompt's text.

    It touches nothing (its workspace is empty and it runs no command), so demos and tests show
    every judge path, including malformed and injected replies, without a model."""

    route: Route
    role: str
    rules: tuple[tuple[str | None, str], ...]
    config: Mapping[str, JsonValue]
    capabilities: frozenset[str] = frozenset()
    usage: Usage = UNKNOWN_USAGE
    """What each call reports having used (the configuration's ``usage``, priced)."""

    def redacted_configuration(self) -> JsonValue:
        return dict(self.config)

    def check_case(self, case: Case) -> None:
        del case  # a judge runs the prompts it is given, whatever the case

    def run(self, request: HostRequest) -> HostResult:
        prompt = request.prompts[0] if request.prompts else ""
        for contains, reply in self.rules:
            if contains is None or contains in prompt:
                return HostResult(
                    final_message=reply, complete=True, usage=self.usage, turns_completed=1
                )
        return HostResult(
            final_message=None,
            complete=False,
            execution_failed=True,
            error=f"no judges.{self.role} rule of the scripted host matches this prompt",
        )


def _compile_script(script: Mapping[str, Any], pointer: str) -> _Script:
    turns = []
    for t, turn in enumerate(script["turns"]):
        for s, step in enumerate(turn):
            ((action, body),) = step.items()
            if action in ("write", "read"):
                check_relative_path(
                    body["path"], join_pointer(pointer, "turns", t, s, action, "path")
                )
            if action == "run" and "\0" in body["command"]:
                raise ConfigurationError(
                    "command must not contain a NUL character",
                    join_pointer(pointer, "turns", t, s, action, "command"),
                )
        turns.append(tuple(turn))
    return _Script(turns=tuple(turns), pointer=pointer)


@frozen
class ConfiguredScriptedHost:
    route: Route
    scripts: Mapping[str, _Script]
    default: _Script | None
    config: Mapping[str, JsonValue]
    capabilities: frozenset[str] = ScriptedHost.capabilities
    skill_places: SkillPlaces = ScriptedHost.skill_places
    turn_usage: Usage = UNKNOWN_USAGE
    """What each turn reports having used (the configuration's ``usage``, priced)."""

    def redacted_configuration(self) -> JsonValue:
        return dict(self.config)  # holds no secrets: it is the script itself

    def prepared(self, preparation: HostPreparation) -> ConfiguredScriptedHost:
        """Only an empty preparation: the script, not a plugin or an explicit invocation,
        decides what the trial reads, so honouring a declaration would be a pretence."""
        if preparation != NO_HOST_PREPARATION:
            raise InvocationError(
                "the scripted host honours no preparation declarations (plugins or explicit "
                "skill invocations); run the case on a host that advertises them"
            )
        return self

    def _script_for(self, case_id: str) -> _Script | None:
        return self.scripts.get(case_id, self.default)

    def check_case(self, case: Case) -> None:
        script = self._script_for(case.id)
        if script is None:
            raise ConfigurationError(f"has no script for case {case.id!r} and no 'default'")
        prompts = len(case.prompts)
        if len(script.turns) != prompts:
            raise ConfigurationError(
                f"script has {len(script.turns)} turn(s) but case {case.id!r} has {prompts} "
                "prompt(s)",
                join_pointer(script.pointer, "turns"),
            )

    def run(self, request: HostRequest) -> HostResult:
        result = self._run(request)
        if result.turns_completed == 0 and not result.complete:
            return result  # nothing was asked of the "model": no usage to report
        usages = [self.turn_usage] * max(1, result.turns_completed)
        all_turns = result.complete and result.turns_completed == len(request.prompts)
        return evolve(result, usage=Usage.summed(usages, all_turns))

    def _run(self, request: HostRequest) -> HostResult:
        script = self._script_for(request.case_id)
        assert script is not None  # check_case ran at plan time
        state = _TrialState(request)
        final: str | None = None
        for turn, steps in enumerate(script.turns[: len(request.prompts)], start=1):
            final = None
            try:
                for step in steps:
                    if request.cancel.cancelled:
                        return state.result(None, cancelled=True, turns=turn - 1)
                    reply = state.perform(turn, step)
                    if reply is not None:
                        final = reply
            except _TurnFailed as exc:
                return state.result(None, error=str(exc), turns=turn - 1)
            if request.cancel.cancelled:
                return state.result(None, cancelled=True, turns=turn - 1)
            request.settle(turn, final)
        return state.result(final, turns=len(request.prompts))


def render_reply(text: str, *, prompt: str, trial: int) -> str:
    """Replies may echo the rendered prompt and the trial number, so scripts can vary by trial."""
    return text.replace(PROMPT_TOKEN, prompt).replace(TRIAL_TOKEN, str(trial))


class _TrialState:
    def __init__(self, request: HostRequest) -> None:
        self.request = request
        self.commands: list[dict[str, JsonValue]] = []
        self.reads = ReadLog()
        self.ordinal = 0
        self.skills, self.skills_complete = _discover(request)
        self.files = WorkspaceFiles(request.workspace, skill_files(self.skills))
        self.instructions = instructions_file(request.workspace, ScriptedHost.skill_places)
        self.skill_reads: list[dict[str, JsonValue]] = []
        self.before = snapshot(request.workspace)

    def perform(self, turn: int, step: Step) -> str | None:
        ((action, body),) = step.items()
        self.ordinal += 1
        if action == "reply":
            return render_reply(
                body["text"], prompt=self.request.prompts[turn - 1], trial=self.request.trial
            )
        if action == "fail":
            raise _TurnFailed(f"scripted failure: {body['message']}")
        if action == "sleep":
            self.request.cancel.wait(body["ms"] / 1000)
        elif action == "write":
            try:
                write_confined(self.request.workspace, body["path"], body["content"].encode())
            except OSError as exc:
                raise _TurnFailed(f"write {body['path']!r} failed: {exc.strerror or exc}") from None
        elif action == "read":
            self._read(turn, body["path"])
        elif action == "run":
            self._run(turn, body)
        return None

    def _read(self, turn: int, path: str) -> None:
        entry: dict[str, JsonValue] = {"turn": turn, "ordinal": self.ordinal, "path": path}
        try:
            data, size = read_confined(self.request.workspace, path, limits.MAX_SCRIPTED_READ_BYTES)
        except WorkspaceEscapeError:
            entry.update(complete=False, error="symlink")
        except FileNotFoundError:
            entry.update(complete=False, error="missing")
        except OSError as exc:
            entry.update(complete=False, error=(exc.strerror or "unreadable").lower())
        else:
            entry.update(
                complete=len(data) == size, byteLength=size, sha256=hashlib.sha256(data).hexdigest()
            )
        self.reads.add_entry(entry)
        for skill in self.skills:
            if path == skill.path:
                whole = entry.get("complete") is True and entry.get("sha256") == skill.sha256
                exact = whole and skill.body is not None
                self._skill_touch(skill, turn, "read" if exact else "partial")

    def _skill_touch(self, skill: MountedSkill, turn: int, status: str) -> None:
        self.skill_reads.append(
            {"skill": skill.name, "turn": turn, "ordinal": self.ordinal, "status": status}
        )

    def _run(self, turn: int, body: Mapping[str, Any]) -> None:
        """Run the command in the trial's sandbox, as a real agent's commands would run."""
        request = self.request
        if request.isolation is None:
            raise _TurnFailed("run steps need the trial's sandbox, and the request carries none")
        timeout_ms = body.get("timeoutMs", limits.DEFAULT_SCRIPTED_COMMAND_TIMEOUT_MS)
        try:
            outcome = request.isolation.run(
                ["/bin/sh", "-c", body["command"]],
                role="candidate",
                timeout_s=timeout_ms / 1000,
                output_limit=limits.MAX_SCRIPTED_COMMAND_OUTPUT_BYTES,
                # the trial number lets a script vary by trial, as a real agent would
                environment={**request.environment, TRIAL_VARIABLE: str(request.trial)},
            )
        except IsolationError as exc:
            raise _TurnFailed(f"run step could not be isolated: {exc}") from None
        self.commands.append(
            {
                "turn": turn,
                "ordinal": self.ordinal,
                "command": body["command"],
                "exitCode": outcome.exit_code,
                "timedOut": outcome.timed_out,
                "outputSha256": hashlib.sha256(outcome.output).hexdigest(),
                "outputByteLength": len(outcome.output),
                "outputTruncated": outcome.truncated,
                "durationMs": round(outcome.duration_ms, 3),
            }
        )
        text = outcome.output.decode("utf-8", "replace")
        if outcome.truncated:
            text = ""  # a truncated output never proves a whole read
        found = command_reads(body["command"], text, outcome.exit_code, self.files)
        self.files.forget()  # the next step may have changed them
        self.reads.add(turn, self.ordinal, found)
        for skill, status in skill_touches(self.skills, found.reads):
            self._skill_touch(skill, turn, status)
        if outcome.timed_out:
            command = body["command"]
            if len(command) > MAX_REASON_COMMAND_CHARS:
                command = command[:MAX_REASON_COMMAND_CHARS] + "..."
            raise _TurnFailed(
                f"run step {self.ordinal} timed out after {timeout_ms} ms: {command!r}"
            )

    def result(
        self, final: str | None, *, turns: int, error: str | None = None, cancelled: bool = False
    ) -> HostResult:
        complete = error is None and not cancelled and final is not None
        after = snapshot(self.request.workspace)
        changed = self.before.complete and after.complete
        observations = (
            Observation(
                COMMANDS_OBSERVATION, HOST_ID, Completeness.COMPLETE, {"commands": self.commands}
            ),
            Observation(
                FILE_READS_OBSERVATION,
                HOST_ID,
                Completeness.PARTIAL if self.reads.overflowed else Completeness.COMPLETE,
                self.reads.data(self.instructions),
            ),
            Observation(
                SKILLS_OBSERVATION,
                HOST_ID,
                Completeness.COMPLETE if self.skills_complete else Completeness.PARTIAL,
                make_skills_data(self.skills, self.skill_reads),
            ),
            Observation(
                FILES_CHANGED_OBSERVATION,
                HOST_ID,
                Completeness.COMPLETE if changed else Completeness.PARTIAL,
                changes(self.before, after),
            ),
        )
        return HostResult(
            final_message=final,
            complete=complete,
            execution_failed=error is not None,
            error=error,
            cancelled=cancelled,
            observations=observations,
            usage=UNKNOWN_USAGE,
            turns_completed=turns,
            home=self._home(),
        )

    def _home(self) -> Path | None:
        """The sandbox's candidate home, which ``run`` steps get as ``HOME``."""
        if self.request.isolation is None:
            return None
        try:
            return self.request.isolation.home("candidate")
        except (IsolationError, OSError):
            return None


def _discover(request: HostRequest) -> tuple[tuple[MountedSkill, ...], bool]:
    """Skills mounted at the start of the trial, in every directory an agent CLI looks in."""
    found: list[MountedSkill] = []
    complete = True
    for skills_dir in SKILLS_DIRS:
        skills, listed = discover_skills(request.workspace, skills_dir)
        found.extend(skills)
        complete = complete and listed
    return tuple(found), complete


_HOST: Host = ScriptedHost()


@hookimpl
def sevro_register_hosts(register: Callable[[Host], None]) -> None:
    register(_HOST)
