"""The judge session: each call in its own fresh, empty workspace and private home, passive,
in the judge's role; identical prompts asked once; failures and oversized replies are failed
calls (never a verdict); usage summed per role with unknown kept unknown."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from attrs import frozen

from sevro_core.errors import GradingError
from sevro_core.judges.routes import JudgeRoute, JudgeRoutes
from sevro_core.judges.session import JudgeSession, sum_usage
from sevro_core.limits import MAX_JUDGE_REPLY_BYTES
from sevro_core.models import CancelToken, HostRequest, HostResult, Route, Usage
from sevro_core.testing.sandboxes import trial_isolation

JUDGE_ROUTE = Route("acme.host.judge", "judge-model", "low")


@frozen
class _Recorder:
    """A judge host that records what it was given and answers from a table."""

    answers: dict[str, HostResult]
    seen: list[dict[str, Any]]
    route: Route = JUDGE_ROUTE
    capabilities: frozenset[str] = frozenset()

    def redacted_configuration(self) -> Any:
        return {}

    def check_case(self, case: Any) -> None:
        del case

    def run(self, request: HostRequest) -> HostResult:
        self.seen.append(
            {
                "workspace": request.workspace,
                "private": request.private_root,
                "entries": sorted(p.name for p in request.workspace.iterdir()),
                "role": request.role,
                "condition": request.condition,
                "isolated_workspace": request.isolation.workspace if request.isolation else None,
            }
        )
        answer = self.answers[request.prompts[0]]
        if isinstance(answer, Exception):
            raise answer
        return answer


def _session(tmp_path: Path, answers: dict[str, Any]) -> tuple[JudgeSession, list[Any]]:
    seen: list[dict[str, Any]] = []
    host = _Recorder(answers, seen)
    routes = JudgeRoutes({"semantic": JudgeRoute("semantic", None, host)})  # type: ignore[arg-type]
    isolation = trial_isolation(tmp_path, sandbox="none")
    root = tmp_path / "judges"
    root.mkdir()
    session = JudgeSession(
        routes, isolation.selection, CancelToken(), label=("case", 1), workspace_root=root
    )
    return session, seen


def _ok(text: str, usage: Usage | None = None) -> HostResult:
    return HostResult(text, True, usage=usage or Usage(10, 2, cost_usd=0.5, complete=True))


def test_each_call_runs_in_its_own_fresh_empty_workspace_as_a_passive_judge(
    tmp_path: Path,
) -> None:
    session, seen = _session(tmp_path, {"a": _ok("yes"), "b": _ok("no")})
    assert session.ask("semantic", "a", purpose="p1").text == "yes"
    assert session.ask("semantic", "b", purpose="p2").text == "no"
    assert session.ask("semantic", "a", purpose="p3").text == "yes"  # asked once
    assert len(seen) == 2
    first, second = seen
    assert first["workspace"] != second["workspace"] and first["private"] != second["private"]
    assert first["entries"] == [] and second["entries"] == []
    assert {s["role"] for s in seen} == {"semantic"}
    assert {s["condition"] for s in seen} == {"passive"}
    assert first["isolated_workspace"] == first["workspace"]
    assert not first["workspace"].exists() and not first["private"].exists()  # removed after
    assert [c.purpose for c in session.calls] == ["p1", "p2"]
    usage = session.usage_by_role()["semantic"]
    assert usage == {
        "inputTokens": 20, "outputTokens": 4, "cachedInputTokens": None,
        "reasoningTokens": None, "costUsd": 1.0, "reportedCostUsd": None, "complete": True,
    }  # fmt: skip


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (HostResult(None, False, execution_failed=True, error="boom"), "the judge failed: boom"),
        (HostResult(None, True), "the judge gave no final message"),
        (HostResult("partial", False), "the judge's reply is incomplete"),
        (HostResult("x" * (MAX_JUDGE_REPLY_BYTES + 1), True), "exceeds"),
        (RuntimeError("bug"), "judge host raised RuntimeError: bug"),
    ],
)
def test_a_failed_call_is_an_unusable_reply_with_its_reason(
    tmp_path: Path, answer: Any, error: str
) -> None:
    session, _ = _session(tmp_path, {"q": answer})
    reply = session.ask("semantic", "q", purpose="p")
    assert not reply.usable
    assert reply.error is not None and error in reply.error
    evidence = session.evidence()
    assert evidence is not None and evidence["calls"][0]["error"] == reply.error  # type: ignore[index]


def test_asking_a_role_nobody_configured_is_a_grading_error(tmp_path: Path) -> None:
    session, seen = _session(tmp_path, {})
    assert not session.available("advisory")
    with pytest.raises(GradingError, match="no advisory judge is configured"):
        session.ask("advisory", "q", purpose="p")
    assert seen == [] and session.evidence() is None


def test_unknown_usage_stays_unknown_when_summed() -> None:
    known = Usage(1, 1, 0, 0, 0.1, complete=True)
    total = sum_usage([known, Usage()])
    assert total.input_tokens is None and total.cost_usd is None and total.complete is False
    assert sum_usage([known, known]).input_tokens == 2
