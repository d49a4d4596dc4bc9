"""The advisory review's blind view and step: withheld paths never reach the reviewer, the
files a finding may cite are the workspace's text files, and every failure is a failed review."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sevro_core.api import JudgeReply, Route, SkillPlaces
from sevro_core.judges.advisory import (
    AdvisoryInputs,
    blind_diff,
    line_counts,
    review_trial,
    withheld_paths,
)
from sevro_judges.advisory_reviewer import AdvisoryReviewer


def section(path: str, body: str = "@@ -1 +1 @@\n-a\n+b\n", quoted: bool = False) -> str:
    a, b = (f'"a/{path}"', f'"b/{path}"') if quoted else (f"a/{path}", f"b/{path}")
    return f"diff --git {a} {b}\nindex 1..2 100644\n--- {a}\n+++ {b}\n{body}"


WITHHELD = (".git", ".agents", "AGENTS.md", "notes/private")


@pytest.mark.parametrize(
    ("path", "shown"),
    [
        ("src/app.py", True),
        ("with space/b x.py", True),
        ("AGENTS.md.bak", True),
        ("notes/privately.md", True),
        (".agents/skills/target/SKILL.md", False),
        ("AGENTS.md", False),
        ("agents.md", False),
        ("notes/private/a.md", False),
        ("notes/private", False),
        (".git/config", False),
        (".Git/config", False),
    ],
)
def test_the_blind_diff_removes_withheld_sections(path: str, shown: bool) -> None:
    diff = (section("README.md") + section(path, "@@ -0,0 +1 @@\n+MARKER\n")).encode()
    text, truncated = blind_diff(diff, WITHHELD)
    assert not truncated
    assert text.startswith("diff --git a/README.md b/README.md\n")  # positive control
    assert ("MARKER" in text) is shown


def test_quoted_paths_are_unquoted_before_they_are_compared() -> None:
    diff = section(".agents/skills/t\\303\\251/SKILL.md", "+SECRET\n", quoted=True)
    assert "SECRET" not in blind_diff(diff.encode(), WITHHELD)[0]
    shown = section("src/caf\\303\\251.py", "+SHOWN\n", quoted=True)
    assert "SHOWN" in blind_diff(shown.encode(), WITHHELD)[0]


def test_an_unreadable_header_is_withheld_and_binary_data_is_not_shown() -> None:
    odd = "diff --git a/x b/y\n+ODD\n"
    binary = "diff --git a/i.png b/i.png\nindex 1..2\nGIT binary patch\nliteral 4\nJUNK\n"
    text, _ = blind_diff((odd + binary).encode(), WITHHELD)
    assert "ODD" not in text and "JUNK" not in text
    assert text == "diff --git a/i.png b/i.png\nindex 1..2\nBinary files differ\n"


def test_a_long_diff_is_cut_at_a_section_and_says_so() -> None:
    big = "".join(section(f"f{i}.txt", "+" + "x" * 100_000 + "\n") for i in range(12))
    text, truncated = blind_diff(big.encode(), WITHHELD)
    assert truncated and text.count("diff --git") == 10


def test_withheld_paths_name_every_hosts_agent_places() -> None:
    class Host:
        skill_places = SkillPlaces(".agents/skills", "AGENTS.md", ("AGENTS.override.md",))

    class Other:
        skill_places = SkillPlaces("skills", "CLAUDE.md")

    arm = SkillPlaces(".claude/skills", "CLAUDE.local.md")
    assert withheld_paths([Host(), Other(), object()], arm, ["notes/", "x"]) == (
        ".agents", ".claude", ".git", "AGENTS.md", "AGENTS.override.md", "CLAUDE.local.md",
        "CLAUDE.md", "notes", "skills", "x",
    )  # fmt: skip


def test_line_counts_list_text_files_only(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("1\n2\n3\n")
    (tmp_path / "b.txt").write_text("no newline")
    (tmp_path / "empty").write_text("")
    (tmp_path / "bin").write_bytes(b"\0\1\2")
    (tmp_path / "latin").write_bytes(b"caf\xe9\n")
    (tmp_path / "link").symlink_to(tmp_path / "b.txt")
    (tmp_path / "dirlink").symlink_to(tmp_path / "src")
    (tmp_path / ".agents").mkdir()
    (tmp_path / ".agents" / "s.md").write_text("secret\n")
    (tmp_path / "AGENTS.md").write_text("x\n")
    assert line_counts(tmp_path, WITHHELD) == {"b.txt": 1, "empty": 0, "src/a.py": 3}


class FakeJudges:
    """A judge session that answers every prompt with ``text`` (or fails)."""

    def __init__(self, text: str | None, error: str | None = None) -> None:
        self.text, self.error, self.prompts = text, error, []  # type: list[str]
        self.calls: list[Any] = []

    def ask(self, role: str, prompt: str, *, purpose: str) -> JudgeReply:
        assert role == "advisory" and purpose == "sevro.advisory:review"
        self.prompts.append(prompt)
        route = Route("h", "m", "e", role="advisory")
        return JudgeReply(self.text, self.error is None, route, error=self.error)


def inputs(tmp_path: Path, **changes: Any) -> AdvisoryInputs:
    (tmp_path / "app.py").write_text("a\nb\n")
    base: dict[str, Any] = {
        "git": True,
        "case_id": "c",
        "prompts": ("Fix app.py",),
        "final_message": "done",
        "diff": section("app.py").encode(),
        "diff_truncated": False,
        "workspace": tmp_path,
        "withheld": WITHHELD,
        "questions": ("Is it tidy?",),
    }
    return AdvisoryInputs(**{**base, **changes})


GOOD = json.dumps(
    {
        "findings": [
            {"severity": "critical", "file": "app.py", "lines": [1, 2], "title": "t",
             "detail": "d"},
            {"severity": "info", "file": "gone.py", "lines": [1, 1], "title": "t", "detail": "d"},
        ],
        "answers": [{"question": "Is it tidy?", "answer": "yes"}],
        "summary": "s",
    }
)  # fmt: skip


def test_a_review_keeps_findings_and_counts_the_dropped(tmp_path: Path) -> None:
    judges = FakeJudges(GOOD)
    review = review_trial(AdvisoryReviewer(), judges, inputs(tmp_path)).to_json()  # type: ignore[arg-type]
    assert review["status"] == "completed"
    assert review["reviewer"] == {"id": "sevro.reviewer.advisory", "version": "1.0.0"}
    assert [f["file"] for f in review["findings"]] == ["app.py"]  # type: ignore[index, union-attr]
    assert review["droppedFindings"] == 1
    assert review["answers"] == [{"question": "Is it tidy?", "answer": "yes"}]
    assert '"Is it tidy?"' in judges.prompts[0] and '"app.py": 2' in judges.prompts[0]


@pytest.mark.parametrize(
    ("judges", "changes", "status", "reason"),
    [
        (FakeJudges("not json"), {}, "failed", "not one JSON object"),
        (FakeJudges(None, "the judge failed: boom"), {}, "failed", "the judge failed: boom"),
        (FakeJudges(GOOD), {"git": False, "diff": None}, "failed", "could not be compared"),
        (FakeJudges(GOOD), {"diff": None}, "failed", "Git diff is unavailable"),
        (FakeJudges(GOOD), {"questions": ()}, "failed", "not asked"),
    ],
)
def test_what_goes_wrong_is_a_failed_or_not_run_review(
    tmp_path: Path, judges: FakeJudges, changes: dict[str, Any], status: str, reason: str
) -> None:
    review = review_trial(AdvisoryReviewer(), judges, inputs(tmp_path, **changes))  # type: ignore[arg-type]
    assert review.status == status
    assert review.reason is not None and reason in review.reason
    assert review.to_json()["findings"] == []


def test_a_reviewer_that_raises_is_a_failed_review(tmp_path: Path) -> None:
    class Broken(AdvisoryReviewer):
        def review(self, subject: Any, reply: str) -> Any:
            raise RuntimeError("bug")

    review = review_trial(Broken(), FakeJudges(GOOD), inputs(tmp_path))  # type: ignore[arg-type]
    assert (review.status, review.reason) == ("failed", "bug")


def test_a_review_outside_the_evidence_shape_is_a_failed_review(tmp_path: Path) -> None:
    class Sloppy(AdvisoryReviewer):
        def review(self, subject: Any, reply: str) -> Any:
            return {"findings": [{"file": 1}], "answers": [], "droppedFindings": 0, "summary": None}

    review = review_trial(Sloppy(), FakeJudges(GOOD), inputs(tmp_path))  # type: ignore[arg-type]
    assert review.status == "failed" and "evidence's shape" in (review.reason or "")
