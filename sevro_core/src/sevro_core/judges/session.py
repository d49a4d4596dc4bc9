"""A judge session: asking a judge host one prompt at a time, each in its own empty workspace.

Every call gets a fresh empty workspace and private root (its own home), the run's sandbox,
condition ``passive`` and the judge's role, so a judge never sees the candidate's workspace,
files or credentials view and its CLI is started without tools. Identical prompts of one role are
asked once per session (a grader batching its checks reads one reply per check). Every call is
recorded, with the prompt and reply kept as artifacts and the usage summed per role, so judge
cost is accounted apart from the candidate's and every verdict can be audited.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

from attrs import evolve, frozen

from sevro_core.errors import GradingError
from sevro_core.fixtures.workspace import PRIVATE_PREFIX, create_workspace, remove_tree
from sevro_core.formats.jsonio import JsonValue
from sevro_core.isolation.sandbox import SandboxSelection
from sevro_core.judges.routes import JudgeRoute, JudgeRoutes
from sevro_core.limits import (
    MAX_DIAGNOSTIC_CHARS,
    MAX_JUDGE_CALLS_PER_TRIAL,
    MAX_JUDGE_PROMPT_BYTES,
    MAX_JUDGE_REPLY_BYTES,
)
from sevro_core.models import (
    UNKNOWN_USAGE,
    Artifact,
    CancelToken,
    HostRequest,
    HostResult,
    JudgeReply,
    Usage,
)
from sevro_core.store.spendgate import Reservation, SpendGate, SpendRefused
from sevro_core.vocabulary import JUDGE_PREFIX

PASSIVE = "passive"


@frozen
class JudgeCall:
    """One question put to a judge, and its answer."""

    number: int
    role: str
    purpose: str
    prompt: str
    reply: JudgeReply
    duration_ms: float

    @property
    def artifact_prefix(self) -> str:
        return f"{JUDGE_PREFIX}{self.role}.{self.number}"

    def artifacts(self) -> tuple[Artifact, ...]:
        """The prompt and the reply (when there is one), as the trial keeps them."""
        kept = [Artifact(f"{self.artifact_prefix}.prompt", _utf8(self.prompt))]
        if self.reply.text is not None:
            kept.append(Artifact(f"{self.artifact_prefix}.reply", _utf8(self.reply.text)))
        return tuple(kept)

    def to_json(self) -> dict[str, JsonValue]:
        text = self.reply.text
        return {
            "number": self.number,
            "role": self.role,
            "purpose": self.purpose,
            "route": self.reply.route.to_json(),
            "promptSha256": _sha256(self.prompt),
            "replySha256": None if text is None else _sha256(text),
            "complete": self.reply.complete,
            "error": self.reply.error,
            "usage": self.reply.usage.to_json(),
            "durationMs": self.duration_ms,
            "artifacts": [a.id for a in self.artifacts()],
        }


class JudgeSession:
    """The :class:`~sevro_core.models.TrialJudges` of one trial (or one calibration run)."""

    def __init__(
        self,
        routes: JudgeRoutes,
        sandbox: SandboxSelection,
        cancel: CancelToken,
        *,
        label: tuple[str, int],
        workspace_root: Path | None = None,
        spend: SpendGate | None = None,
    ) -> None:
        self._routes = routes
        self._spend = spend
        self._sandbox = sandbox
        self._cancel = cancel
        self._label = label
        self._root = workspace_root
        self._memo: dict[tuple[str, str], JudgeReply] = {}
        self.calls: list[JudgeCall] = []

    def available(self, role: str) -> bool:
        return self._routes.get(role) is not None

    def ask(self, role: str, prompt: str, *, purpose: str) -> JudgeReply:
        route = self._routes.get(role)
        if route is None:
            raise GradingError(f"no {role} judge is configured (pass --{role}-host)")
        key = (role, _sha256(prompt))
        if key in self._memo:
            return self._memo[key]
        if len(_utf8(prompt)) > MAX_JUDGE_PROMPT_BYTES:
            raise GradingError(f"the {role} judge prompt exceeds {MAX_JUDGE_PROMPT_BYTES} bytes")
        if len(self.calls) >= MAX_JUDGE_CALLS_PER_TRIAL:
            raise GradingError(f"more than {MAX_JUDGE_CALLS_PER_TRIAL} judge calls in one trial")
        reservation = self._reserve(role)
        started = time.monotonic()
        reply = self._run(route, prompt, reservation)
        if self._spend is not None and reservation is not None:
            self._spend.settle(reservation, reply.usage)
        duration = round((time.monotonic() - started) * 1000, 3)
        call = JudgeCall(len(self.calls) + 1, role, purpose, prompt, reply, duration)
        reply = evolve(reply, artifacts=tuple(a.id for a in call.artifacts()))
        self.calls.append(evolve(call, reply=reply))
        self._memo[key] = reply
        return reply

    def _reserve(self, role: str) -> Reservation | None:
        """The call's reservation (None without a ceiling); :class:`SpendRefused` when the
        run's ceiling stops new calls."""
        if self._spend is None:
            return None
        reservation = self._spend.reserve(role, f"{self._label[0]}#{self._label[1]}:{role}")
        if reservation is None:
            stop = self._spend.stopped
            raise SpendRefused(stop.reason if stop is not None else "the spend ceiling is reached")
        return reservation

    def _run(self, route: JudgeRoute, prompt: str, reservation: Reservation | None) -> JudgeReply:
        workspace = create_workspace(self._root)
        private = create_workspace(self._root, prefix=PRIVATE_PREFIX)
        try:
            request = HostRequest(
                case_id=self._label[0],
                trial=self._label[1],
                prompts=(prompt,),
                workspace=workspace,
                condition=PASSIVE,
                cancel=self._cancel,
                private_root=private,
                isolation=self._sandbox.bind(
                    workspace=workspace, private_root=private, cancel=self._cancel
                ),
                role=route.role,
                max_cost_usd=reservation.usd if reservation is not None else None,
            )
            try:
                result = route.host.run(request)
            except Exception as exc:  # a judge host's bug is a failed call, never a verdict
                return JudgeReply(
                    None, False, route.route, error=f"judge host raised {type(exc).__name__}: {exc}"
                )
            return _reply(route, result, self._cancel)
        finally:
            remove_tree(workspace)
            remove_tree(private)

    def usage_by_role(self) -> dict[str, JsonValue]:
        """Judge usage summed per role; unknown stays unknown (None), never 0."""
        out: dict[str, JsonValue] = {}
        for role in dict.fromkeys(c.role for c in self.calls):
            out[role] = sum_usage([c.reply.usage for c in self.calls if c.role == role]).to_json()
        return out

    def evidence(self) -> dict[str, JsonValue] | None:
        """The trial evidence's ``judges`` block (None when no judge was asked)."""
        if not self.calls:
            return None
        return {"calls": [c.to_json() for c in self.calls], "usage": self.usage_by_role()}

    def artifacts(self) -> tuple[Artifact, ...]:
        return tuple(a for call in self.calls for a in call.artifacts())


def _reply(route: JudgeRoute, result: HostResult, cancel: CancelToken) -> JudgeReply:
    error: str | None = None
    text = result.final_message
    if result.cancelled or cancel.cancelled:
        error = "the judge was cancelled"
    elif result.execution_failed:
        error = f"the judge failed: {result.error or 'host failed'}"
    elif text is None:
        error = "the judge gave no final message"
    elif len(_utf8(text)) > MAX_JUDGE_REPLY_BYTES:
        error, text = f"the judge's reply exceeds {MAX_JUDGE_REPLY_BYTES} bytes", None
    elif not result.complete:
        error = "the judge's reply is incomplete"
    if error is not None:
        error = error[:MAX_DIAGNOSTIC_CHARS]
    return JudgeReply(text, result.complete, route.route, error=error, usage=result.usage)


def sum_usage(usages: list[Usage]) -> Usage:
    """Add usages field by field; a field unknown in any of them is unknown in the sum."""
    if not usages:
        return UNKNOWN_USAGE

    def total(values: list[int | None]) -> int | None:
        return None if any(v is None for v in values) else sum(v for v in values if v is not None)

    costs = [u.cost_usd for u in usages]
    reported = [u.reported_cost_usd for u in usages]
    return Usage(
        input_tokens=total([u.input_tokens for u in usages]),
        output_tokens=total([u.output_tokens for u in usages]),
        cached_input_tokens=total([u.cached_input_tokens for u in usages]),
        reasoning_tokens=total([u.reasoning_tokens for u in usages]),
        cost_usd=None if any(c is None for c in costs) else sum(c for c in costs if c is not None),
        complete=all(u.complete for u in usages),
        reported_cost_usd=(
            None if any(c is None for c in reported) else sum(c for c in reported if c is not None)
        ),
    )


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _sha256(text: str) -> str:
    return hashlib.sha256(_utf8(text)).hexdigest()
