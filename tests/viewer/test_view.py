"""`sevro view` on real scripted-host runs: what the page shows, that hostile text stays text,
that bad input is one line and exit 64, and `--serve` on 127.0.0.1."""

from __future__ import annotations

import base64
import gzip
import json
import os
import signal
import subprocess
import sys
import urllib.request
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from sevro_core.reporting.viewer.page import script_json
from sevro_core.reporting.viewer.render import content_security_policy
from sevro_core.testing import run_in_process
from tests.viewer.conftest import HOSTILE, HOSTILE_FILE, LINK

DATA_TYPES = ("application/json", "application/gzip+base64")


class Elements(HTMLParser):
    """Every start tag with its attributes, the text of each executable <script> element and
    of each data block (``<script type="application/json">`` or packed details), by id."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self.blocks: dict[str, tuple[str, str]] = {}
        self._into: list[str] | None = None
        self._block: tuple[str, str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        self.tags.append((tag, named))
        self._into, self._block = None, None
        if tag == "script" and named.get("type") in DATA_TYPES:
            self._block = (str(named.get("id")), str(named.get("type")))
            self.blocks[self._block[0]] = (self._block[1], "")
        elif tag == "script":
            self._into = self.scripts
            self._into.append("")

    def handle_endtag(self, tag: str) -> None:
        self._into, self._block = None, None

    def handle_data(self, data: str) -> None:
        if self._into is not None:
            self._into[-1] += data
        elif self._block is not None:
            kind, text = self.blocks[self._block[0]]
            self.blocks[self._block[0]] = (kind, text + data)


def view(tmp_path: Path, *runs: Path) -> str:
    out = tmp_path / "view"
    done = run_in_process(["view", *map(str, runs), "--out", str(out)])
    assert done.exit_code == 0, done.stdout + done.stderr
    assert done.stdout.strip() == str(out / "index.html")
    return (out / "index.html").read_text(encoding="utf-8")


def elements(html: str) -> Elements:
    parsed = Elements()
    parsed.feed(html)
    return parsed


def trial_data(html: str) -> dict[str, Any]:
    """Every trial's details as the page carries them for its script (packed per case), by
    anchor."""
    found: dict[str, Any] = {}
    for kind, text in elements(html).blocks.values():
        if kind == "application/gzip+base64":
            found.update(json.loads(gzip.decompress(base64.b64decode(text))))
    return found


def trial_rows(html: str) -> dict[str, dict[str, Any]]:
    """Every trial's row as the page's script draws it from the run's index, by anchor."""
    parsed = elements(html)
    groups: dict[str, list[dict[str, str | None]]] = {}
    run = ""
    for tag, attrs in parsed.tags:
        if tag == "div" and attrs.get("class") == "trials":
            run = str(attrs["data-run-index"])
        elif tag == "details" and attrs.get("class") == "case-trials":
            groups.setdefault(run, []).append(attrs)
    rows = {}
    for run, members in groups.items():
        index = json.loads(parsed.blocks[f"index-{run}"][1])
        for group in members:
            for anchor, number, task, execution, grading, checks in index[
                int(str(group["data-group"]))
            ]:
                rows[anchor] = {
                    "case": group["data-case"],
                    "arm": group["data-arm"],
                    "trial": number,
                    "task": task,
                    "execution": execution,
                    "grading": grading,
                    "checks": checks,
                    "block": group["data-block"],
                }
    return rows


def test_a_plain_run_shows_cases_trials_checks_messages_commands_and_the_diff(
    hostile_run: Path, tmp_path: Path
) -> None:
    html = view(tmp_path, hostile_run)
    run = json.loads((hostile_run / "run.json").read_text())
    assert f"Run <code>{run['runId']}</code>" in html
    # per case: pass counts over decided trials with the Wilson interval
    assert '<td>plain</td><td class="s-passed">passed</td><td>2 / 2 (2)</td><td>100%</td>' in html
    assert '<td>hostile</td><td class="s-failed">failed</td><td>0 / 2 (2)</td><td>0%</td>' in html
    assert "[34%, 100%]" in html and "[0%, 66%]" in html
    trial = f"trial-{run['runId'][:8]}-hostile-1"
    row = trial_rows(html)[trial]
    assert (row["task"], row["case"], row["trial"]) == ("failed", "hostile", 1)
    assert (row["execution"], row["grading"]) == ("completed", "completed")
    assert ["has-highlights", "failed"] in row["checks"]
    # the rows and details are data, drawn by the page's script only when opened
    assert '<details class="trial"' not in html
    assert '<pre class="final-message">' not in html and "<h4>Checks</h4>" not in html
    shown = trial_data(html)[trial]
    assert {"id": "has-highlights", "status": "failed"}.items() <= shown["checks"][1].items()
    assert "check has-highlights (sevro.shell) failed" in shown["reason"]  # as report --details
    assert "echo listing; ls" in [a["text"] for a in shown["actions"]]  # the command, in order
    assert ["add", "+base"] not in shown["diff"]["lines"] and shown["diff"][
        "id"
    ] == "sevro.git.diff"
    assert any(kind == "add" and line.startswith("+") for kind, line in shown["diff"]["lines"])
    assert "cases/hostile/trial-1.json" in shown["paths"]
    assert any(p.endswith("trial-1-raw.txt") for p in shown["paths"])


def run_id(run: Path) -> str:
    return str(json.loads((run / "run.json").read_text())["runId"])


def test_hostile_text_is_escaped_everywhere_and_nothing_but_the_viewer_script_runs(
    hostile_run: Path, tmp_path: Path
) -> None:
    html = view(tmp_path, hostile_run)
    parsed = elements(html)
    # negative control: the planted markup would be elements if it were not escaped
    planted = elements(f"<pre>{HOSTILE} {LINK}</pre>")
    assert {t for t, _ in planted.tags} >= {"script", "img", "a"}
    assert [t for t, _ in parsed.tags if t == "img"] == []
    assert len(parsed.scripts) == 1 and "__pwned" not in parsed.scripts[0]
    handlers = [(t, a) for t, attrs in parsed.tags for a in attrs if a.startswith("on")]
    assert handlers == []
    hrefs = [attrs["href"] for t, attrs in parsed.tags if t == "a"]
    assert all(h is not None and h.startswith("#") for h in hrefs)  # rows' links: the browser
    # the data blocks hold no "<" at all, so nothing in them can close the block or open a
    # comment; negative control: plain JSON of the same text would
    assert parsed.blocks and all("<" not in text for _, text in parsed.blocks.values())
    assert "</script>" in json.dumps(HOSTILE) and "<" not in script_json(HOSTILE)
    assert "<!--" not in script_json("<!--") and json.loads(script_json("</<!--&>")) == "</<!--&>"
    shown = trial_data(html)[f"trial-{run_id(hostile_run)[:8]}-hostile-1"]
    assert shown["messages"][0]["text"] == f"done {HOSTILE} {LINK}"  # the final message
    assert HOSTILE_FILE in [c["path"] for c in shown["changes"]]  # the file name
    assert ["add", f"+{HOSTILE}"] in shown["diff"]["lines"]  # the diff
    assert "javascript:" not in "".join(str(a) for _, attrs in parsed.tags for a in attrs.values())
    assert HOSTILE_FILE not in html


def test_the_page_allows_only_its_own_script_and_style_by_hash(
    hostile_run: Path, tmp_path: Path
) -> None:
    html = view(tmp_path, hostile_run)
    (meta,) = [a for t, a in elements(html).tags if t == "meta" and a.get("http-equiv")]
    policy = meta["content"]
    assert policy is not None and policy.startswith("default-src 'none'; script-src 'sha256-")
    assert "img-src data:" in policy and "unsafe-inline" not in policy
    script = elements(html).scripts[0]
    assert content_security_policy(script, "x").split("; ")[1] == policy.split("; ")[1]
    # negative control: a changed script has another hash
    assert content_security_policy(script + " ", "x") != content_security_policy(script, "x")


def test_an_experiment_shows_its_comparison_arms_and_pairs_side_by_side(
    experiment_run: Path, tmp_path: Path
) -> None:
    html = view(tmp_path, experiment_run)
    assert "candidate improved on baseline" in html or "baseline" in html
    assert '<p class="verdict">' in html
    assert "<td>notes</td><td>0%</td><td>100%</td>" in html  # control, treatment rates
    assert "<td>candidate</td><td>3</td><td>3 / 3</td><td>100%</td>" in html
    assert "<td>baseline</td><td>3</td><td>0 / 3</td><td>0%</td>" in html
    assert html.count('class="pair-link"') == 3
    rates = html.split('<figure class="pass-rates">', 1)[1].split("</figure>", 1)[0]
    bars = [a for t, a in elements(rates).tags if t == "rect" and a.get("class") == "bar"]
    assert [(b["data-arm"], b["data-passes"], b["data-decided"]) for b in bars] == [
        ("baseline", "0", "3"),  # the rows of the cases table, drawn by reporting/plots
        ("candidate", "3", "3"),
    ]
    assert [float(str(b["data-rate"])) for b in bars] == [0.0, 1.0]
    whiskers = [a for t, a in elements(rates).tags if a.get("class") == "interval"]
    assert len(whiskers) == 2 and float(str(whiskers[1]["data-low"])) < 1.0
    figures = html.split('<div class="figures">', 1)[1].split("</div>", 1)[0]
    # the pass rates, the transition grid, durations, input/output tokens
    assert figures.count("<figure") == 5
    assert 'data-cell="fixed" data-count="3"' in figures  # baseline failed, candidate passed
    assert 'data-cell="bothPass" data-count="0"' in figures
    assert "Transitions from baseline to candidate" in figures
    assert "left out (not drawn as 0)" in figures  # the scripted host reports no usage
    pair = html.split('<details class="pair" id="pair-1-1">', 1)[1].split("</details>", 1)[0]
    sides = pair.split('class="pair-side"')[1:]
    assert [s.split('data-side="', 1)[1].split('"', 1)[0] for s in sides] == [
        "baseline",
        "candidate",
    ]
    data = trial_data(html)
    baseline, candidate = (data[s.split('data-anchor="', 1)[1].split('"', 1)[0]] for s in sides)
    assert (baseline["arm"], baseline["task"]) == ("baseline", "failed")
    assert (candidate["arm"], candidate["task"]) == ("candidate", "passed")
    assert candidate["skillsRead"] == ["notes"] and baseline["skillsRead"] == []
    assert candidate["skillReads"] == ["notes (turn 1 #1: read)", "notes (turn 1 #2: partial)"]


def test_several_runs_on_one_page(hostile_run: Path, experiment_run: Path, tmp_path: Path) -> None:
    html = view(tmp_path, hostile_run, experiment_run)
    assert html.count('<section class="run"') == 2
    assert '<option value="candidate">' in html and '<option value="hostile">' in html


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda run, tmp: tmp, "is not a run directory"),
        (lambda run, tmp: tmp / "missing", "is not a run directory"),
    ],
)
def test_an_input_that_is_not_a_run_directory_is_one_line_and_exit_64(
    hostile_run: Path, tmp_path: Path, make: object, message: str
) -> None:
    assert callable(make)
    done = run_in_process(["view", str(make(hostile_run, tmp_path)), "--out", str(tmp_path / "o")])
    assert done.exit_code == 64
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_a_changed_trial_file_is_refused(hostile_run: Path, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(hostile_run, copy)
    trial = copy / "cases" / "plain" / "trial-1.json"
    trial.write_text(trial.read_text() + " ")
    done = run_in_process(["view", str(copy), "--out", str(tmp_path / "o")])
    assert done.exit_code == 64, done.stderr
    assert "digest" in done.stderr and "Traceback" not in done.stderr
    # positive control: the untouched copy is viewed
    shutil.copy(hostile_run / "cases" / "plain" / "trial-1.json", trial)
    assert run_in_process(["view", str(copy), "--out", str(tmp_path / "o")]).exit_code == 0


def test_serve_serves_the_page_on_localhost_until_interrupted(
    hostile_run: Path, tmp_path: Path
) -> None:
    out = tmp_path / "served"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sevro_core",
            "view",
            str(hostile_run),
            "--out",
            str(out),
            "--serve",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ},
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == str(out / "index.html")
        line = process.stdout.readline()
        assert line.startswith("serving http://127.0.0.1:"), line
        url = line.split()[1]
        with urllib.request.urlopen(url, timeout=10) as response:
            assert "sevro view" in response.read().decode()
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=10)
    # Ctrl-C ends it as it ends every sevro command: one line, exit 130
    assert process.returncode == 130
    assert process.stderr is not None and "interrupted" in process.stderr.read()


def test_a_judged_run_shows_each_judge_reply_beside_the_check_it_decided(
    tmp_path: Path,
) -> None:
    """skill-creator's evals with the scripted semantic judge: every expectation a judge call."""
    from sevro_core.testing import require_sandbox

    require_sandbox()
    root = Path(__file__).resolve().parents[2]
    example = root / "examples" / "skill-creator-evals"
    done = subprocess.run(
        [
            sys.executable, "-m", "sevro_core", "run", str(example / "changelog"),
            "--host-config", str(example / "host.json"), "--semantic-host", "scripted",
            "--semantic-host-config", str(example / "judge.json"), "--trials", "1",
            "--results-root", str(tmp_path / "results"), "--json",
        ],
        capture_output=True, text=True, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    run = Path(json.loads(done.stdout)["evidencePath"]).parent
    html = view(tmp_path, run)
    trials = list(trial_data(html).values())
    judges = [j for t in trials for j in t["judges"]]
    assert {j["role"] for j in judges} == {"semantic"} and len(judges) >= 2
    replies = [j["reply"] for j in judges if j["reply"]]
    assert len(replies) >= 2
    assert any('"verdict":"pass","reason":"It says Unreleased' in r for r in replies)
    assert "expectation-1" in [c["id"] for t in trials for c in t["checks"]]


def test_the_paired_view_shows_the_comparators_reasons_escaped(
    judged_run: Path, tmp_path: Path
) -> None:
    html = view(tmp_path, judged_run)
    pair = html.split('<details class="pair" id="pair-1-1">', 1)[1].split("</details>", 1)[0]
    assert "<h4>Comparator judgement: tie</h4>" in pair
    assert pair.count('<pre class="comparator-reply">') == 2  # both orders' replies
    assert 'data-order="AB"' in pair and 'data-order="BA"' in pair
    assert "kept with care &lt;script&gt;window.__pwned=1&lt;/script&gt;" in pair
    assert HOSTILE not in html
    # negative control: a pair judgement whose trial digests no longer match is refused
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(judged_run, copy)
    (judgement,) = copy.glob("comparisons/*/out/pair-1.json")
    document = json.loads(judgement.read_text())
    document["trials"]["control"] = "0" * 64
    judgement.write_text(json.dumps(document))
    done = run_in_process(["view", str(copy), "--out", str(tmp_path / "o")])
    assert done.exit_code == 64 and "does not match the trials it judged" in done.stderr
