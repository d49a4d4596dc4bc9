"""``sevro.path``, ``sevro.file-text`` and ``sevro.json-file`` through ``sevro run`` on the
scripted host: what a hostile workspace leaves (a symlink out, a huge file) never passes, and a
bad configuration is refused at load, nothing run."""

from __future__ import annotations

from typing import Any

import pytest

from sevro_core import limits
from sevro_core.testing import SevroProject, require_sandbox
from tests.e2e.helpers import trial_evidence


def check(check_id: str, grader: str, **configuration: Any) -> dict[str, Any]:
    return {"id": check_id, "grader": f"sevro.{grader}", "configuration": configuration}


def statuses(evidence: dict[str, Any]) -> dict[str, tuple[str, str | None]]:
    return {c["id"]: (c["status"], c.get("detail")) for c in evidence["checks"]}


def test_a_hostile_workspace_never_passes(sevro_project: SevroProject) -> None:
    require_sandbox()
    big = limits.MAX_CHECKED_FILE_BYTES + 1
    plant = (
        "ln -s /etc/passwd passwd.txt && ln -s /etc etc && mkdir dir.json"
        f" && head -c {big} /dev/zero | tr '\\0' a > big.txt && mkfifo pipe.txt"
    )
    case = sevro_project.case(
        checks=[
            check("link-text", "file-text", path="passwd.txt", contains="root"),
            check("link-no-text", "file-text", path="passwd.txt", notContains="nothing"),
            check("through-link", "file-text", path="etc/passwd", contains="root"),
            check("through-link-absent", "path", path="etc/passwd", expect="absent"),
            check("link-exists", "path", path="passwd.txt", expect="exists", kind="symlink"),
            check("big", "file-text", path="big.txt", notContains="b"),
            check("fifo", "file-text", path="pipe.txt", notContains="b"),
            check("dir-json", "json-file", path="dir.json", expect="available"),
            check("big-json", "json-file", path="big.txt", expect="malformed"),
            check("big-not-missing", "json-file", path="big.txt", expect="missing"),
            check("glob-behind-link", "path", glob="**/passwd", expect="absent"),
            check("glob-match", "path", glob="*.txt", expect="exists", kind="file"),
        ]
    )
    host = sevro_project.script(default=[[{"run": {"command": plant}}, {"reply": {"text": "ok"}}]])
    done = sevro_project.run(case, "--host-config", host)
    found = statuses(trial_evidence(done.json()))
    assert found == {
        "link-text": ("failed", "'passwd.txt' is a symlink (not followed)"),
        "link-no-text": ("failed", "'passwd.txt' is a symlink (not followed)"),
        "through-link": ("unavailable", "'etc' is a symlink (not followed)"),
        "through-link-absent": ("unavailable", "'etc' is a symlink (not followed)"),
        "link-exists": ("passed", None),
        "big": ("unavailable", f"'big.txt' is larger than {big - 1} bytes (not read)"),
        "fifo": ("failed", "'pipe.txt' is not a regular file"),
        "dir-json": ("failed", "'dir.json' is a directory, not a file"),
        "big-json": ("unavailable", f"'big.txt' is larger than {big - 1} bytes (not read)"),
        "big-not-missing": ("failed", "'big.txt' exists (file)"),
        "glob-behind-link": ("unavailable", "no match seen, but 'etc' is a symlink (not followed)"),
        "glob-match": ("passed", None),
    }, found
    (summary,) = done.json()["cases"]
    # unavailable evidence makes the grading unavailable (exit 4), never a pass
    assert (done.exit_code, summary["grading"], summary["task"]) == (4, "unavailable", "failed")


@pytest.mark.parametrize(
    ("bad", "pointer"),
    [
        (check("c", "path", path="../outside", expect="exists"), "/path"),
        (check("c", "file-text", path="a.txt", contains=""), "/contains"),
        (check("c", "json-file", path="a.json", expect="present", pointer="a"), "/pointer"),
    ],
)
def test_bad_configuration_is_refused_at_load_nothing_run(
    sevro_project: SevroProject, bad: dict[str, Any], pointer: str
) -> None:
    case = sevro_project.case(checks=[bad])
    host = sevro_project.script(default=[[{"reply": {"text": "ok"}}]])
    done = sevro_project.run(case, "--host-config", host)
    assert done.exit_code == 64, done.stdout + done.stderr
    assert done.stderr.startswith("sevro: error: ") and len(done.stderr.splitlines()) == 1
    assert f"case.json#/checks/0/configuration{pointer}: " in done.stderr, done.stderr
    assert not sevro_project.results.exists()
