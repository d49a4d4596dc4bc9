"""Frozen data models that flow through a run: cases, host results, check outcomes, trials."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

from attrs import field, frozen

from sevro_core.formats.jsonio import JsonValue
from sevro_core.states import CheckStatus, Completeness, Execution, Grading, Verdict


@frozen
class CheckDeclaration:
    """One check as written in a case file: ``{id, grader, configuration}``."""

    id: str
    grader: str
    configuration: Mapping[str, JsonValue]
    turn: int | None = None
    """Grade the trial as it stood when this turn settled (None: the final state)."""
    arm: str | None = None
    """In an experiment, grade only this arm's trials (None: every arm's)."""

    def to_json(self) -> dict[str, JsonValue]:
        """As written (the input of the checks digest): the optional fields only when set."""
        out: dict[str, JsonValue] = {
            "id": self.id,
            "grader": self.grader,
            "configuration": dict(self.configuration),
        }
        if self.turn is not None:
            out["turn"] = self.turn
        if self.arm is not None:
            out["arm"] = self.arm
        return out


@frozen
class EvaluatorDirectory:
    """A directory of evaluator-only files a case declares (verifier scripts, gold files), read
    once at load time: checks see it read-only, the candidate never does."""

    name: str
    path: Path
    """Canonical, absolute."""
    fingerprint: str
    """sha256 over its sorted (path, mode, sha256) entries: a changed script changes identity."""
    entries: int
    bytes: int

    def to_json(self) -> dict[str, JsonValue]:
        """What enters the case's checks digest: never the path, which differs per machine."""
        return {"name": self.name, "fingerprint": self.fingerprint}


@frozen
class CalibrationVariant:
    """A reference result a case declares for ``sevro calibrate``: what a known-good, known-bad
    or adversarial agent leaves, and the verdict the case's checks must give it. Evaluator
    material: ``sevro run`` never runs it and it is not in the case digest."""

    id: str
    kind: str
    """``good``, ``bad`` or ``adversarial``."""
    expect: str
    """The task verdict the checks must give: ``passed`` or ``failed``."""
    script: Mapping[str, JsonValue] | None = None
    """A scripted-host script (``{"turns": [[steps...]]}``), or None for ``final_output``."""
    final_output: str | None = None
    """A file, relative to the case file's directory, whose text is the agent's only reply."""
    failing_checks: tuple[str, ...] = ()
    """With ``expect: failed``: exactly these checks must fail and the others pass."""


@frozen
class ExtensionBundle:
    """A skill-eval runtime extension bundle, snapshotted once at load (bytes in memory), so
    an edit after load can neither change what runs nor go unrecorded."""

    entry: str
    """The entry file's relative POSIX path (``extensions/probe.mjs``)."""
    files: Mapping[str, bytes]
    """Every file of the entry and its resources, by relative POSIX path (entry included)."""
    digest: str
    """``sha256:<hex>`` of the canonical JSON list ``[[path, sha256hex], ...]`` sorted by path."""

    def to_json(self) -> dict[str, JsonValue]:
        """What evidence and identity record: never the bytes."""
        return {"entry": self.entry, "digest": self.digest, "files": sorted(self.files)}


@frozen
class RuntimeProfile:
    """skill-eval ``runtime``: shared by both arms; a host that cannot honour it refuses the
    case rather than run it without."""

    host: str
    """skill-eval's runtime host name (``pi``)."""
    session: bool = False
    extensions: tuple[ExtensionBundle, ...] = ()
    literal: Mapping[str, str] = field(factory=dict)
    """``environment.literal``: non-secret values, recorded."""
    inherit: tuple[str, ...] = ()
    """``environment.inherit``: names only; the values are never persisted."""

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "host": self.host,
            "session": self.session,
            "extensions": [b.to_json() for b in self.extensions],
            "environment": {
                "literal": {k: self.literal[k] for k in sorted(self.literal)},
                "inherit": list(self.inherit),
            },
        }


@frozen
class HostProfile:
    """What a case asks of the host beyond its prompts (skill-eval ``tools``, ``runtime``,
    context observation); a host that cannot honour a part refuses the case."""

    tools: tuple[str, ...] | None = None
    """The declared tool list; None: the host's default tools."""
    runtime: RuntimeProfile | None = None
    observe_context: bool = False
    """The case has context-text checks: the host records ``sevro.host.context``."""

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "tools": None if self.tools is None else list(self.tools),
            "runtime": None if self.runtime is None else self.runtime.to_json(),
            "observeContext": self.observe_context,
        }


@frozen
class Case:
    """A case as declared (templates unrendered), with where it came from for diagnostics."""

    id: str
    prompt: str
    fixture: Mapping[str, JsonValue]
    checks: tuple[CheckDeclaration, ...] = ()
    required_evidence: tuple[str, ...] = ()
    follow_up_prompt: str | None = None
    turns: tuple[str, ...] = ()
    """The prompts of a case declared with ``turns`` (then ``prompt`` is the first of them)."""
    source: str = ""
    pointer: str = ""
    review_questions: tuple[str, ...] = ()
    """Questions for the advisory reviewer (skill-eval ``review_questions``); never sent to
    the candidate."""
    expected_output: str | None = None
    """What a good result looks like, in words (skill-creator ``expected_output``), for the
    advisory reviewer only: no check grades it, so it is not in the case digest."""
    evaluator: tuple[EvaluatorDirectory, ...] = ()
    """The evaluator directories (``evaluator`` in the case file), fingerprinted into the
    checks digest and mounted read-only for checks only."""
    calibration: tuple[CalibrationVariant, ...] = ()
    """Reference results for ``sevro calibrate`` (docs/oracle-calibration.md); never run by
    ``sevro run`` and not in the case digest."""
    host_profile: HostProfile | None = None
    """What the case asks of the host beyond its prompts (skill-eval groups); in the case
    digest only when set, so the identities of cases without one are unchanged."""

    @property
    def prompts(self) -> tuple[str, ...]:
        """Every turn's prompt template, in order: ``turns``, or ``prompt`` and its follow-up."""
        if self.turns:
            return self.turns
        if self.follow_up_prompt is None:
            return (self.prompt,)
        return (self.prompt, self.follow_up_prompt)

    def declaration(self) -> dict[str, JsonValue]:
        """The case as JSON, in Sevro's shape (the input of the case digest)."""
        if self.turns:
            return {"id": self.id, "turns": list(self.turns)}
        out: dict[str, JsonValue] = {"id": self.id, "prompt": self.prompt}
        if self.follow_up_prompt is not None:
            out["followUpPrompt"] = self.follow_up_prompt
        return out


@frozen
class Route:
    """Which host, model and effort played a role: ``candidate``, or a judge's (``semantic``,
    ``advisory``, ``comparator``)."""

    host: str
    model: str
    effort: str
    role: str = "candidate"

    def to_json(self) -> dict[str, str]:
        return {"role": self.role, "host": self.host, "model": self.model, "effort": self.effort}


@frozen
class Observation:
    """A bounded, namespaced fact a host or the engine recorded about a trial."""

    id: str
    source: str
    completeness: Completeness
    data: Mapping[str, JsonValue]

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "id": self.id,
            "source": self.source,
            "completeness": self.completeness.value,
            "data": dict(self.data),
        }


@frozen
class Artifact:
    """Raw bytes a host retains with the trial (event streams, transcripts)."""

    id: str
    content: bytes


@frozen
class Usage:
    """Token and cost accounting; ``None`` means unknown and is never summed as zero.

    ``cost_usd`` is what sevro computed from a price table (``sevro_core.prices``, or a host
    configuration's own prices) for complete usage of a priced model; ``reported_cost_usd`` is
    what the agent CLI itself reported as its cost (where it reports one), kept beside, never
    mixed."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_input_tokens: int | None = None
    reasoning_tokens: int | None = None
    cost_usd: float | None = None
    complete: bool = False
    reported_cost_usd: float | None = None

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
            "cachedInputTokens": self.cached_input_tokens,
            "reasoningTokens": self.reasoning_tokens,
            "costUsd": self.cost_usd,
            "reportedCostUsd": self.reported_cost_usd,
            "complete": self.complete,
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> Usage:
        """The usage a :meth:`to_json` document records (from a schema-checked file)."""
        return cls(
            input_tokens=value["inputTokens"],
            output_tokens=value["outputTokens"],
            cached_input_tokens=value["cachedInputTokens"],
            reasoning_tokens=value["reasoningTokens"],
            cost_usd=value["costUsd"],
            complete=value["complete"],
            reported_cost_usd=value.get("reportedCostUsd"),
        )

    @classmethod
    def summed(cls, usages: Sequence[Usage], all_turns: bool) -> Usage:
        """Per-invocation usages added up (a CLI run once per turn reports only its own turn):
        a figure any of them lacks stays unknown; complete only when ``all_turns`` ran and
        each one was complete."""
        if not usages:
            return cls()

        def total(name: str) -> Any:
            values = [getattr(u, name) for u in usages]
            return None if any(v is None for v in values) else sum(values)

        cost = total("cost_usd")
        reported = total("reported_cost_usd")
        return cls(
            input_tokens=total("input_tokens"),
            output_tokens=total("output_tokens"),
            cached_input_tokens=total("cached_input_tokens"),
            reasoning_tokens=total("reasoning_tokens"),
            cost_usd=round(cost, 9) if cost is not None else None,
            complete=all_turns and all(u.complete for u in usages),
            reported_cost_usd=round(reported, 9) if reported is not None else None,
        )


UNKNOWN_USAGE = Usage()


@frozen
class StateBinding:
    """One piece of the candidate host's native state a check may read once the candidate
    finished (seed 002's host-state opt-in): bound read-only as
    ``SEVRO_CANDIDATE_ARTIFACT_<NAME>`` after the same link, hardlink, special-file and size
    checks as a declared artifact directory, walked from ``root`` without following a link."""

    name: str
    root: Path
    """A private directory of the host's own (its native home, the commands' home)."""
    path: str
    """Relative to ``root``; no empty, ``.`` or ``..`` component."""
    file: bool = False
    """One regular file (the native configuration) rather than a directory tree."""


@frozen
class HostResult:
    """What a host returns for all turns of one trial."""

    final_message: str | None
    complete: bool
    execution_failed: bool = False
    error: str | None = None
    cancelled: bool = False
    observations: tuple[Observation, ...] = ()
    artifacts: tuple[Artifact, ...] = ()
    usage: Usage = UNKNOWN_USAGE
    turns_completed: int = 0
    home: Path | None = None
    """The candidate's private HOME, left in place until the trial's private directory is
    removed, so checks may read its declared artifact directories; None when the host has none
    it can name (its ``runtime.artifactDirectories`` are then a grading error)."""
    state: tuple[StateBinding, ...] = ()
    """The native state the host exposes when the runtime file selects it (none otherwise)."""


@frozen
class CheckPart:
    """One assertion of a check that proves several at once (a verifier's ``{id, passed}``).

    The engine records each part as a check outcome of its own, ``<check>/<part id>``, right
    after its check, so reports and the verdict policy see which assertion failed, not only
    that the check did. The check's own status stays the conjunction: a failed part beside a
    passed check is a grading error.
    """

    id: str
    passed: bool
    detail: str | None = None


@frozen
class CheckOutcome:
    """The result of one check; grader errors are raised, not returned.

    ``observations`` are bounded facts the grader established (a shell check's exit code);
    the engine keeps them in the trial's evidence beside the host's. ``parts`` are the check's
    assertions (:class:`CheckPart`); ``part_of`` is set by the engine on the outcome it records
    for one of them and names the declared check it belongs to.
    """

    id: str
    grader: str
    status: CheckStatus
    detail: str | None = None
    evidence_refs: tuple[str, ...] = ()
    observations: tuple[Observation, ...] = ()
    parts: tuple[CheckPart, ...] = ()
    part_of: str | None = None

    def to_json(self) -> dict[str, JsonValue]:
        out: dict[str, JsonValue] = {
            "id": self.id,
            "grader": self.grader,
            "status": self.status.value,
        }
        if self.detail is not None:
            out["detail"] = self.detail
        out["evidenceRefs"] = list(self.evidence_refs)
        if self.part_of is not None:
            out["partOf"] = self.part_of
        return out


@frozen
class ProcessOutcome:
    """How a bounded command ended (:func:`sevro_core.isolation.processes.run_bounded`)."""

    exit_code: int | None
    timed_out: bool
    cancelled: bool
    output: bytes
    truncated: bool
    duration_ms: float
    stderr: bytes = b""
    overflowed: bool = False
    """The output passed its limit and the group was killed (``kill_on_overflow``)."""
    stalled: bool = False
    """No output for ``stall_s`` seconds while the process still ran; the group was killed."""


class TrialIsolation(Protocol):
    """What hosts and graders may do with a trial's sandbox: run a command in it for a role.

    :class:`sevro_core.isolation.sandbox.Isolation` implements it; naming the protocol here
    keeps these values free of the sandbox machinery (which itself depends on them).
    """

    def run(
        self,
        argv: Sequence[str],
        *,
        role: str,
        timeout_s: float,
        output_limit: int,
        merge_stderr: bool = True,
        capture_output: bool = True,
        kill_on_overflow: bool = False,
        environment: Mapping[str, str] | None = None,
    ) -> ProcessOutcome:
        """Run ``argv`` in the workspace under the sandbox; raise ``IsolationError`` if it can't."""
        ...

    def home(self, role: str) -> Path:
        """The role's private HOME (made when absent): the one its commands get."""
        ...

    def command_line(
        self,
        argv: Sequence[str],
        *,
        role: str,
        read_only: Sequence[Path] = (),
        environment: Mapping[str, str] | None = None,
    ) -> tuple[list[str], dict[str, str]]:
        """The sandboxed command line and its environment for a process an agent CLI starts
        itself (a plugin hook), with extra read-only grants."""
        ...


@frozen
class JudgeReply:
    """What a judge host answered one prompt: its final message and what the call cost.

    ``text`` is None when the judge gave no final message; ``error`` says why the call failed
    (the host failed, was cancelled or returned an invalid result). A grader treats anything but
    a complete reply as a grading error, never a pass.
    """

    text: str | None
    complete: bool
    route: Route
    error: str | None = None
    usage: Usage = UNKNOWN_USAGE
    artifacts: tuple[str, ...] = ()
    """The ids of the trial artifacts holding this call's prompt and reply, for a check's
    ``evidence_refs`` (empty outside the engine)."""

    @property
    def usable(self) -> bool:
        return self.error is None and self.complete and self.text is not None


class TrialJudges(Protocol):
    """The judges a trial's graders may ask: one empty, sandboxed, passive host run per prompt.

    The engine implements it; identical prompts of one role are asked once per trial (so a
    grader batching its checks into one call asks once and every check reads the same reply).
    Every call is recorded with the trial's evidence (prompt, reply, route, usage per role).
    """

    def available(self, role: str) -> bool:
        """Whether the run configured a judge for ``role``."""
        ...

    def ask(self, role: str, prompt: str, *, purpose: str) -> JudgeReply:
        """Run the ``role`` judge on ``prompt``; ``purpose`` names the call in evidence
        (``sevro.semantic:response``). Raises ``GradingError`` when no judge is configured."""
        ...


@frozen
class TrialView:
    """What a grader may look at: the final message, the host's and the fixture's
    observations, the workspace and the fixture's pre-host baseline.

    Graders that execute something against the workspace use ``isolation``, the trial's
    sandbox; it is None only when a grader is called outside the engine.
    """

    case_id: str
    trial: int
    final_message: str | None
    final_message_complete: bool
    observations: Mapping[str, Observation]
    workspace: Path
    baseline: Mapping[str, JsonValue] = field(factory=dict)
    """What the fixture captured right before the host's first turn, held in engine memory
    (for Git fixtures ``{"baseRevision": ...}``); empty when the fixture captures nothing."""
    fixture_bin_dir: Path | None = None
    """The fixture's tools; checks that run commands put it first on ``PATH``."""
    isolation: TrialIsolation | None = None
    turn: int | None = None
    """Set when the check grades a past turn: the workspace is that turn's snapshot, the final
    message is that turn's reply, and host observations hold only entries of turns up to it."""
    judges: TrialJudges | None = None
    """The run's judges (``sevro.semantic`` asks ``semantic``); None outside the engine."""
    checks: tuple[CheckDeclaration, ...] = ()
    """The case's checks graded against this same view (same turn), so a grader can batch its
    own checks into one judge call."""
    prompts: tuple[str, ...] = ()
    """The rendered prompts the candidate was given, in order (judges quote the task)."""
    evaluator: Mapping[str, Path] = field(factory=dict)
    """The case's evaluator directories by name, as mounted read-only for role ``checks``
    (a verifier's ``script`` names one); empty when the case declares none."""
    evaluator_problem: str | None = None
    """Why the evaluator directories differ from those fingerprinted when the case was loaded
    (changed, vanished), or None: a check must then not read them (a judge's reference too)."""
    pristine: Callable[[], AbstractContextManager[TrialIsolation]] | None = None
    """A fresh copy of the case's fixture, materialised as before the candidate ran (no arm
    mounted), as the trial's sandbox with that copy for its workspace; removed when the
    context exits. Checks that grade only the answer run there (``"workspace": "pristine"``).
    None outside the engine."""


@frozen
class TrialStates:
    execution: Execution
    grading: Grading
    verdict: Verdict


class CancelToken:
    """A cooperative cancellation flag shared by the scheduler, hosts and graders."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.reason: str | None = None

    def cancel(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds``; return True early if cancelled."""
        return self._event.wait(seconds)


@frozen
class HostRequest:
    """One trial's instruction to a host: rendered prompts, the workspace and the environment."""

    case_id: str
    trial: int
    prompts: tuple[str, ...]
    workspace: Path
    condition: str
    cancel: CancelToken
    private_root: Path
    environment: Mapping[str, str] = field(factory=dict)
    fixture_bin_dir: Path | None = None
    extra: Mapping[str, Any] = field(factory=dict)
    isolation: TrialIsolation | None = None
    """The trial's sandbox: hosts run the agent's commands through it (role ``candidate``)."""
    role: str = "candidate"
    """``candidate``, or a judge's role (``semantic``, ``advisory``, ``comparator``): a judge
    runs in an empty workspace, passive, and the host must give its CLI no tools, no MCP
    servers, no network and nothing writable beyond its private home."""
    turn_settled: Callable[[int, str | None], None] | None = None
    """Hosts call it when a turn settled (its number and reply) and before the next starts:
    the engine snapshots the workspace then, so a check can grade what was true after it."""

    profile: HostProfile | None = None
    """The case's host profile (declared tools, runtime, context observation), or None."""
    max_cost_usd: float | None = None
    """The call's spend ceiling in USD (``--max-call-cost-usd``), or None for none: what the
    run reserved for this call. A host whose CLI can stop itself at a budget passes it on (over
    all the call's turns); the others cannot, and the run's journal still charges the call."""

    def settle(self, turn: int, reply: str | None) -> None:
        """Report turn ``turn`` settled (a no-op when the engine asked for nothing)."""
        if self.turn_settled is not None:
            self.turn_settled(turn, reply)


def unit_key(case_id: str, arm: str | None) -> str:
    """``case`` in a plain run, ``case@arm`` in an experiment: ``@`` is in no case id, so the
    key is unambiguous and safe as a directory name."""
    return case_id if arm is None else f"{case_id}@{arm}"
