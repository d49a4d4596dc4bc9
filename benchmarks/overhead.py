"""Measure sevro's engine overhead per trial and its command start-up times.

Engine overhead: the scripted host, an inline fixture of three files and four output checks
(regex, json, schema, output), run in-process with ``--jobs 1``. The per-trial figure is the
slope between a run of N trials and a run of 1 trial, so planning, provenance and run.json are
excluded; everything a trial costs (workspace, fixture, host, four graders, schema validation,
fsynced evidence, cleanup) is included.

Start-up: wall time of ``sevro --help`` and of a complete one-trial ``sevro run``, each the
median of repeated fresh processes.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BUDGET_TRIAL_MS = 12.0
BUDGET_RUN_S = 0.5
BUDGET_HELP_S = 0.3

CASE = {
    "id": "bench",
    "prompt": "Reply with the status document for {{sevro.workspace}}.",
    "fixture": {
        "files": {
            "README.md": "# bench\n",
            "src/app.py": "print('hi')\n",
            "data/status.json": '{"status": "ok"}\n',
        }
    },
    "checks": [
        {
            "id": "regex",
            "grader": "sevro.regex",
            "configuration": {"pattern": "status", "flags": "i"},
        },
        {
            "id": "json",
            "grader": "sevro.json",
            "configuration": {"pointer": "/status", "equals": "ok"},
        },
        {
            "id": "schema",
            "grader": "sevro.schema",
            "configuration": {"schema": {"type": "object", "required": ["status"]}},
        },
        {
            "id": "output",
            "grader": "sevro.output",
            "configuration": {"jsonPath": "/count", "expectJson": 3, "notRegex": "error"},
        },
    ],
    "requiredEvidence": [],
}
HOST = {
    "format": "sevro.scripted-host.v1",
    "default": {
        "turns": [[{"reply": {"text": 'Status:\n```json\n{"status": "ok", "count": 3}\n```'}}]]
    },
}


def engine_run_seconds(root: Path, trials: int) -> float:
    from sevro_core.plugin.manager import load_plugins
    from sevro_core.plugin.protocols import HostOptions
    from sevro_core.run.planning import RunSettings
    from sevro_core.run.runner import execute, prepare

    settings = RunSettings(
        trials=trials,
        threshold=1.0,
        jobs=1,
        dry=False,
        condition="passive",
        results_root=root / "results",
        project_root=root,
        host="scripted",
        host_options=HostOptions(config=HOST),
        workspace_root=None,
    )
    plan = prepare([root / "case.json"], load_plugins(), settings)
    started = time.perf_counter()
    outcome = execute(plan)
    elapsed = time.perf_counter() - started
    assert outcome.exit_code == 0, outcome.result
    return elapsed


def per_trial_ms(root: Path, trials: int, repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        one = engine_run_seconds(root, 1)
        many = engine_run_seconds(root, trials)
        samples.append((many - one) / (trials - 1) * 1000)
    return statistics.median(samples)


def command_seconds(argv: list[str], cwd: Path, repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run(argv, cwd=cwd, check=True, capture_output=True)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--check", action="store_true", help="exit 1 when over budget")
    args = parser.parse_args()
    from sevro_core.logs import configure

    configure()  # warnings only, as the CLI does by default
    sevro = str(Path(sys.executable).parent / "sevro")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "case.json").write_text(json.dumps(CASE))
        (root / "host.json").write_text(json.dumps(HOST))
        trial_ms = per_trial_ms(root, args.trials, args.repeats)
        help_s = command_seconds([sevro, "--help"], root, 10)
        run_s = command_seconds(
            [sevro, "run", "case.json", "--host-config", "host.json", "--results-root", "results"],
            root,
            10,
        )
    rows = [
        ("engine overhead per trial (ms)", trial_ms, BUDGET_TRIAL_MS),
        ("sevro run, one trial (s)", run_s, BUDGET_RUN_S),
        ("sevro --help (s)", help_s, BUDGET_HELP_S),
    ]
    over = print_budgets(rows)
    return 1 if (args.check and over) else 0


def print_budgets(rows: list[tuple[str, float, float]]) -> bool:
    """Print each measure against its budget; whether any is over (the benchmarks share it)."""
    width = max(len(name) for name, _, _ in rows)
    over = False
    for name, value, budget in rows:
        ok = value <= budget
        over |= not ok
        print(f"{name:{width}} {value:8.3f}   budget {budget:6.3f}   {'ok' if ok else 'OVER'}")
    return over


if __name__ == "__main__":
    sys.exit(main())
