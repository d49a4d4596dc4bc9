"""``sevro.semantic``: a judge host decides whether a proposition holds of the agent's response.

Some things a check must say cannot be matched by a regex ("the reply explains why the test
failed"). A second host, the run's semantic judge (``--semantic-host``), reads the propositions
and the agent's final response (or one workspace file, ``artifactPath``) and answers ``pass`` or
``fail`` with a reason for each. The judge is asked only about a complete final message
(otherwise every check is ``unavailable`` and the judge is not called); the checks of one source
go into one prompt, which the engine asks once per trial. A judge that failed, or answered
anything but one well-formed verdict per check, is a grading error: never a pass.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from attrs import frozen

from sevro_core.api import (
    ENGINE_OBSERVATION_PREFIX,
    FINAL_MESSAGE_OBSERVATION,
    SEMANTIC_JUDGE_CAPABILITY,
    SEMANTIC_ROLE,
    CheckOutcome,
    CheckStatus,
    Completeness,
    ConfigurationError,
    GradingError,
    JsonValue,
    Observation,
    TrialView,
    describe_first_error,
    limits,
    validator,
)
from sevro_judges.semantic_artifact import (
    ArtifactPattern,
    NoArtifact,
    compile_artifact_path,
    read_artifact,
)
from sevro_judges.semantic_prompt import (
    PASS_VERDICT,
    Proposition,
    parse_semantic_reply,
    semantic_prompt,
)
from sevro_judges.semantic_reference import (
    POINTER as REFERENCE_POINTER,
)
from sevro_judges.semantic_reference import (
    Reference,
    ReferenceText,
    compile_reference,
    read_reference,
)

GRADER_ID = "sevro.semantic"
PACKAGE = "sevro_judges"
OBSERVATION_PREFIX = f"{ENGINE_OBSERVATION_PREFIX}semantic."
RESPONSE_SOURCE = "response"
PURPOSE_PREFIX = f"{GRADER_ID}:"
NOT_ASKED = "the judge was not asked"


def observation_id(check_id: str) -> str:
    """``sevro.observation.semantic.<sha256(checkId)>``: any check id makes a valid id."""
    digest = hashlib.sha256(check_id.encode("utf-8", "surrogatepass")).hexdigest()
    return OBSERVATION_PREFIX + digest


@frozen
class SemanticCheck:
    proposition: str
    artifact: ArtifactPattern | None = None
    reference: Reference | None = None

    @property
    def source(self) -> str:
        """What the judge reads, the group key: ``response`` or ``artifact:<artifactPath>``,
        then ``;reference:<reference>`` when the check names one."""
        read = RESPONSE_SOURCE if self.artifact is None else f"artifact:{self.artifact.source}"
        if self.reference is None:
            return read
        return f"{read};reference:{self.reference.source}"

    def evaluator_names(self) -> dict[str, str]:
        """The evaluator directory its reference reads (refused at load when undeclared)."""
        if self.reference is None:
            return {}
        return {self.reference.name: REFERENCE_POINTER}

    def grade(self, check_id: str, view: TrialView) -> CheckOutcome:
        if view.final_message is None or not view.final_message_complete:
            state = "unavailable" if view.final_message is None else "incomplete"
            return _unavailable(check_id, f"final message {state} ({NOT_ASKED})")
        judges = view.judges
        if judges is None or not judges.available(SEMANTIC_ROLE):
            raise GradingError("no semantic judge in this run (give one with --semantic-host)")
        reference = None if self.reference is None else read_reference(view, self.reference)
        path: str | None = None
        text = view.final_message
        if self.artifact is not None:
            found = read_artifact(view.workspace, self.artifact)
            if isinstance(found, NoArtifact):
                return _unavailable(check_id, f"{found.detail} ({NOT_ASKED})", refs=())
            path, text = found.path, found.text
        group = self.group(check_id, view)
        shown = None if reference is None else (reference.source, reference.text)
        prompt = semantic_prompt(group, text, artifact_path=path, reference=shown)
        size = len(prompt.encode("utf-8", "surrogatepass"))
        if size > limits.MAX_JUDGE_PROMPT_BYTES:
            detail = f"the judge prompt would be {size} bytes, more than the judges' bound"
            return _unavailable(check_id, f"{detail} ({NOT_ASKED})")
        reply = judges.ask(SEMANTIC_ROLE, prompt, purpose=PURPOSE_PREFIX + self.source)
        if not reply.usable or reply.text is None:
            raise GradingError(f"the semantic judge gave no usable reply: {_why(reply.error)}")
        verdict, reason = parse_semantic_reply(reply.text, [p.id for p in group])[check_id]
        observation = _observation(check_id, verdict, reason, text, path, reference)
        source_refs = () if path else (FINAL_MESSAGE_OBSERVATION,)
        refs = (observation.id, *source_refs, *reply.artifacts)
        return CheckOutcome(
            id=check_id,
            grader=GRADER_ID,
            status=CheckStatus.PASSED if verdict == PASS_VERDICT else CheckStatus.FAILED,
            detail=reason,
            evidence_refs=refs,
            observations=(observation,),
        )

    def group(self, check_id: str, view: TrialView) -> list[Proposition]:
        """This check and every other ``sevro.semantic`` check of the view with the same source,
        in declaration order: every one of them builds this same prompt."""
        group: list[Proposition] = []
        seen: set[str] = set()
        for declaration in view.checks:
            if declaration.grader != GRADER_ID:
                continue
            if declaration.id in seen:
                raise GradingError(f"check id {declaration.id!r} is declared twice")
            seen.add(declaration.id)
            if declaration.id == check_id:
                group.append(Proposition(check_id, self.proposition))
                continue
            try:
                other = compile_semantic(declaration.configuration)
            except ConfigurationError as exc:
                raise GradingError(f"check {declaration.id!r}: {exc.message}") from None
            if other.source == self.source:
                group.append(Proposition(declaration.id, other.proposition))
        if check_id not in seen:  # graded outside a case (a test, a calibration): alone
            group.append(Proposition(check_id, self.proposition))
        return group


def compile_semantic(configuration: Mapping[str, JsonValue]) -> SemanticCheck:
    """The check a configuration declares, or ``ConfigurationError`` with its pointer."""
    config = dict(configuration)
    found = describe_first_error(validator("semantic.v1", package=PACKAGE).iter_errors(config))
    if found is not None:
        raise ConfigurationError(found[1], found[0])
    proposition = config["proposition"]
    assert isinstance(proposition, str)
    if not proposition.strip():
        raise ConfigurationError("proposition is blank", "/proposition")
    size = len(proposition.encode("utf-8", "surrogatepass"))
    if size > limits.MAX_SEMANTIC_PROPOSITION_BYTES:
        raise ConfigurationError(
            f"proposition is {size} bytes, more than {limits.MAX_SEMANTIC_PROPOSITION_BYTES}",
            "/proposition",
        )
    artifact_path = config.get("artifactPath")
    artifact = None
    if artifact_path is not None:
        assert isinstance(artifact_path, str)
        artifact = compile_artifact_path(artifact_path)
    reference = config.get("reference")
    if reference is not None:
        assert isinstance(reference, str)
        return SemanticCheck(proposition, artifact, compile_reference(reference))
    return SemanticCheck(proposition, artifact)


class SemanticGrader:
    """Stage 40, after output, shell and Git checks; needs the run's semantic judge, so a case
    with a ``sevro.semantic`` check is refused (exit 64) in a run without one."""

    id = GRADER_ID
    version = "1.0.0"
    capabilities: frozenset[str] = frozenset()
    requires: frozenset[str] = frozenset({SEMANTIC_JUDGE_CAPABILITY})
    stage = 40

    def compile(self, configuration: Mapping[str, JsonValue]) -> SemanticCheck:
        return compile_semantic(configuration)


def _unavailable(
    check_id: str, detail: str, refs: tuple[str, ...] = (FINAL_MESSAGE_OBSERVATION,)
) -> CheckOutcome:
    return CheckOutcome(
        id=check_id,
        grader=GRADER_ID,
        status=CheckStatus.UNAVAILABLE,
        detail=detail,
        evidence_refs=refs,
    )


def _observation(
    check_id: str,
    verdict: str,
    reason: str,
    text: str,
    path: str | None,
    reference: ReferenceText | None,
) -> Observation:
    data = text.encode("utf-8", "surrogatepass")
    facts: dict[str, JsonValue] = {
        "verdict": verdict,
        "reason": reason,
        "source": RESPONSE_SOURCE if path is None else "artifact",
        "sha256": hashlib.sha256(data).hexdigest(),
        "byteLength": len(data),
    }
    if path is not None:
        facts["path"] = path
    if reference is not None:
        facts["reference"] = {
            "path": reference.source,
            "sha256": reference.sha256,
            "byteLength": reference.byte_length,
        }
    return Observation(observation_id(check_id), GRADER_ID, Completeness.COMPLETE, facts)


def _why(error: str | None) -> str:
    if error is None:
        return "its reply was incomplete or empty"
    return " ".join(error.split())[: limits.MAX_DIAGNOSTIC_CHARS]
