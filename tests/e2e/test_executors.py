"""Executors are plugins: the built-in local pool is the default, a third-party executor given
with ``--executor`` (and its own flag) really runs the trials, and an unknown one is refused
before anything runs. Which executor ran is recorded, never part of the identity."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from sevro_core.testing import SevroProject, require_sandbox
from tests.e2e.helpers import assert_valid_evidence, load, notes_experiment, regex_check

COUNTING_EXECUTOR = textwrap.dedent("""
    import json
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from sevro_core.api import HostSetting, hookimpl


    class Pool:
        def __init__(self, options):
            self.log = options.settings["acme.executorLog"]
            self.workers = options.workers
            self.threads = ThreadPoolExecutor(max_workers=options.workers)
            self.lock = threading.Lock()

        def submit(self, task):
            line = {"unit": task.unit, "trial": task.trial, "workers": self.workers}
            with self.lock, open(self.log, "a") as log:
                log.write(json.dumps(line) + "\\n")
            return self.threads.submit(task.run)

        def shutdown(self):
            self.threads.shutdown(wait=True)


    class Counting:
        id = "acme.executor.counting"
        version = "0.3.0"
        capabilities = frozenset()
        requires = frozenset()
        settings = (
            HostSetting("acme.executorLog", "--acme-executor-log", "Submission log.", "path"),
        )

        def start(self, options):
            return Pool(options)


    @hookimpl
    def sevro_register_executors(register):
        register(Counting())
""")


def _plugin(project: SevroProject) -> Path:
    path = project.root / "acme_executor.py"
    path.write_text(COUNTING_EXECUTOR)
    return path


def _submissions(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def _outcome(result: dict[str, Any]) -> list[Any]:
    """A result without its timings, paths and run id: what must not depend on the executor."""
    return [
        (c["caseId"], c.get("arm"), c["passedTrials"], c["task"], [t["task"] for t in c["trials"]])
        for c in result["cases"]
    ]


def _run(project: SevroProject, results: str, *args: str | Path) -> Any:
    """``sevro run`` into its own results root outside the project (whose digest is part of
    the identity and must be the same for every run compared)."""
    return project.sevro("run", *args, "--json", "--results-root", project.root.parent / results)


def test_local_executor_is_the_default_and_recorded(sevro_project: SevroProject) -> None:
    case = sevro_project.case(checks=[regex_check("r", "^ok$")])
    host = sevro_project.script(default=[[{"reply": {"text": "ok"}}]])
    default = _run(sevro_project, "a", case, "--host-config", host, "--trials", "2")
    assert default.exit_code == 0, default.stderr
    run = assert_valid_evidence(default.json())
    assert run["executor"] == {"id": "sevro.executor.local", "version": "1.0.0"}
    for name in ("local", "sevro.executor.local"):
        named = _run(sevro_project, name, case, "--host-config", host, "--trials", "2")
        assert named.exit_code == 0, named.stderr
        again = load(named.json()["evidencePath"])
        assert again["executor"] == run["executor"]
        assert again["evaluationIdentity"] == run["evaluationIdentity"]
        assert _outcome(named.json()) == _outcome(default.json())


def test_a_plugin_executor_runs_every_trial(sevro_project: SevroProject) -> None:
    """Positive control: the executor's own log counts one submission per trial, with its own
    flag's value, and the results equal the local executor's up to timings."""
    plugin, log = _plugin(sevro_project), sevro_project.root.parent / "submissions.jsonl"
    first = sevro_project.case("one.json", id="one", checks=[regex_check("r", "^trial [12]$")])
    second = sevro_project.case("two.json", id="two", checks=[regex_check("r", "^trial 1$")])
    host = sevro_project.script(default=[[{"reply": {"text": "trial {{sevro.trial}}"}}]])
    common = (first, second, "--host-config", host, "--trials", "3", "--plugin", plugin)
    common += ("--jobs", "2")  # --jobs is part of the evaluated configuration, the executor not
    local = _run(sevro_project, "local", *common)
    assert local.exit_code == 1, local.stderr  # some trials fail: the exit rules are unchanged
    assert not log.exists()
    counted = _run(
        sevro_project,
        "acme",
        *common,
        *("--executor", "acme.executor.counting", "--acme-executor-log", log),
    )
    assert counted.exit_code == 1, counted.stderr
    submitted = _submissions(log)
    assert sorted((s["unit"], s["trial"]) for s in submitted) == [
        (unit, trial) for unit in ("one", "two") for trial in (1, 2, 3)
    ]
    assert {s["workers"] for s in submitted} == {2}
    run = assert_valid_evidence(counted.json())
    assert run["executor"] == {"id": "acme.executor.counting", "version": "0.3.0"}
    assert run["evaluationIdentity"] == load(local.json()["evidencePath"])["evaluationIdentity"]
    assert _outcome(counted.json()) == _outcome(local.json())


def test_a_plugin_executor_runs_an_experiment_in_the_owners_order(
    sevro_project: SevroProject,
) -> None:
    require_sandbox()
    project = notes_experiment(sevro_project)
    plugin, log = _plugin(project), project.root.parent / "submissions.jsonl"
    common = ("cases", "--skill", "skills/notes", "--host-config", "host.json", "--plugin", plugin)
    common += ("--baseline", "none", "--trials", "2")
    local = _run(project, "local", *common)
    assert local.exit_code == 1, local.stderr  # the baseline arm fails, as before
    counted = _run(
        project, "acme", *common, "--executor", "acme.executor.counting", "--acme-executor-log", log
    )
    assert counted.exit_code == 1, counted.stderr
    assert _outcome(counted.json()) == _outcome(local.json())
    run = assert_valid_evidence(counted.json())
    assert run["executor"]["id"] == "acme.executor.counting"
    assert run["evaluationIdentity"] == load(local.json()["evidencePath"])["evaluationIdentity"]
    # one worker (--jobs 1): the owner's work order, pairs back to back, the first arm rotating
    assert [(s["unit"], s["trial"]) for s in _submissions(log)] == [
        ("notes@baseline", 1),
        ("notes@candidate", 1),
        ("notes@candidate", 2),
        ("notes@baseline", 2),
    ]


def test_an_unknown_executor_or_a_foreign_flag_is_refused_before_anything_runs(
    sevro_project: SevroProject,
) -> None:
    """Negative controls: nothing is written, one line, exit 64."""
    plugin, log = _plugin(sevro_project), sevro_project.root.parent / "submissions.jsonl"
    case = sevro_project.case(checks=[regex_check("r", "^ok$")])
    host = sevro_project.script(default=[[{"reply": {"text": "ok"}}]])
    unknown = sevro_project.run(case, "--host-config", host, "--executor", "nope")
    assert unknown.exit_code == 64
    assert unknown.stderr == "sevro: error: --executor 'nope' is not installed; installed: local\n"
    listed = sevro_project.run(case, "--host-config", host, "--executor", "ray", "--plugin", plugin)
    assert listed.exit_code == 64
    assert "installed: acme.executor.counting, local\n" in listed.stderr
    foreign = sevro_project.run(
        case, "--host-config", host, "--plugin", plugin, "--acme-executor-log", log
    )
    assert foreign.exit_code == 64
    assert foreign.stderr == (
        "sevro: error: --acme-executor-log needs --executor acme.executor.counting\n"
    )
    assert not sevro_project.results.exists() and not log.exists()


def test_plugins_lists_executors(sevro_project: SevroProject) -> None:
    plugin = _plugin(sevro_project)
    listed = sevro_project.sevro("plugins", "--json", "--plugin", plugin)
    assert listed.exit_code == 0, listed.stderr
    executors = {
        r["id"]: p["source"]
        for p in listed.json()["plugins"]
        for r in p["registers"]
        if r["kind"] == "executor"
    }
    assert executors == {"sevro.executor.local": "entry-point", "acme.executor.counting": "file"}
    table = sevro_project.sevro("plugins")
    assert "executor" in table.stdout and "sevro.executor.local" in table.stdout
    shown = sevro_project.sevro("run", "--help", "--plugin", plugin)
    assert "Executor settings" in shown.stdout and "--acme-executor-log" in shown.stdout


def test_a_run_settings_file_chooses_the_executor(sevro_project: SevroProject) -> None:
    plugin, log = _plugin(sevro_project), sevro_project.root.parent / "submissions.jsonl"
    case = sevro_project.case(checks=[regex_check("r", "^ok$")])
    host = sevro_project.script(default=[[{"reply": {"text": "ok"}}]])
    chosen = sevro_project.write_json(
        "settings.json", {"format": "sevro.run-settings.v1", "executor": "acme.executor.counting"}
    )
    args = (case, "--host-config", host, "--plugin", plugin, "--run-settings-file", chosen)
    done = sevro_project.run(*args, "--acme-executor-log", log)
    assert done.exit_code == 0, done.stderr
    assert [(s["unit"], s["trial"]) for s in _submissions(log)] == [("example", 1)]
    assert load(done.json()["evidencePath"])["executor"]["id"] == "acme.executor.counting"
    # the command line beats the file: its flag now needs the executor the file named
    local = sevro_project.run(*args, "--executor", "local", "--acme-executor-log", log)
    assert local.exit_code == 64
    assert "--acme-executor-log needs --executor acme.executor.counting" in local.stderr
    unknown = sevro_project.write_json(
        "unknown.json", {"format": "sevro.run-settings.v1", "executor": "nope"}
    )
    refused = sevro_project.run(case, "--host-config", host, "--run-settings-file", unknown)
    assert refused.exit_code == 64 and "--executor 'nope' is not installed" in refused.stderr
