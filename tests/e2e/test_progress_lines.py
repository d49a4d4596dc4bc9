"""Off a terminal `sevro run` is never silent for long: trial lines at -v, status lines."""

from __future__ import annotations

import json
import re

from sevro_core.testing import SevroProject
from tests.e2e.helpers import regex_check

TRIAL_LINE = re.compile(
    r"^sevro: trial (\d)/2 finished: example #(\d) failed \(execution completed, grading "
    r"completed\) after [0-9.]+s: check said \(sevro\.regex\) failed: regex assertion failed$"
)
STATUS_LINE = re.compile(r"^sevro: (\d)/1 trials finished \((\d) passed\), [0-9.ms]+ elapsed$")


def test_one_line_per_finished_trial_at_v(sevro_project: SevroProject) -> None:
    case = sevro_project.case(checks=[regex_check("said", "^ok$")])
    host = sevro_project.script(default=[[{"reply": {"text": "no"}}]])
    done = sevro_project.run(
        case, "--host-config", host, "--trials", "2", "-v", "--status-interval", "0"
    )
    assert done.exit_code == 1, done.stderr
    lines = [m for line in done.stderr.splitlines() if (m := TRIAL_LINE.match(line))]
    assert sorted(m.group(1) for m in lines) == ["1", "2"]
    assert sorted(m.group(2) for m in lines) == ["1", "2"]
    quiet = sevro_project.run(case, "--host-config", host, "--status-interval", "0")
    assert "finished:" not in quiet.stderr, "per-trial lines only at -v"


def test_periodic_status_line_on_a_long_run(sevro_project: SevroProject) -> None:
    case = sevro_project.case(checks=[regex_check("said", "^ok$")])
    host = sevro_project.script(default=[[{"sleep": {"ms": 1500}}, {"reply": {"text": "ok"}}]])
    done = sevro_project.run(case, "--host-config", host, "--status-interval", "0.2")
    assert done.exit_code == 0, done.stderr
    status = [m for line in done.stderr.splitlines() if (m := STATUS_LINE.match(line))]
    assert status, done.stderr
    assert status[0].groups() == ("0", "0"), "the trial sleeps for longer than one interval"


def test_no_status_line_before_the_first_interval(sevro_project: SevroProject) -> None:
    case = sevro_project.case(checks=[regex_check("said", "^ok$")])
    host = sevro_project.script(default=[[{"reply": {"text": "ok"}}]])
    done = sevro_project.run(case, "--host-config", host, "--status-interval", "600")
    assert done.exit_code == 0, done.stderr
    assert "trials finished" not in done.stderr


def test_bad_status_interval_is_refused(sevro_project: SevroProject) -> None:
    case = sevro_project.case()
    for value in ("-1", "nan", "100000"):
        done = sevro_project.sevro("run", case, "--status-interval", value)
        assert done.exit_code == 64, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_json_log_format_gets_json_progress_events(sevro_project: SevroProject) -> None:
    case = sevro_project.case(checks=[regex_check("said", "^ok$")])
    host = sevro_project.script(default=[[{"sleep": {"ms": 1000}}, {"reply": {"text": "no"}}]])
    done = sevro_project.run(
        case, "--host-config", host, "-v", "--log-format", "json", "--status-interval", "0.2"
    )
    assert done.exit_code == 1, done.stderr
    events = [json.loads(line) for line in done.stderr.splitlines()]
    trial = [e for e in events if e["event"] == "trial progress"]
    assert len(trial) == 1 and trial[0]["task"] == "failed"
    assert trial[0]["reason"] == "check said (sevro.regex) failed: regex assertion failed"
    assert any(e["event"] == "run status" and e["total"] == 1 for e in events)
