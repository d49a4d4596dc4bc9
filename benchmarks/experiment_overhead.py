"""What an experiment costs over the same trials run as plain cases, and how fast its report is.

The experiment: 2 arms (no skill; a three-file skill) x 20 cases x 10 repetitions = 400 trials on
the scripted host (an inline fixture of three files, a read of the skill, one `sevro.regex`
check), `--jobs 1`, in-process. The plain run: the same 400 trials as 40 cases x 10 trials, the
candidate's copy of each case carrying the skill in its fixture files (how users had to do it).
Rounds alternate plain and experiment after a warm-up that pays the one-off imports, and the
figure is the median over rounds of (experiment - plain) / 400. The report is timed as fresh
``sevro report RUN_DIR`` processes on the experiment's run directory.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from overhead import command_seconds, print_budgets  # this directory is on sys.path

BUDGET_TRIAL_MS = 5.0
BUDGET_REPORT_S = 1.0
CASES = 20
REPETITIONS = 10
SKILL_DIR = ".agents/skills/bench"
SKILL = "---\nname: bench\ndescription: Benchmark skill.\n---\nReply with ready.\n"
RESOURCES = {"reference.md": "# Reference\n" + "x" * 2000 + "\n", "scripts/run.sh": "echo ok\n"}
HOST = {
    "format": "sevro.scripted-host.v1",
    "default": {
        "turns": [[{"read": {"path": f"{SKILL_DIR}/SKILL.md"}}, {"reply": {"text": "ready"}}]]
    },
}


def case(case_id: str, skill: bool) -> dict[str, Any]:
    files = {"README.md": "# bench\n", "src/app.py": "print('hi')\n", "VERSION": "1.0.0\n"}
    if skill:
        files[f"{SKILL_DIR}/SKILL.md"] = SKILL
        files.update({f"{SKILL_DIR}/{k}": v for k, v in RESOURCES.items()})
    return {
        "id": case_id,
        "prompt": "Reply with ready.",
        "fixture": {"files": files},
        "checks": [{"id": "ready", "grader": "sevro.regex", "configuration": {"pattern": "ready"}}],
        "requiredEvidence": [],
    }


def write_inputs(root: Path) -> None:
    bundle = root / "skills" / "bench"
    (bundle / "scripts").mkdir(parents=True)
    (bundle / "SKILL.md").write_text(SKILL)
    for name, text in RESOURCES.items():
        (bundle / name).write_text(text)
    (root / "cases").mkdir()
    (root / "plain").mkdir()
    for index in range(CASES):
        (root / "cases" / f"c{index:02}.json").write_text(json.dumps(case(f"c{index:02}", False)))
        for suffix, skill in (("a", False), ("b", True)):
            plain = case(f"c{index:02}{suffix}", skill)
            (root / "plain" / f"c{index:02}{suffix}.json").write_text(json.dumps(plain))
    experiment = {
        "format": "sevro.experiment.v1",
        "arms": {
            "baseline": {"skills": [], "target": None, "context": []},
            "candidate": {"skills": ["skills/bench"], "target": "bench", "context": []},
        },
        "cases": ["cases"],
        "repetitions": REPETITIONS,
    }
    (root / "experiment.json").write_text(json.dumps(experiment))


def run_seconds(root: Path, results: Path, *, experiment: bool, repetitions: int) -> float:
    """Plan and execute one run in-process; the wall time of ``execute`` only."""
    from attrs import evolve

    from sevro_core.plugin.manager import load_plugins
    from sevro_core.plugin.protocols import HostOptions
    from sevro_core.run.experiment import load_experiment
    from sevro_core.run.loading import load_cases
    from sevro_core.run.planning import RunSettings, plan_run
    from sevro_core.run.runner import execute

    settings = RunSettings(
        trials=repetitions,
        threshold=1.0,
        jobs=1,
        dry=False,
        condition="passive",
        results_root=results,
        project_root=root / "project",
        host="scripted",
        host_options=HostOptions(config=HOST),
    )
    if experiment:
        design, cases = load_experiment(root / "experiment.json", repetitions)
        settings = evolve(settings, experiment=design)
    else:
        cases = load_cases([root / "plain"])
    plan = plan_run(cases, load_plugins(), settings)
    started = time.perf_counter()
    outcome = execute(plan)
    elapsed = time.perf_counter() - started
    assert outcome.exit_code in (0, 1), outcome.result
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--check", action="store_true", help="exit 1 when over budget")
    args = parser.parse_args()
    from sevro_core.logs import configure

    configure()
    trials = 2 * CASES * REPETITIONS
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "project").mkdir()
        write_inputs(root)
        run_seconds(root, root / "warm", experiment=True, repetitions=1)  # one-off imports
        deltas, plain_ms, experiment_ms = [], [], []
        for index in range(args.rounds):
            plain = run_seconds(root, root / f"p{index}", experiment=False, repetitions=10)
            experiment = run_seconds(root, root / f"e{index}", experiment=True, repetitions=10)
            plain_ms.append(plain / trials * 1000)
            experiment_ms.append(experiment / trials * 1000)
            deltas.append((experiment - plain) / trials * 1000)
        run_dir = next(p for p in (root / "e0").iterdir() if (p / "run.json").is_file())
        sevro = str(Path(sys.executable).parent / "sevro")
        report_s = command_seconds([sevro, "report", str(run_dir)], root, 7)
    delta = statistics.median(deltas)
    for name, values in (("plain trial (ms)", plain_ms), ("experiment trial (ms)", experiment_ms)):
        rounds = ", ".join(f"{v:.2f}" for v in values)
        print(f"{name:36} {statistics.median(values):8.3f}   rounds {rounds}")
    rows = [
        ("experiment overhead per trial (ms)", delta, BUDGET_TRIAL_MS),
        ("sevro report of the experiment (s)", report_s, BUDGET_REPORT_S),
    ]
    over = print_budgets(rows)
    return 1 if (args.check and over) else 0


if __name__ == "__main__":
    sys.exit(main())
