"""Roles (issue 17, item 2): the candidate's commands and the evaluator's (shell checks and
verifiers, role ``checks``) each get a private HOME and TMPDIR. What one role leaves in its
home or temp directory the other can neither see nor change, in a real sandbox.

The candidate records where its HOME and TMPDIR were in ``roles.txt`` in the workspace, so
the checks can look there; the real-CLI variants are in tests/hosts_codex/test_roles_real_cli.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sevro_core.isolation.sandbox import CHECKS_ROLE
from sevro_core.testing import SevroProject, require_sandbox, trial_isolation
from tests.e2e.helpers import trial_evidence

CANDIDATE = "candidate"
MARK = "from-the-candidate"

CANDIDATE_WRITES = (
    f'echo {MARK} > "$HOME/mark.txt" && echo {MARK} > "$TMPDIR/mark.txt" && '
    'printf "%s\\n%s\\n" "$HOME" "$TMPDIR" > roles.txt'
)
"""The candidate's command: a file in its home and its temp directory, and where they are."""

ROLE_CHECKS = {
    "own-home": 'test -s roles.txt && test "$HOME" != "$(sed -n 1p roles.txt)"',
    "own-tmpdir": 'test -s roles.txt && test "$TMPDIR" != "$(sed -n 2p roles.txt)"',
    "home-is-empty-of-it": '! test -e "$HOME/mark.txt" && ! test -e "$TMPDIR/mark.txt"',
    "cannot-read-candidate-home": (
        f'! grep -qs {MARK} "$(sed -n 1p roles.txt)/mark.txt" "$(sed -n 2p roles.txt)/mark.txt"'
    ),
    "cannot-list-candidate-home": '! ls -A "$(sed -n 1p roles.txt)" 2>/dev/null | grep -q .',
    "own-home-writable": 'echo check > "$HOME/check.txt" && grep -qx check "$HOME/check.txt"',
}
"""Shell checks that hold only when the roles are separate (``own-home-writable``: the control
that the check's own home works)."""


def test_each_role_has_its_own_home_and_temp_directory(tmp_path: Path) -> None:
    """In process, on the real filesystem: neither role sees, nor changes, the other's
    files, though each writes its own (the control)."""
    require_sandbox()
    isolation = trial_isolation(tmp_path)

    def run(role: str, script: str) -> tuple[int | None, str]:
        done = isolation.run(["sh", "-c", script], role=role, timeout_s=30, output_limit=65536)
        return done.exit_code, done.output.decode()

    assert run(CANDIDATE, CANDIDATE_WRITES)[0] == 0
    candidate, checks = isolation.role_runtime(CANDIDATE), isolation.role_runtime(CHECKS_ROLE)
    cand_home, cand_tmp = candidate.home, candidate.tmpdir
    check_home, check_tmp = checks.home, checks.tmpdir
    assert {cand_home, cand_tmp}.isdisjoint({check_home, check_tmp})
    for check_id, script in ROLE_CHECKS.items():
        assert run(CHECKS_ROLE, script)[0] == 0, check_id
    # the check tries to plant files where the candidate's home and temp directory are
    plant = f'mkdir -p "{cand_home}" "{cand_tmp}"; echo x > "{cand_home}/planted"; '
    plant += f'echo x > "{cand_tmp}/planted"; echo x > "{cand_home}/mark.txt"; true'
    assert run(CHECKS_ROLE, plant)[0] == 0
    assert sorted(p.name for p in cand_home.iterdir()) == ["mark.txt"]
    assert sorted(p.name for p in cand_tmp.iterdir()) == ["mark.txt"]
    assert (cand_home / "mark.txt").read_text() == f"{MARK}\n"
    assert (check_home / "check.txt").read_text() == "check\n", "the control: checks write"
    # and the other way round: the candidate, running again, sees nothing of the checks'
    code, seen = run(
        CANDIDATE,
        f'cat "{check_home}/check.txt" 2>/dev/null; echo /; ls -A "{check_home}" 2>/dev/null; '
        f'echo /; (echo y > "{check_home}/planted") 2>/dev/null; ls -A "$HOME"; true',
    )
    assert (code, seen) == (0, "/\n/\nmark.txt\n")
    assert sorted(p.name for p in check_home.iterdir()) == ["check.txt"]


def _verifier() -> dict[str, Any]:
    """A ``sevro.verifier`` (role ``checks``) asserting the same, one assertion per check."""
    body = "; ".join(
        f'if {script}; then p=true; else p=false; fi; printf \'%s{{"id":"{check_id}",'
        f'"passed":%s,"detail":"role check"}}\' "$sep" "$p"; sep=,'
        for check_id, script in ROLE_CHECKS.items()
    )
    script = f"sep=; printf '['; {body}; printf ']'"
    return {
        "id": "verifier",
        "grader": "sevro.verifier",
        "configuration": {"run": ["sh", "-c", script], "critical": list(ROLE_CHECKS)},
    }


PASSED = {
    **dict.fromkeys(ROLE_CHECKS, "passed"),
    "verifier": "passed",
    **{f"verifier/{check_id}": "passed" for check_id in ROLE_CHECKS},
}
"""Every check and every assertion of the verifier (each its own outcome), passed."""


def role_checks() -> list[dict[str, Any]]:
    """The shell checks, and the verifier asserting the same."""
    shell = [
        {"id": check_id, "grader": "sevro.shell", "configuration": {"run": script}}
        for check_id, script in ROLE_CHECKS.items()
    ]
    return [*shell, _verifier()]


def test_shell_checks_and_verifiers_do_not_share_the_candidate_s_home(
    sevro_project: SevroProject,
) -> None:
    """Through a run of the scripted host; a candidate that did not write ``roles.txt`` fails
    the checks that read it (the control that they can fail)."""
    require_sandbox()
    case = sevro_project.case(checks=role_checks())
    steps = [{"run": {"command": CANDIDATE_WRITES}}, {"reply": {"text": "done"}}]
    done = sevro_project.run(case, "--host-config", sevro_project.script(default=[steps]))
    statuses = {c["id"]: c["status"] for c in trial_evidence(done.json())["checks"]}
    assert statuses == PASSED, done.stdout
    assert done.exit_code == 0, done.stdout + done.stderr

    silent = sevro_project.script("silent.json", default=[[{"reply": {"text": "done"}}]])
    control = sevro_project.run(case, "--host-config", silent)
    statuses = {c["id"]: c["status"] for c in trial_evidence(control.json())["checks"]}
    assert statuses["own-home"] == statuses["own-tmpdir"] == "failed", statuses
    assert statuses["verifier"] != "passed", statuses
