"""The viewer in a real browser (headless Chromium): deep links, filters, the paired view, and
hostile text that stays inert text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sevro_core.testing import require_chromium, run_in_process
from tests.viewer.browser import chromium_page
from tests.viewer.conftest import HOSTILE, HOSTILE_FILE


@pytest.fixture
def chromium() -> str:
    return require_chromium()


def written(tmp_path: Path, *runs: Path) -> Path:
    out = tmp_path / "view"
    done = run_in_process(["view", *map(str, runs), "--out", str(out)])
    assert done.exit_code == 0, done.stderr
    return out / "index.html"


def watch(page: Any) -> dict[str, list[str]]:
    """Dialogs, console errors and requests the page makes, for the test to assert on."""
    seen: dict[str, list[str]] = {"dialogs": [], "errors": [], "requests": []}

    def dialog(d: Any) -> None:
        seen["dialogs"].append(d.message)
        d.dismiss()

    page.on("dialog", dialog)
    page.on("console", lambda m: seen["errors"].append(m.text) if m.type == "error" else None)
    page.on("request", lambda r: seen["requests"].append(r.url))
    return seen


def trial_id(run: Path, case: str, number: int, arm: str | None = None) -> str:
    run_id = json.loads((run / "run.json").read_text())["runId"]
    return "-".join(["trial", run_id[:8], case, *([arm] if arm else []), str(number)])


def test_a_deep_link_opens_one_trial_and_filters_hide_rows(
    chromium: str, hostile_run: Path, tmp_path: Path
) -> None:
    page_file = written(tmp_path, hostile_run)
    anchor = trial_id(hostile_run, "hostile", 2)
    with chromium_page(chromium) as page:
        seen = watch(page)
        page.goto(f"{page_file.as_uri()}#{anchor}")
        trial = page.locator(f"#{anchor}")
        assert trial.evaluate("e => e.open") is True
        assert trial.locator(".final-message").inner_text().startswith("done <script>")
        others = page.locator("details.trial:not([open])")
        assert others.count() == 3  # the linked trial alone is open
        assert page.locator("#filter-count").inner_text() == "4 of 4 trials shown"
        page.screenshot(path=str(tmp_path / "deep-link.png"), full_page=True)

        page.select_option("#filter-state", "passed")
        assert page.locator("#filter-count").inner_text() == "2 of 4 trials shown"
        assert trial.is_hidden()
        assert page.locator(f"#{trial_id(hostile_run, 'plain', 1)}").is_visible()

        page.select_option("#filter-state", "")
        page.select_option("#filter-check", "has-highlights")
        page.select_option("#filter-check-status", "failed")
        assert page.locator("#filter-count").inner_text() == "2 of 4 trials shown"
        assert trial.is_visible()
        page.select_option("#filter-case", "plain")
        assert page.locator("#filter-count").inner_text() == "0 of 4 trials shown"
        page.screenshot(path=str(tmp_path / "filtered.png"))
        assert seen["errors"] == [] and seen["dialogs"] == []
        assert all(u.startswith("file:") for u in seen["requests"]), seen["requests"]


def test_hostile_text_is_shown_literally_and_never_runs(
    chromium: str, hostile_run: Path, tmp_path: Path
) -> None:
    page_file = written(tmp_path, hostile_run)
    anchor = trial_id(hostile_run, "hostile", 1)
    with chromium_page(chromium) as page:
        seen = watch(page)
        page.goto(f"{page_file.as_uri()}#{anchor}")
        trial = page.locator(f"#{anchor}")
        trial.locator(".states").wait_for()  # details are unpacked and drawn asynchronously
        for link in page.locator("a").all():  # no planted link became a link
            assert not (link.get_attribute("href") or "").startswith("javascript:")
        assert page.evaluate("() => typeof window.__pwned") == "undefined"
        assert seen["dialogs"] == []
        text = trial.inner_text()
        assert HOSTILE in text  # the final message and the diff, character for character
        assert HOSTILE_FILE in trial.locator(".file-name").all_inner_texts()
        assert trial.locator("img").count() == 0 and trial.locator("script").count() == 0
        page.screenshot(path=str(tmp_path / "hostile.png"), full_page=True)
        # the same text drawn on a click rather than a deep link stays text too
        other = page.locator(f"#{trial_id(hostile_run, 'hostile', 2)}")
        assert other.locator(".final-message").count() == 0  # not drawn before it is opened
        other.locator("summary").click()
        assert (
            other.locator(".final-message").inner_text()
            == trial.locator(".final-message").inner_text()
        )
        assert (
            HOSTILE in other.inner_text() and other.locator("img, script, a[href^=j]").count() == 0
        )
        assert page.evaluate("() => typeof window.__pwned") == "undefined"
        # the page's CSP stops even markup written into it as markup
        page.evaluate(f"() => {{ document.body.innerHTML += {json.dumps(HOSTILE)}; }}")
        page.wait_for_timeout(200)
        assert page.evaluate("() => typeof window.__pwned") == "undefined"
        assert seen["dialogs"] == []
        # negative control: the same markup in a page without the CSP runs
        bare = page.context.browser.new_page()
        bare_seen = watch(bare)
        bare.set_content(f"<body>{HOSTILE}</body>")
        bare.wait_for_timeout(200)
        assert bare.evaluate("() => window.__pwned") == 2
        assert bare_seen["dialogs"] == ["2"]


def test_the_paired_view_puts_a_baseline_trial_beside_its_candidate(
    chromium: str, experiment_run: Path, tmp_path: Path
) -> None:
    page_file = written(tmp_path, experiment_run)
    with chromium_page(chromium) as page:
        seen = watch(page)
        page.goto(page_file.as_uri())
        assert (
            "improved" in page.locator("p.verdict").first.inner_text()
            or page.locator("p.verdict").count() == 1
        )
        bars = page.locator("figure.pass-rates rect.bar")  # per case and arm, with no script
        box = bars.nth(1).bounding_box()
        assert bars.count() == 2 and box is not None and box["width"] > 100
        page.locator("a.pair-link").nth(1).click()
        pair = page.locator("#pair-1-2")
        assert pair.evaluate("e => e.open") is True
        sides = pair.locator(".pair-side")
        assert sides.count() == 2
        baseline, candidate = sides.nth(0), sides.nth(1)
        baseline.locator(".states").wait_for()
        candidate.locator(".states").wait_for()
        assert baseline.locator("h4").first.inner_text().startswith("baseline")
        assert "task failed" in baseline.inner_text() and "read: none" in baseline.inner_text()
        assert "task passed" in candidate.inner_text() and "read: notes" in candidate.inner_text()
        box_b, box_c = baseline.bounding_box(), candidate.bounding_box()
        assert box_b and box_c and box_b["x"] + box_b["width"] <= box_c["x"]  # side by side
        page.screenshot(path=str(tmp_path / "pair.png"), full_page=True)
        candidate.locator("h4 a").first.click()  # on to the candidate trial itself
        linked = page.locator(f"#{trial_id(experiment_run, 'notes', 2, 'candidate')}")
        assert linked.evaluate("e => e.open") is True
        assert seen["errors"] == [] and seen["dialogs"] == []
