"""``sevro.verifier``: an evaluator-owned program judges the trial and prints its assertions.

The program (an argv, or a script in one of the case's evaluator directories) runs after the
host finished, in the trial's sandbox as role ``checks``: the workspace, the evaluator
directories read-only, the final output and the workspace diff as read-only files, no network,
bounded stdout and a timeout (``docs/evaluator-resources.md``). Its stdout is a JSON list of
assertions ``{id, passed, detail?}`` or Skivolve's object ``{assertions, passed?, metrics?}``.
Each assertion becomes its own check outcome ``<check>/<id>`` (``CheckOutcome.parts``); the
check itself is their conjunction and fails when any assertion failed. Anything that does not
prove a verdict (invalid JSON, no assertions, a missing or duplicate id, a missing critical id,
an overall pass beside a failed assertion, a non-zero exit with nothing failed) is a grading
error, never a pass.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath

from attrs import frozen

from sevro_core.api import (
    ENGINE_OBSERVATION_PREFIX,
    SANDBOX_CAPABILITY,
    CheckOutcome,
    CheckPart,
    CheckStatus,
    Completeness,
    ConfigurationError,
    GradingError,
    InvocationError,
    JsonValue,
    Observation,
    TrialView,
    parse_json_text,
)
from sevro_graders.check_workspace import FINAL
from sevro_graders.checkprocess import run_check_process
from sevro_graders.configuration import check_shape
from sevro_graders.shell_grader import OBSERVATION_PREFIX as SHELL_PREFIX
from sevro_graders.shell_grader import observation_id as shell_observation_id

GRADER_ID = "sevro.verifier"
OBSERVATION_PREFIX = f"{ENGINE_OBSERVATION_PREFIX}verifier."

DEFAULT_VERIFIER_TIMEOUT_MS = 60_000
MAX_VERIFIER_TIMEOUT_MS = 600_000
MAX_VERIFIER_STDOUT_BYTES = 1024 * 1024
"""stdout beyond this is a grading error; the verifier is killed as soon as it passes it."""
MAX_VERIFIER_ASSERTIONS = 256
MAX_ASSERTION_ID_CHARS = 128
MAX_ASSERTION_DETAIL_CHARS = 160
"""Of each assertion's detail kept in the observation (the rest is cut): 256 of them stay
well inside one check's observation bound."""
MAX_DETAIL_IDS = 5
"""Failed ids a check's detail names before ``and N more``."""

_ASSERTION_KEYS = frozenset({"id", "passed", "detail", "evidence"})
_DOCUMENT_KEYS = frozenset({"assertions", "passed", "metrics"})


def observation_id(check_id: str) -> str:
    """``sevro.observation.verifier.<checkId>`` (a check id that is no id segment: its sha256)."""
    return OBSERVATION_PREFIX + shell_observation_id(check_id).removeprefix(SHELL_PREFIX)


@frozen
class Assertion:
    id: str
    passed: bool
    detail: str | None


@frozen
class VerifierCheck:
    argv: tuple[str, ...] = ()
    """The command, when ``run`` is an argv."""
    script: tuple[str, str] | None = None
    """(evaluator directory, relative path), when ``run`` names a script."""
    interpreter: tuple[str, ...] = ()
    timeout_ms: int = DEFAULT_VERIFIER_TIMEOUT_MS
    critical: tuple[str, ...] = ()
    workspace: str = FINAL
    """``final`` (the agent's workspace) or ``pristine`` (a fresh copy of the fixture)."""

    def evaluator_names(self) -> dict[str, str]:
        """The evaluator directory its script lives in (refused at load when undeclared)."""
        return {} if self.script is None else {self.script[0]: "/run/script"}

    def command(self, view: TrialView) -> list[str]:
        if self.script is None:
            return list(self.argv)
        name, relative = self.script
        directory = view.evaluator.get(name)
        if directory is None:
            declared = ", ".join(sorted(view.evaluator)) or "none"
            raise GradingError(
                f"the case declares no evaluator directory {name!r} (declared: {declared})"
            )
        return [*self.interpreter, str(directory / relative)]

    def grade(self, check_id: str, view: TrialView) -> CheckOutcome:
        outcome = run_check_process(
            view,
            self.command(view),
            what="the verifier",
            timeout_ms=self.timeout_ms,
            workspace=self.workspace,
            stdout_limit=MAX_VERIFIER_STDOUT_BYTES,
        )
        assert outcome.exit_code is not None
        assertions, overall = parse_assertions(outcome.output, outcome.exit_code)
        failure = self.assess(assertions, overall, outcome.exit_code)
        data: dict[str, JsonValue] = {
            "exitCode": outcome.exit_code,
            "stdoutSha256": hashlib.sha256(outcome.output).hexdigest(),
            "passed": overall,
            "critical": list(self.critical),
            "assertions": [_assertion_json(a) for a in assertions],
        }
        obs = Observation(observation_id(check_id), GRADER_ID, Completeness.COMPLETE, data)
        return CheckOutcome(
            id=check_id,
            grader=GRADER_ID,
            status=CheckStatus.PASSED if failure is None else CheckStatus.FAILED,
            detail=failure,
            evidence_refs=(obs.id,),
            observations=(obs,),
            parts=tuple(_part(a, a.id in self.critical) for a in assertions),
        )

    def assess(
        self, assertions: Sequence[Assertion], overall: bool | None, exit_code: int
    ) -> str | None:
        """The check's failure detail, None when it passed; a grading error when the result
        contradicts itself or misses what the case requires."""
        by_id = {a.id: a for a in assertions}
        missing = [i for i in self.critical if i not in by_id]
        if missing:
            raise GradingError(f"critical assertion(s) missing: {_names(missing)}")
        failed = [a.id for a in assertions if not a.passed]
        if failed and overall is True:
            raise GradingError(
                f"the verifier reported passed: true beside failed assertion(s) {_names(failed)}"
            )
        if not failed and exit_code != 0:
            raise GradingError(f"the verifier exited {exit_code} but no assertion failed")
        if failed:
            critical = [i for i in failed if i in self.critical]
            which = "critical assertion(s)" if critical else "assertion(s)"
            return f"{which} failed: {_names(critical or failed)}"
        if overall is False:
            return "the verifier reported passed: false"
        return None


def _names(ids: Sequence[str]) -> str:
    shown = ", ".join(ids[:MAX_DETAIL_IDS])
    more = len(ids) - MAX_DETAIL_IDS
    return shown + (f" and {more} more" if more > 0 else "")


def _part(assertion: Assertion, critical: bool) -> CheckPart:
    """The assertion as its own check outcome ``<check>/<id>``; a critical one says so."""
    detail = assertion.detail[:MAX_ASSERTION_DETAIL_CHARS] if assertion.detail else None
    if critical:
        detail = f"critical: {detail}" if detail else "critical"
    return CheckPart(assertion.id, assertion.passed, detail)


def _assertion_json(assertion: Assertion) -> dict[str, JsonValue]:
    out: dict[str, JsonValue] = {"id": assertion.id, "passed": assertion.passed}
    if assertion.detail is not None:
        out["detail"] = assertion.detail[:MAX_ASSERTION_DETAIL_CHARS]
    return out


def parse_assertions(stdout: bytes, exit_code: int) -> tuple[list[Assertion], bool | None]:
    """The assertions and the overall ``passed`` (None when not given) the verifier printed."""
    if not stdout.strip():
        if exit_code != 0:
            raise GradingError(f"the verifier exited {exit_code} without assertions")
        raise GradingError("the verifier printed no assertions")
    try:
        document = parse_json_text(stdout.strip(), source="verifier stdout")
    except InvocationError as exc:
        raise GradingError(f"the verifier's stdout is not JSON: {exc.message}") from None
    overall: JsonValue = None
    if isinstance(document, dict):
        unknown = sorted(set(document) - _DOCUMENT_KEYS)
        if unknown or "assertions" not in document:
            raise GradingError(
                "the verifier's object needs 'assertions' (and may hold 'passed', 'metrics')"
                + (f"; unknown: {', '.join(unknown)}" if unknown else "")
            )
        overall = document.get("passed")
        if overall is not None and not isinstance(overall, bool):
            raise GradingError("the verifier's 'passed' is not a boolean")
        document = document["assertions"]
    if not isinstance(document, list):
        raise GradingError("the verifier's stdout is neither a list of assertions nor an object")
    if not document:
        raise GradingError("the verifier printed no assertions")
    if len(document) > MAX_VERIFIER_ASSERTIONS:
        raise GradingError(f"more than {MAX_VERIFIER_ASSERTIONS} assertions")
    assertions = [_assertion(item, index) for index, item in enumerate(document)]
    seen: set[str] = set()
    for assertion in assertions:
        if assertion.id in seen:
            raise GradingError(f"duplicate assertion id {assertion.id!r}")
        seen.add(assertion.id)
    return assertions, overall if isinstance(overall, bool) else None


def _assertion(item: JsonValue, index: int) -> Assertion:
    where = f"assertion {index}"
    if not isinstance(item, dict):
        raise GradingError(f"{where} is not an object")
    unknown = sorted(set(item) - _ASSERTION_KEYS)
    if unknown:
        raise GradingError(f"{where} has unknown key(s): {', '.join(unknown)}")
    identifier, passed = item.get("id"), item.get("passed")
    if not isinstance(identifier, str) or not identifier.strip():
        raise GradingError(f"{where} has no id")
    if len(identifier) > MAX_ASSERTION_ID_CHARS or not identifier.isprintable():
        raise GradingError(f"{where}'s id is longer than {MAX_ASSERTION_ID_CHARS} or unprintable")
    if not isinstance(passed, bool):
        raise GradingError(f"assertion {identifier!r} has no boolean 'passed'")
    detail = item.get("detail", item.get("evidence"))
    if detail is not None and not isinstance(detail, str):
        raise GradingError(f"assertion {identifier!r} has a detail that is not text")
    return Assertion(identifier, passed, detail)


class VerifierGrader:
    """Stage 20, beside ``sevro.shell``. Needs the planner's sandbox capability."""

    id = GRADER_ID
    version = "1.0.0"
    capabilities: frozenset[str] = frozenset()
    requires: frozenset[str] = frozenset({SANDBOX_CAPABILITY})
    stage = 20

    def compile(self, configuration: Mapping[str, JsonValue]) -> VerifierCheck:
        config = check_shape("verifier.v1", configuration)
        run = config["run"]
        timeout = config.get("timeoutMs", DEFAULT_VERIFIER_TIMEOUT_MS)
        critical = tuple(config.get("critical", ()))
        workspace = config.get("workspace", FINAL)
        if isinstance(run, list):
            if any("\0" in part for part in run):
                raise ConfigurationError("run must not contain a NUL character", "/run")
            return VerifierCheck(
                argv=tuple(run), timeout_ms=timeout, critical=critical, workspace=workspace
            )
        name, _, relative = run["script"].partition("/")
        path = PurePosixPath(relative)
        if not relative or path.is_absolute() or ".." in path.parts or "\0" in relative:
            raise ConfigurationError(
                "script is '<evaluator name>/<path inside it>', without '..'", "/run/script"
            )
        return VerifierCheck(
            script=(name, str(path)),
            interpreter=tuple(run.get("interpreter", ())),
            timeout_ms=timeout,
            critical=critical,
            workspace=workspace,
        )
