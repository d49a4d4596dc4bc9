"""Measure ``sevro view`` on a large retained run (issue 18: a 10 000-trial run's page is
generated in at most 2 s and opens in the browser in at most 2 s).

The run is the one ``report_scale.py`` builds: one real trial (scripted host) cloned into
``--cases`` x ``--trials`` trials with their own ids, paths and digests, so ``sevro view``
verifies all of it as it would any run. Generation is the median wall time of fresh ``sevro
view`` processes; opening is the time headless Chromium (Playwright) takes from navigation
until the summary is visible and the page's script has run (the load event), then until one
trial of a case opened from the page is rendered (the case's rows drawn, its details unpacked).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from report_scale import clone_run, report_seconds, seed_run

BUDGET_S = 2.0
OPEN_BUDGET_S = 2.0


def generate_seconds(sevro: str, run_dir: Path, out: Path, repeats: int) -> float:
    """Median wall time of fresh ``sevro view RUN --out OUT`` processes."""
    walls = []
    for _ in range(repeats):
        started = time.perf_counter()
        done = subprocess.run(
            [sevro, "view", str(run_dir), "--out", str(out)], capture_output=True, check=False
        )
        walls.append(time.perf_counter() - started)
        if done.returncode != 0:
            sys.exit(f"sevro view failed: {done.stderr.decode(errors='replace')}")
    return statistics.median(walls)


def open_seconds(chromium: str, page_file: Path, repeats: int) -> tuple[float, float]:
    """Median seconds until the summary is visible, and until a clicked trial is rendered."""
    from tests.viewer.browser import chromium_page

    summaries, trials = [], []
    for _ in range(repeats):
        with chromium_page(chromium) as page:
            started = time.perf_counter()
            page.goto(page_file.as_uri(), wait_until="load")
            page.locator("p.summary").wait_for(state="visible")
            summaries.append(time.perf_counter() - started)
            started = time.perf_counter()
            group = page.locator("details.case-trials").nth(50)
            group.locator("summary").click()  # draws the case's rows
            trial = group.locator("details.trial").nth(50)
            trial.locator("summary").click()  # unpacks the case's details, draws this trial
            trial.locator(".trial-body .states").wait_for(state="visible")
            trials.append(time.perf_counter() - started)
    return statistics.median(summaries), statistics.median(trials)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--trials", type=int, default=100, help="trials per case")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--run", type=Path, help="an already built run directory to view")
    parser.add_argument("--keep", type=Path, help="build the run in this new directory and keep it")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--check", action="store_true", help="exit 1 when over budget")
    args = parser.parse_args()
    from sevro_core.logs import configure

    configure()
    sevro = str(Path(sys.executable).parent / "sevro")
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = args.run
        if run_dir is None:
            root = args.keep or Path(tmp)
            root.mkdir(parents=True, exist_ok=True)
            run_dir = seed_run(root)
            clone_run(run_dir, args.cases, args.trials, fails=7)
            if args.keep:
                print(f"run directory: {run_dir}")
        report, _ = report_seconds(sevro, [str(run_dir)], args.repeats)
        out = Path(tmp) / "view"
        seconds = generate_seconds(sevro, run_dir, out, args.repeats)
        size = (out / "index.html").stat().st_size
        summary, trial = open_seconds(args.chromium, out / "index.html", args.repeats)
    ok = seconds <= BUDGET_S and summary <= OPEN_BUDGET_S
    print(f"sevro report on the same run (s)       {report:8.3f}")
    print(f"sevro view, generate (s)               {seconds:8.3f}   budget {BUDGET_S:6.3f}")
    print(f"  page size (MB)                       {size / 1e6:8.1f}")
    print(f"open in Chromium, summary visible (s)  {summary:8.3f}   budget {OPEN_BUDGET_S:6.3f}")
    print(f"open a case, then one trial (s)        {trial:8.3f}")
    print("ok" if ok else "OVER")
    return 1 if (args.check and not ok) else 0


if __name__ == "__main__":
    sys.exit(main())
