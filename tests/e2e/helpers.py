"""Assertions shared by the end-to-end tests."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

from sevro_core.formats.schemas import validator
from sevro_core.run.results import located_result
from sevro_core.testing import SevroProcess, SevroProject, start_sevro
from sevro_core.testing.background import SEVRO


def regex_check(check_id: str, pattern: str, **extra: Any) -> dict[str, Any]:
    return {"id": check_id, "grader": "sevro.regex", "configuration": {"pattern": pattern, **extra}}


def load(path: str | Path) -> Any:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def assert_valid_evidence(result: dict[str, Any]) -> dict[str, Any]:
    """Every retained file validates, is private, and the embedded result equals stdout's."""
    assert not list(validator("cli-result.v1").iter_errors(result))
    run_json = Path(result["evidencePath"])
    run = load(run_json)
    assert not list(validator("run-evidence.v1").iter_errors(run))
    run_dir = run_json.parent
    assert located_result(run["result"], run_dir) == result, "retained paths are run-relative"
    for path in [run_dir, *run_dir.rglob("*")]:
        mode = stat.S_IMODE(os.lstat(path).st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), (path, oct(mode))
    for ref in run["trials"]:
        if ref["path"] is None:
            continue
        data = (run_dir / ref["path"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == ref["sha256"]
        trial = json.loads(data)
        assert not list(validator("trial-evidence.v1").iter_errors(trial))
        assert not Path(trial["evidence"]["workspace"]).exists(), "workspace was not removed"
    return run


def trial_evidence(result: dict[str, Any], case: int = 0, trial: int = 0) -> dict[str, Any]:
    path = result["cases"][case]["trials"][trial]["artifactPath"]
    return load(path)["evidence"]


def spawn_unsandboxed_run(
    project: SevroProject,
    case: Path,
    host: Path,
    *extra: str,
    launcher: tuple[str, ...] = SEVRO,
) -> SevroProcess:
    """``sevro run CASE --host-config HOST --sandbox none --json`` in the background, for tests
    that signal or watch a run while it is going; ``launcher`` is how sevro is started."""
    args = ["run", case, "--host-config", host, "--sandbox", "none", "--json"]
    args += ["--results-root", project.results, *extra]
    return start_sevro(args, cwd=project.root, launcher=launcher)


NOTES_SKILL_PATH = ".agents/skills/notes/SKILL.md"
NOTES_HELPED = (
    f"if test -f {NOTES_SKILL_PATH}; then printf '## Highlights\\n' > NOTES.md; "
    "else echo notes > NOTES.md; fi"
)
"""The scripted agent writes the right notes only when the skill is mounted."""


def notes_experiment(
    project: SevroProject, command: str | None = NOTES_HELPED, *, read_skill: bool = True
) -> SevroProject:
    """The notes skill, case ``notes`` (its ``highlights`` check wants a Highlights heading) and,
    unless ``command`` is None, a scripted agent running ``command`` (reading the skill first
    with ``read_skill``): the quick form ``cases --skill skills/notes --host-config host.json``
    then compares an arm with the skill against one without."""
    project.skill("skills/notes", "notes", "Release notes with a Highlights heading.")
    project.case(
        "cases/notes.json",
        id="notes",
        checks=[
            {
                "id": "highlights",
                "grader": "sevro.shell",
                "configuration": {"run": "grep -q '^## Highlights' NOTES.md"},
            }
        ],
    )
    if command is not None:
        read = [{"read": {"path": NOTES_SKILL_PATH}}] if read_skill else []
        steps = [*read, {"run": {"command": command}}, {"reply": {"text": "done"}}]
        project.script(default=[steps])
    return project
