"""``runtime.artifactDirectories`` and ``SEVRO_CANDIDATE_TRANSCRIPTS``: the candidate's side of a
trial handed read-only to checks, and every way it can be unusable (docs/evaluator-resources.md).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from sevro_core.isolation.candidateartifacts import ArtifactDirectory, checked_artifact_directory
from sevro_core.models import Artifact, HostResult
from sevro_core.run import checkinputs
from sevro_core.run.checkinputs import candidate_artifacts, candidate_transcripts
from sevro_core.testing import SevroProject, require_sandbox
from tests.e2e.helpers import assert_valid_evidence, trial_evidence
from tests.runtime.test_runtime_loading import area, doc, load, refused  # noqa: F401

REVIEWS = {"name": "reviews", "path": ".darrow/reviews"}


# ---- loading ---------------------------------------------------------------------------------


def test_declared_directories_are_loaded_and_enter_the_policy(area: Path) -> None:  # noqa: F811
    policy = load(area, doc(runtime={"artifactDirectories": [REVIEWS, {"name": "b", "path": "x"}]}))
    assert [(a.name, a.path, a.variable) for a in policy.artifacts] == [
        ("reviews", ".darrow/reviews", "SEVRO_CANDIDATE_ARTIFACT_REVIEWS"),
        ("b", "x", "SEVRO_CANDIDATE_ARTIFACT_B"),
    ]
    document = policy.configuration()
    assert document["artifactDirectories"] == [REVIEWS, {"name": "b", "path": "x"}]
    plain = load(area, doc()).configuration()
    assert "artifactDirectories" not in plain, "none declared: the document is as before"
    other = load(area, doc(runtime={"artifactDirectories": [{"name": "reviews", "path": "y"}]}))
    assert other.configuration()["digest"] != document["digest"] != plain["digest"]


@pytest.mark.parametrize(
    ("declared", "fragment", "pointer"),
    [
        ([{"name": "Reviews", "path": "a"}], "", "/runtime/artifactDirectories/0/name"),
        ([{"name": "1a", "path": "a"}], "", "/runtime/artifactDirectories/0/name"),
        ([{"name": "a" * 65, "path": "a"}], "", "/runtime/artifactDirectories/0/name"),
        ([{"name": "a"}], "", "/runtime/artifactDirectories/0"),
        ([{"name": "a", "path": ""}], "", "/runtime/artifactDirectories/0/path"),
        ([{"name": "a", "path": "x" * 4097}], "", "/runtime/artifactDirectories/0/path"),
        ([{"name": f"a{i}", "path": "a"} for i in range(17)], "", "/runtime/artifactDirectories"),
        ([REVIEWS, REVIEWS], "declared twice", "/runtime/artifactDirectories/1/name"),
        ([{"name": "a", "path": "/abs"}], "relative to the candidate's home", None),
        ([{"name": "a", "path": "."}], "grants the whole home", None),
        ([{"name": "a", "path": "a/../b"}], "'..' component", None),
        ([{"name": "a", "path": "a//b"}], "empty", None),
        ([{"name": "a", "path": "a/./b"}], "component", None),
        ([{"name": "a", "path": "a/"}], "empty", None),
        ([{"name": "a", "path": "a\\b"}], "backslash", None),
        ([{"name": "a", "path": "a\nb"}], "control character", None),
        ([{"name": "a", "path": ".acme-agent/x"}], "credential location", None),
        ([{"name": "a", "path": ".acme-agent"}], "credential location", None),
    ],
)
def test_bad_declarations_are_refused_with_file_and_pointer(
    area: Path,  # noqa: F811
    declared: list[dict[str, Any]],
    fragment: str,
    pointer: str | None,
) -> None:
    found = refused(area, doc(runtime={"artifactDirectories": declared}), fragment, pointer)
    assert found.exit_code == 64
    if pointer is None:
        assert found.pointer is not None and found.pointer.endswith("/path")


def test_artifact_directories_sit_beside_seeds_and_caches(area: Path) -> None:  # noqa: F811
    policy = load(
        area, doc(runtime={"artifactDirectories": [REVIEWS], "sharedCacheDirectories": []})
    )
    assert [a.name for a in policy.artifacts] == ["reviews"] and policy.caches == ()


# ---- checked after the candidate ran ---------------------------------------------------------


def _home(tmp_path: Path) -> tuple[Path, Path]:
    home = tmp_path / "home"
    reviews = home / ".darrow" / "reviews"
    (reviews / "deep").mkdir(parents=True)
    (reviews / "deep" / "r.json").write_text('{"verdict": "passed"}\n')
    return home, reviews


DECLARED = ArtifactDirectory("reviews", ".darrow/reviews", "/runtime/artifactDirectories/0")


def test_a_clean_directory_is_granted_read_only_by_its_variable(tmp_path: Path) -> None:
    home, reviews = _home(tmp_path)
    assert checked_artifact_directory(home, DECLARED) == reviews
    granted = candidate_artifacts(home, [DECLARED])
    assert granted.problem is None
    assert granted.read_only == (reviews,)
    assert dict(granted.environment) == {"SEVRO_CANDIDATE_ARTIFACT_REVIEWS": str(reviews)}
    assert candidate_artifacts(None, []).problem is None, "nothing declared: nothing needed"


def _problem(home: Path) -> str:
    granted = candidate_artifacts(home, [DECLARED])
    assert granted.problem is not None and not granted.environment
    return granted.problem


def test_every_unusable_directory_is_a_problem_never_a_grant(tmp_path: Path) -> None:
    home, reviews = _home(tmp_path)
    assert "host names no candidate home" in (candidate_artifacts(None, [DECLARED]).problem or "")
    (reviews / "link").symlink_to("/etc/passwd")
    assert "holds a symbolic link 'link'" in _problem(home)
    (reviews / "link").unlink()
    os.link(reviews / "deep" / "r.json", tmp_path / "outside")
    assert "holds a hard link 'deep/r.json'" in _problem(home)
    (tmp_path / "outside").unlink()
    os.mkfifo(reviews / "pipe")
    assert "holds a special file 'pipe'" in _problem(home)
    (reviews / "pipe").unlink()
    assert candidate_artifacts(home, [DECLARED]).problem is None, "the control: clean again"
    real = tmp_path / "elsewhere"
    (home / ".darrow").rename(real)
    (home / ".darrow").symlink_to(real)
    assert "symbolic link on its way" in _problem(home)
    (home / ".darrow").unlink()
    assert "does not exist" in _problem(home)
    (home / ".darrow").write_text("a file")
    assert "is not a directory" in _problem(home)


def test_a_directory_beyond_the_bound_is_a_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sevro_core.isolation import candidateartifacts

    home, reviews = _home(tmp_path)
    monkeypatch.setattr(candidateartifacts, "MAX_ARTIFACT_DIRECTORY_ENTRIES", 3)
    assert candidate_artifacts(home, [DECLARED]).problem is None, "root, deep, r.json: 3"
    (reviews / "more").write_text("x")
    assert "more than 3 entries" in _problem(home)


# ---- transcripts -----------------------------------------------------------------------------


def _index(directory: Path) -> dict[str, Any]:
    return json.loads((directory / "index.json").read_text())  # type: ignore[no-any-return]


def test_transcripts_are_copied_with_an_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = Artifact("sevro.acme.events", b'{"type": "turn.completed"}\n')
    odd = Artifact("../escape", b"x")
    done = HostResult("ok", complete=True, artifacts=(events, odd))
    granted = candidate_transcripts(tmp_path, "sevro.host.acme", done)
    directory = tmp_path / "candidate-transcripts"
    assert dict(granted.environment) == {"SEVRO_CANDIDATE_TRANSCRIPTS": str(directory)}
    assert granted.read_only == (directory,)
    index = _index(directory)
    assert (index["format"], index["host"], index["capture"]) == (
        "sevro.candidate-transcripts.v1",
        "acme",
        "complete",
    )
    first, second = index["files"]
    assert first["path"] == "acme/sevro.acme.events" and first["bytes"] == len(events.content)
    assert (directory / first["path"]).read_bytes() == events.content
    assert second["path"] == "acme/artifact-2", "an unsafe id never names a file"
    assert not (tmp_path / "escape").exists()

    failed = tmp_path / "failed"
    failed.mkdir()
    monkeypatch.setattr(checkinputs, "MAX_CHECK_INPUT_BYTES", 4)
    cut = HostResult(None, complete=False, execution_failed=True, artifacts=(events, odd))
    index = _index(candidate_transcripts(failed, "sevro.host.acme", cut).read_only[0])
    assert index["capture"] == "partial"
    assert [(f["path"], f["completeness"]) for f in index["files"]] == [
        (None, "omitted"),
        ("acme/artifact-2", "partial"),
    ]
    none = tmp_path / "none"
    none.mkdir()
    index = _index(
        candidate_transcripts(none, "sevro.host.acme", HostResult("ok", True)).read_only[0]
    )
    assert (index["capture"], index["files"]) == ("none", [])


# ---- through the real CLI and sandbox --------------------------------------------------------


def shell(check_id: str, run: str) -> dict[str, Any]:
    return {"id": check_id, "grader": "sevro.shell", "configuration": {"run": run}}


CHECKS = [
    shell("reads-artifact", 'grep -q passed "$SEVRO_CANDIDATE_ARTIFACT_REVIEWS/r.json"'),
    shell("read-only", '! touch "$SEVRO_CANDIDATE_ARTIFACT_REVIEWS/new" 2>/dev/null'),
    shell(
        "own-home", 'test "$HOME" != "$(dirname "$(dirname "$SEVRO_CANDIDATE_ARTIFACT_REVIEWS")")"'
    ),
    shell(
        "transcripts",
        'grep -q \'"capture": "none"\' "$SEVRO_CANDIDATE_TRANSCRIPTS/index.json"'
        ' && test -d "$SEVRO_CANDIDATE_TRANSCRIPTS/scripted"',
    ),
]
WRITE = (
    'mkdir -p "$HOME/.darrow/reviews" && echo \'{"v":"passed"}\' > "$HOME/.darrow/reviews/r.json"'
)


def _run(project: SevroProject, tmp_path: Path, command: str) -> dict[str, Any]:
    require_sandbox()
    config = tmp_path / "runtime.json"
    config.write_text(json.dumps(doc(runtime={"artifactDirectories": [REVIEWS]})))
    case = project.case(checks=CHECKS)
    host = project.script(default=[[{"run": {"command": command}}, {"reply": {"text": "ok"}}]])
    done = project.run(case, "--host-config", host, "--runtime-config-file", config)
    assert_valid_evidence(done.json())
    return {"exit": done.exit_code, "evidence": trial_evidence(done.json()), "out": done.stderr}


def test_a_scripted_candidate_s_artifacts_and_transcripts_reach_checks(
    sevro_project: SevroProject, tmp_path: Path
) -> None:
    found = _run(sevro_project, tmp_path, WRITE)
    statuses = {c["id"]: (c["status"], c.get("detail")) for c in found["evidence"]["checks"]}
    assert statuses == {c["id"]: ("passed", None) for c in CHECKS}, found["out"]
    assert found["exit"] == 0


@pytest.mark.parametrize(
    ("command", "fragment"),
    [
        ("true", "does not exist"),
        (WRITE + ' && ln -s /etc/passwd "$HOME/.darrow/reviews/link"', "symbolic link"),
        (WRITE + ' && ln "$HOME/.darrow/reviews/r.json" "$HOME/hard"', "hard link"),
    ],
)
def test_unusable_artifacts_are_a_grading_error_never_a_pass(
    sevro_project: SevroProject, tmp_path: Path, command: str, fragment: str
) -> None:
    found = _run(sevro_project, tmp_path, command)
    checks = found["evidence"]["checks"]
    assert {c["status"] for c in checks} == {"unavailable"}, checks
    assert all(fragment in c["detail"] and "grader error" in c["detail"] for c in checks)
    assert found["exit"] != 0
