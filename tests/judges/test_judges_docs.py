"""docs/judges.md shows every judge prompt as a judge receives it, and its links resolve.

The quoted prompts are regenerated here from the code (the semantic prompt from the example
case and its scripted agent's reply, the comparator's from the data the page quotes), so a
changed template that the page does not follow fails; the reply samples are read by the real
parsers; and every link in the judge pages, and every link into them, reaches a heading.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from sevro_core.api import ComparisonSubject, JudgedResult
from sevro_judges.rubric_software_engineering import SoftwareEngineeringRubric
from sevro_judges.semantic_prompt import Proposition, parse_semantic_reply, semantic_prompt

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGE = DOCS / "judges.md"
EXAMPLE = ROOT / "examples" / "judges"
TEXT_BLOCK = re.compile(r"^```text\n(.*?)^```$", re.MULTILINE | re.DOTALL)
LINK = re.compile(r"\]\(([^)\s]+)\)")
CHECKED = [
    DOCS / "judges.md",
    DOCS / "judges-calibration.md",
    DOCS / "graders.md",
    *sorted((DOCS / "hosts").glob("*.md")),
]


def section(title: str) -> str:
    text = PAGE.read_text("utf-8")
    return text.split(f"\n{title}\n", 1)[1].split("\n## ", 1)[0]


def subsection(title: str) -> str:
    text = PAGE.read_text("utf-8")
    return text.split(f"\n{title}\n", 1)[1].split("\n### ", 1)[0]


def test_the_semantic_prompt_is_the_examples_first_call_in_full() -> None:
    case = json.loads((EXAMPLE / "cases" / "explains-the-fix.json").read_text("utf-8"))
    host = json.loads((EXAMPLE / "host.json").read_text("utf-8"))
    (turn,) = host["cases"][case["id"]]["turns"]
    response = next(step["reply"]["text"] for step in turn if "reply" in step)
    about_response = [
        Proposition(c["id"], c["configuration"]["proposition"])
        for c in case["checks"]
        if "artifactPath" not in c["configuration"]
    ]
    assert len(about_response) == 2
    quoted, reference = TEXT_BLOCK.findall(subsection("### The semantic prompt"))
    assert quoted == semantic_prompt(about_response, response)
    gold = ("gold/answer.md", "Gold answer: 42 (19 + 23).\n")
    with_reference = semantic_prompt(about_response, response, reference=gold)
    assert with_reference == quoted.replace(
        "</propositions>\n\n", "</propositions>\n\n" + reference + "\n"
    )


def test_the_semantic_reply_sample_is_one_the_grader_accepts() -> None:
    sample = TEXT_BLOCK.findall(subsection("### The semantic reply"))[0]
    verdicts = parse_semantic_reply(sample, ["names-the-cause", "no-blame"])
    assert {v for v, _ in verdicts.values()} == {"pass"}


def _subject(data: dict[str, Any], first: str, second: str) -> ComparisonSubject:
    def side(value: dict[str, Any]) -> JudgedResult:
        return JudgedResult(
            final_message=value["finalMessage"],
            diff=value["diff"],
            diff_truncated=value["diffTruncated"],
            final_message_truncated=value["finalMessageTruncated"],
        )

    return ComparisonSubject(
        task=tuple(data["task"]),
        base_files=data["startingFiles"]["files"],
        base_files_truncated=data["startingFiles"]["truncated"],
        a=side(data[first]),
        b=side(data[second]),
    )


def test_the_comparator_prompt_is_the_rubrics_prompt_in_full() -> None:
    (quoted,) = TEXT_BLOCK.findall(subsection("### The comparator prompt"))
    data = json.loads(quoted.rsplit("<untrusted-data>\n", 1)[1].split("\n</untrusted-data>")[0])
    assert quoted == SoftwareEngineeringRubric().prompt(_subject(data, "A", "B"))
    # A is the baseline of the example (it left trace.txt), as the page says
    assert "trace.txt" in data["A"]["diff"] and "trace.txt" not in data["B"]["diff"]
    for leak in ("tidy-changes", "candidate", "baseline", ".agents", "SKILL.md"):
        assert leak not in quoted, leak


def test_the_advisory_section_replaces_the_draft_page() -> None:
    assert not (DOCS / "judges-advisory.md").exists()
    text = section("## The advisory reviewer")
    assert "### What the reviewer sees: the blind view" in text
    assert "review_questions" in text and "expected_output" in text


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = heading.strip().lower().replace("`", "")
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    text = re.sub(r"^```.*?^```$", "", page.read_text("utf-8"), flags=re.MULTILINE | re.DOTALL)
    for heading in re.findall(r"^#{1,6} (.+)$", text, re.MULTILINE):
        slug, n = _slug(heading), 1
        while slug in found:
            slug, n = f"{_slug(heading)}-{n}", n + 1
        found.add(slug)
    return found


def test_the_slug_rule_matches_known_anchors() -> None:
    assert _slug("sevro.semantic") == "sevrosemantic"
    assert _slug("skill-eval `review_questions` and skill-creator `expected_output`") == (
        "skill-eval-review_questions-and-skill-creator-expected_output"
    )
    assert _slug("What the judge sees, and what it never sees") == (
        "what-the-judge-sees-and-what-it-never-sees"
    )


def links_into_judge_pages() -> list[tuple[Path, str]]:
    out = []
    for page in sorted([ROOT / "README.md", *DOCS.rglob("*.md")]):
        text = re.sub(r"^```.*?^```$", "", page.read_text("utf-8"), flags=re.MULTILINE | re.DOTALL)
        for target in LINK.findall(text):
            if "://" in target or target.startswith("mailto:"):
                continue
            path = target.split("#", 1)[0]
            resolved = (page.parent / path).resolve() if path else page
            if page in CHECKED or resolved in CHECKED:
                out.append((page, target))
    return out


@pytest.mark.parametrize(
    ("page", "target"),
    links_into_judge_pages(),
    ids=[f"{p.relative_to(ROOT)}->{t}" for p, t in links_into_judge_pages()],
)
def test_every_link_of_and_into_the_judge_pages_resolves(page: Path, target: str) -> None:
    path, _, anchor = target.partition("#")
    resolved = (page.parent / path).resolve() if path else page
    assert resolved.exists(), f"{page}: {target}"
    if anchor:
        assert resolved.suffix == ".md", f"{page}: {target}"
        assert anchor in anchors(resolved), f"{page}: {target}"
