"""``sevro.shell``: an evaluator-owned command asserts the state the host left in the workspace.

The command runs as ``sh -e -c <run>`` in the workspace after the host finished, inside the
trial's sandbox (role ``checks``: its own private HOME and TMPDIR, a credential-free environment,
protected roots hidden, no network). stdout is captured only when a stdout assertion is declared,
at most ``MAX_SHELL_STDOUT_BYTES``, and only its digest and length are kept. A wrong exit code or
stdout fails the check; a command that cannot be isolated, times out, floods stdout, writes
invalid UTF-8 or dies without an exit code makes grading an error — it never passes.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping

from attrs import frozen

from sevro_core.api import (
    ENGINE_OBSERVATION_PREFIX,
    SANDBOX_CAPABILITY,
    CheckOutcome,
    CheckStatus,
    Completeness,
    ConfigurationError,
    GradingError,
    JsonValue,
    Observation,
    TrialView,
)
from sevro_graders.check_workspace import FINAL
from sevro_graders.checkprocess import run_check_process
from sevro_graders.configuration import check_shape, regex_at
from sevro_graders.jsregex import JsRegex, match_budget

GRADER_ID = "sevro.shell"
OBSERVATION_PREFIX = f"{ENGINE_OBSERVATION_PREFIX}shell."

MAX_SHELL_RUN_CHARS = 4096
"""Longest ``run`` script, in characters."""
DEFAULT_SHELL_TIMEOUT_MS = 30_000
MAX_SHELL_TIMEOUT_MS = 120_000
MAX_SHELL_STDOUT_BYTES = 1024 * 1024
"""stdout beyond this is a grading error; the command is killed as soon as it passes it."""

_ID_SEGMENTS = re.compile(r"[a-z0-9]+(?:[.-][a-z0-9]+)*")
STDOUT_KEYS = ("expectExact", "expectRegex", "notRegex")


def observation_id(check_id: str) -> str:
    """``sevro.observation.shell.<checkId>``; a check id that is not a valid id segment
    (upper case, ``_``, ``..``) is replaced by its sha256, as Sevro does for semantic checks."""
    if _ID_SEGMENTS.fullmatch(check_id):
        return OBSERVATION_PREFIX + check_id
    return OBSERVATION_PREFIX + hashlib.sha256(check_id.encode()).hexdigest()


def drop_one_newline(text: str) -> str:
    return text[:-1] if text.endswith("\n") else text


@frozen
class ShellCheck:
    run: str
    expected_exit_code: int = 0
    timeout_ms: int = DEFAULT_SHELL_TIMEOUT_MS
    expect_exact: str | None = None
    expect_regex: JsRegex | None = None
    not_regex: JsRegex | None = None
    workspace: str = FINAL
    """``final`` (the agent's workspace) or ``pristine`` (a fresh copy of the fixture)."""

    @property
    def asserts_stdout(self) -> bool:
        return any(x is not None for x in (self.expect_exact, self.expect_regex, self.not_regex))

    def grade(self, check_id: str, view: TrialView) -> CheckOutcome:
        outcome = run_check_process(
            view,
            ["/bin/sh", "-e", "-c", self.run],
            what="the shell check",
            timeout_ms=self.timeout_ms,
            workspace=self.workspace,
            stdout_limit=MAX_SHELL_STDOUT_BYTES if self.asserts_stdout else None,
        )
        assert outcome.exit_code is not None
        data: dict[str, JsonValue] = {
            "exitCode": outcome.exit_code,
            "expectedExitCode": self.expected_exit_code,
        }
        stdout = None
        if self.asserts_stdout:
            try:
                stdout = outcome.output.decode("utf-8")
            except UnicodeDecodeError:
                raise GradingError("stdout is not valid UTF-8") from None
            data["stdoutSha256"] = hashlib.sha256(outcome.output).hexdigest()
            data["stdoutByteLength"] = len(outcome.output)
        with match_budget(check_id):
            failure = self.assess(outcome.exit_code, stdout)
        obs = Observation(observation_id(check_id), GRADER_ID, Completeness.COMPLETE, data)
        return CheckOutcome(
            id=check_id,
            grader=GRADER_ID,
            status=CheckStatus.PASSED if failure is None else CheckStatus.FAILED,
            detail=failure,
            evidence_refs=(obs.id,),
            observations=(obs,),
        )

    def assess(self, exit_code: int, stdout: str | None) -> str | None:
        """The first assertion that does not hold: exit code, exact text, regex, negated regex."""
        if exit_code != self.expected_exit_code:
            return f"exit code {exit_code}, expected {self.expected_exit_code}"
        if stdout is None:
            return None
        if self.expect_exact is not None and drop_one_newline(stdout) != self.expect_exact:
            return "expectExact: stdout differs from the expected text"
        if self.expect_regex is not None and not self.expect_regex.test(stdout):
            return "expectRegex: regex assertion failed (no match)"
        if self.not_regex is not None and self.not_regex.test(stdout):
            return "notRegex: regex assertion failed (matched)"
        return None


class ShellGrader:
    """Stage 20: after the output checks. Needs the planner's sandbox capability."""

    id = GRADER_ID
    version = "1.0.0"
    capabilities: frozenset[str] = frozenset()
    requires: frozenset[str] = frozenset({SANDBOX_CAPABILITY})
    stage = 20

    def compile(self, configuration: Mapping[str, JsonValue]) -> ShellCheck:
        config = check_shape("shell.v1", configuration)
        if "\0" in config["run"]:  # no command line can carry it: exec would fail every trial
            raise ConfigurationError("run must not contain a NUL character", "/run")
        if "flags" in config and "expectRegex" not in config and "notRegex" not in config:
            raise ConfigurationError("flags needs expectRegex or notRegex", "/flags")
        flags = config.get("flags", "")
        return ShellCheck(
            run=config["run"],
            expected_exit_code=config.get("expectedExitCode", 0),
            timeout_ms=config.get("timeoutMs", DEFAULT_SHELL_TIMEOUT_MS),
            expect_exact=config.get("expectExact"),
            expect_regex=regex_at(config["expectRegex"], flags, pattern_key="expectRegex")
            if "expectRegex" in config
            else None,
            not_regex=regex_at(config["notRegex"], flags, pattern_key="notRegex")
            if "notRegex" in config
            else None,
            workspace=config.get("workspace", FINAL),
        )
