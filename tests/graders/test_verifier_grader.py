"""sevro.verifier: configuration refusals, and every verdict and grading error of a real program
run inside a real bubblewrap sandbox with an evaluator directory mounted for it."""

from __future__ import annotations

import hashlib
import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from attrs import evolve

from sevro_core.errors import ConfigurationError, GradingError
from sevro_core.fixtures.workspace import PRIVATE_PREFIX, create_workspace
from sevro_core.isolation.sandbox import CheckResources, Isolation, select_sandbox
from sevro_core.models import CancelToken, CheckPart, TrialView
from sevro_core.run.checkparts import parts_problem
from sevro_core.states import CheckStatus
from sevro_core.testing import require_tool
from sevro_graders.verifier_grader import (
    MAX_ASSERTION_DETAIL_CHARS,
    MAX_VERIFIER_ASSERTIONS,
    MAX_VERIFIER_STDOUT_BYTES,
    VerifierGrader,
    observation_id,
)
from sevro_sandbox.bwrap import BubblewrapSandbox
from tests.graders.test_shell_grader import Registry

VERIFY_PY = """import json, os, pathlib
gold = pathlib.Path(os.environ["SEVRO_EVALUATOR_ORACLE"], "gold.txt").read_text()
got = pathlib.Path("answer.txt").read_text() if pathlib.Path("answer.txt").exists() else ""
print(json.dumps([{"id": "answer", "passed": got == gold, "detail": repr(got)}]))
"""


@pytest.fixture
def evaluator(tmp_path: Path) -> Path:
    """An evaluator directory outside the workspace root, as a case would declare it."""
    oracle = tmp_path / "evaluators" / "oracle"
    oracle.mkdir(parents=True)
    (oracle / "gold.txt").write_text("42\n")
    (oracle / "verify.py").write_text(VERIFY_PY)
    return oracle.resolve()


@pytest.fixture
def isolation(tmp_path: Path, evaluator: Path) -> Isolation:
    """The trial's sandbox with the evaluator directory hidden from every role and granted
    read-only to role checks, as the engine binds it."""
    require_tool("bwrap")
    from sevro_core.isolation.protection import EVALUATOR_ROOT, ProtectedRoot

    roots = (ProtectedRoot(EVALUATOR_ROOT, evaluator),)
    selection = select_sandbox(Registry(BubblewrapSandbox()), "bwrap", "none", roots)
    root = tmp_path / "workspaces"
    root.mkdir()
    bound = selection.bind(
        workspace=create_workspace(root),
        private_root=create_workspace(root, prefix=PRIVATE_PREFIX),
        cancel=CancelToken(),
    )
    granted = CheckResources(
        read_only=(evaluator,), environment={"SEVRO_EVALUATOR_ORACLE": str(evaluator)}
    )
    return evolve(bound, check_resources=granted)


def view(isolation: Isolation | None, evaluator: Path | None = None) -> TrialView:
    return TrialView(
        case_id="case",
        trial=1,
        final_message="done",
        final_message_complete=True,
        observations={},
        workspace=isolation.workspace if isolation else Path("/nonexistent"),
        isolation=isolation,
        evaluator={"oracle": evaluator} if evaluator is not None else {},
    )


def printing(stdout: str, exit_code: int = 0) -> list[str]:
    """An argv that prints ``stdout`` exactly and exits ``exit_code``."""
    return ["/bin/sh", "-c", f"printf '%s' {shlex.quote(stdout)}; exit {exit_code}"]


def grade(isolation: Isolation | None, run: Any, check_id: str = "v", **config: Any) -> Any:
    compiled = VerifierGrader().compile({"run": run, **config})
    return compiled.grade(check_id, view(isolation))


def assertions(*items: tuple[str, bool]) -> str:
    return json.dumps([{"id": i, "passed": p} for i, p in items])


# ---- configuration -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("configuration", "pointer", "message"),
    [
        ({}, "", "'run' is required"),
        ({"run": []}, "/run", ""),
        ({"run": "sh verify.sh"}, "/run", ""),
        ({"run": {"script": "verify.py"}}, "/run/script", ""),
        ({"run": {"script": "oracle/../x.py"}}, "/run/script", "without '..'"),
        ({"run": {"script": "oracle/a", "interpreter": []}}, "/run/interpreter", ""),
        ({"run": ["a\0b"]}, "/run", "NUL"),
        ({"run": ["true"], "timeoutMs": 0}, "/timeoutMs", "0"),
        ({"run": ["true"], "timeoutMs": 600001}, "/timeoutMs", "600001"),
        ({"run": ["true"], "critical": ["a", "a"]}, "/critical", ""),
        ({"run": ["true"], "expectExact": "x"}, "/expectExact", "unknown key"),
    ],
)
def test_bad_configuration_is_refused_with_a_pointer(
    configuration: dict[str, Any], pointer: str, message: str
) -> None:
    with pytest.raises(ConfigurationError) as caught:
        VerifierGrader().compile(configuration)
    assert caught.value.pointer == pointer
    assert message in caught.value.message


def test_plugin_facts_and_observation_ids() -> None:
    grader = VerifierGrader()
    assert (grader.id, grader.version, grader.stage) == ("sevro.verifier", "1.0.0", 20)
    assert grader.requires == {"sevro.sandbox"}
    assert observation_id("tests.ok-1") == "sevro.observation.verifier.tests.ok-1"
    assert observation_id("Tests_OK") == (
        "sevro.observation.verifier." + hashlib.sha256(b"Tests_OK").hexdigest()
    )


# ---- verdicts ------------------------------------------------------------------------------


def test_all_assertions_passing_pass_and_are_kept_in_the_observation(
    isolation: Isolation,
) -> None:
    out = grade(isolation, printing(assertions(("a", True), ("b", True))), critical=["a"])
    assert (out.status, out.detail) == (CheckStatus.PASSED, None)
    (obs,) = out.observations
    assert obs.id == "sevro.observation.verifier.v" and out.evidence_refs == (obs.id,)
    assert obs.data["assertions"] == [{"id": "a", "passed": True}, {"id": "b", "passed": True}]
    assert (obs.data["exitCode"], obs.data["passed"], obs.data["critical"]) == (0, None, ["a"])


def test_any_failed_assertion_fails_the_check_naming_it(isolation: Isolation) -> None:
    out = grade(isolation, printing(assertions(("a", True), ("b", False), ("c", False))))
    assert (out.status, out.detail) == (CheckStatus.FAILED, "assertion(s) failed: b, c")
    critical = grade(
        isolation, printing(assertions(("a", True), ("b", False), ("c", False))), critical=["c"]
    )
    assert critical.detail == "critical assertion(s) failed: c"
    many = [(f"x{i}", False) for i in range(7)]
    assert grade(isolation, printing(assertions(*many))).detail == (
        "assertion(s) failed: x0, x1, x2, x3, x4 and 2 more"
    )


def test_each_assertion_is_a_part_of_the_outcome_critical_ones_marked(
    isolation: Isolation,
) -> None:
    """The engine records each part as its own check outcome (tests/core/test_check_parts.py)."""
    printed = json.dumps(
        [
            {"id": "a", "passed": True, "detail": "ok"},
            {"id": "b", "passed": False, "detail": "x" * 500},
            {"id": "c", "passed": True},
        ]
    )
    out = grade(isolation, printing(printed), critical=["a", "c"])
    assert out.status is CheckStatus.FAILED
    assert out.parts == (
        CheckPart("a", True, "critical: ok"),
        CheckPart("b", False, "x" * MAX_ASSERTION_DETAIL_CHARS),
        CheckPart("c", True, "critical"),
    )
    assert parts_problem(out) is None, "the conjunction: the engine keeps these parts"
    passing = grade(isolation, printing(assertions(("a", True))))
    assert passing.status is CheckStatus.PASSED and passing.parts == (CheckPart("a", True),)


def test_skivolve_object_form_and_evidence(isolation: Isolation) -> None:
    document = {
        "passed": True,
        "assertions": [{"id": "a", "passed": True, "evidence": "seen"}],
        "metrics": {"n": 1},
    }
    out = grade(isolation, printing(json.dumps(document)))
    assert out.status is CheckStatus.PASSED
    assert out.observations[0].data["assertions"] == [{"id": "a", "passed": True, "detail": "seen"}]
    said_no = {"passed": False, "assertions": [{"id": "a", "passed": True}]}
    failed = grade(isolation, printing(json.dumps(said_no)))
    assert (failed.status, failed.detail) == (
        CheckStatus.FAILED,
        "the verifier reported passed: false",
    )


def test_a_non_zero_exit_beside_a_failed_assertion_fails(isolation: Isolation) -> None:
    out = grade(isolation, printing(assertions(("a", False)), exit_code=1))
    assert out.status is CheckStatus.FAILED and out.observations[0].data["exitCode"] == 1


# ---- grading errors, never passes ----------------------------------------------------------


@pytest.mark.parametrize(
    ("stdout", "exit_code", "critical", "message"),
    [
        ("", 0, [], "printed no assertions"),
        ("  \n", 3, [], "exited 3 without assertions"),
        ("[]", 0, [], "printed no assertions"),
        ("not json", 0, [], "not JSON"),
        ('[{"id": "a", "passed": true}', 0, [], "not JSON"),
        ('{"id": "a", "passed": true}', 0, [], "needs 'assertions'"),
        ('{"assertions": [], "extra": 1}', 0, [], "unknown: extra"),
        ('{"assertions": [{"id": "a", "passed": true}], "passed": "yes"}', 0, [], "not a boolean"),
        ('"passed"', 0, [], "neither a list"),
        ("[1]", 0, [], "assertion 0 is not an object"),
        ('[{"passed": true}]', 0, [], "assertion 0 has no id"),
        ('[{"id": "", "passed": true}]', 0, [], "has no id"),
        ('[{"id": "a", "passed": "true"}]', 0, [], "no boolean 'passed'"),
        ('[{"id": "a"}]', 0, [], "no boolean 'passed'"),
        ('[{"id": "a", "passed": true, "score": 1}]', 0, [], "unknown key(s): score"),
        ('[{"id": "a", "passed": true, "detail": 3}]', 0, [], "detail that is not text"),
        (assertions(("a", True), ("a", True)), 0, [], "duplicate assertion id 'a'"),
        (assertions(("a", True)), 0, ["a", "b"], "critical assertion(s) missing: b"),
        (assertions(("a", True)), 2, [], "exited 2 but no assertion failed"),
        (
            json.dumps({"passed": True, "assertions": [{"id": "a", "passed": False}]}),
            0,
            [],
            "passed: true beside failed assertion(s) a",
        ),
        ('[{"id": "a", "passed": true, "id": "b"}]', 0, [], "not JSON"),
        ('[{"id": "a", "passed": NaN}]', 0, [], "not JSON"),
    ],
)
def test_what_proves_no_verdict_is_a_grading_error(
    isolation: Isolation, stdout: str, exit_code: int, critical: list[str], message: str
) -> None:
    with pytest.raises(GradingError) as caught:
        grade(isolation, printing(stdout, exit_code), critical=critical)
    assert message in str(caught.value)


def test_too_many_assertions_and_too_much_stdout_are_grading_errors(isolation: Isolation) -> None:
    count = MAX_VERIFIER_ASSERTIONS + 1
    many = (
        "import json; "
        f"print(json.dumps([{{'id': str(i), 'passed': True}} for i in range({count})]))"
    )
    with pytest.raises(GradingError, match=f"more than {MAX_VERIFIER_ASSERTIONS} assertions"):
        grade(isolation, ["python3", "-c", many])
    enough = many.replace(str(count), str(MAX_VERIFIER_ASSERTIONS))
    assert grade(isolation, ["python3", "-c", enough]).status is CheckStatus.PASSED
    with pytest.raises(GradingError, match=f"exceeds {MAX_VERIFIER_STDOUT_BYTES} bytes"):
        grade(isolation, ["yes"])


def test_a_drifted_evaluator_refuses_every_check_command(isolation: Isolation) -> None:
    drifted = evolve(
        isolation,
        check_resources=evolve(isolation.check_resources, problem="evaluator directory changed"),
    )
    with pytest.raises(GradingError, match="isolation error: evaluator directory changed"):
        grade(drifted, printing(assertions(("a", True))))
    assert grade(isolation, printing(assertions(("a", True)))).status is CheckStatus.PASSED


def test_a_timeout_and_a_missing_sandbox_are_grading_errors(isolation: Isolation) -> None:
    with pytest.raises(GradingError, match="timed out after 300 ms"):
        grade(isolation, ["sleep", "30"], timeoutMs=300)
    with pytest.raises(GradingError, match="only inside the trial's sandbox"):
        grade(None, ["true"])


# ---- evaluator scripts ---------------------------------------------------------------------


def test_a_script_in_the_evaluator_directory_reads_its_gold_file(
    isolation: Isolation, evaluator: Path
) -> None:
    require_tool("python3")
    check = VerifierGrader().compile(
        {"run": {"script": "oracle/verify.py", "interpreter": ["python3"]}, "critical": ["answer"]}
    )
    assert check.grade("v", view(isolation, evaluator)).status is CheckStatus.FAILED
    (isolation.workspace / "answer.txt").write_text("42\n")
    assert check.grade("v", view(isolation, evaluator)).status is CheckStatus.PASSED
    undeclared = VerifierGrader().compile({"run": {"script": "other/verify.py"}})
    with pytest.raises(GradingError, match="declares no evaluator directory 'other'"):
        undeclared.grade("v", view(isolation, evaluator))


def test_only_checks_see_the_evaluator_directory_and_only_read_only(
    isolation: Isolation, evaluator: Path
) -> None:
    """The candidate's commands find the directory hidden and the variable unset; checks read
    it, cannot write it, and their variable wins over one a grader passes."""
    where = shlex.quote(str(evaluator))
    probe = f"cat {where}/gold.txt 2>/dev/null; ls {where} 2>/dev/null"
    candidate = isolation.run(
        ["/bin/sh", "-c", f"{probe}; echo var=${{SEVRO_EVALUATOR_ORACLE-unset}}"],
        role="candidate",
        timeout_s=20,
        output_limit=65536,
    )
    assert candidate.output == b"var=unset\n"
    checks = isolation.run(
        [
            "/bin/sh",
            "-c",
            f'{probe}; echo "var=$SEVRO_EVALUATOR_ORACLE"; '
            'touch "$SEVRO_EVALUATOR_ORACLE/x" 2>/dev/null || echo read-only',
        ],
        role="checks",
        timeout_s=20,
        output_limit=65536,
        environment={"SEVRO_EVALUATOR_ORACLE": "/forged"},
    )
    assert checks.output.decode().splitlines() == [
        "42",
        "gold.txt",
        "verify.py",
        f"var={evaluator}",
        "read-only",
    ]
    assert not (evaluator / "x").exists()
