"""The live display through the real CLI on a pseudo-terminal: counts, arms and times update,
the terminal is left clean, and ``--json``, ``TERM=dumb`` and pipes see no display."""

from __future__ import annotations

import json
import os
import pty
import re
import signal
import threading
from collections.abc import Sequence
from pathlib import Path

from sevro_core.testing import CliResult, SevroProject, require_sandbox, start_sevro
from tests.e2e.helpers import regex_check

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
HIDE_CURSOR, SHOW_CURSOR = "\x1b[?25l", "\x1b[?25h"


def on_terminal(
    project: SevroProject,
    args: Sequence[object],
    *,
    term: str = "xterm",
    interrupt_on: str | None = None,
) -> tuple[CliResult, str]:
    """Run ``sevro run ARGS`` with stdin and stderr on a pseudo-terminal (stdout piped); what
    the terminal showed, raw. With ``interrupt_on``, Ctrl-C once the terminal shows that."""
    controller, terminal = pty.openpty()
    seen = bytearray()
    shown = threading.Event()
    with start_sevro(
        ["run", *args, "--results-root", project.results],
        cwd=project.root,
        env={"TERM": term, "COLUMNS": "100", "NO_COLOR": "1"},
        stdin=terminal,
        stderr=terminal,
    ) as process:
        os.close(terminal)

        def read() -> None:
            while True:
                try:
                    chunk = os.read(controller, 4096)
                except OSError:
                    return
                if not chunk:
                    return
                seen.extend(chunk)
                if interrupt_on is not None and interrupt_on.encode() in seen:
                    shown.set()

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        if interrupt_on is not None:
            assert shown.wait(60), bytes(seen).decode(errors="replace")
            process.signal_group(signal.SIGINT)
        done = process.finish(timeout=60)
        reader.join(timeout=10)
    os.close(controller)
    return done, bytes(seen).decode(errors="replace")


def rows(screen: str, label: str) -> list[list[str]]:
    """Every frame's row for ``label`` (escape codes removed), in order."""
    plain = ANSI.sub("\n", screen)
    return [line.split()[1:] for line in plain.splitlines() if line.split()[:1] == [label]]


def slow_case(project: SevroProject, ms: int = 400) -> tuple[Path, Path]:
    case = project.case(checks=[regex_check("r", "^ok$")])
    host = project.script(default=[[{"sleep": {"ms": ms}}, {"reply": {"text": "ok"}}]])
    return case, host


def test_live_table_counts_up_and_ends_with_a_final_table(sevro_project: SevroProject) -> None:
    case, host = slow_case(sevro_project)
    args = [case, "--host-config", host, "--trials", "4", "--jobs", "1"]
    done, screen = on_terminal(sevro_project, args)
    assert done.exit_code == 0, screen
    counted = [r[0] for r in rows(screen, "run")]
    assert counted[0] == "0/4" and counted[-1] == "4/4", counted
    assert {"1/4", "2/4", "3/4"} & set(counted), counted  # frames in between were drawn
    assert "remaining unknown" in screen and re.search(r"~[\d.]+s left", screen)
    assert screen.count(HIDE_CURSOR) == 1 and screen.rindex(SHOW_CURSOR) > screen.index(HIDE_CURSOR)
    final = ANSI.sub("", screen[screen.rindex(SHOW_CURSOR) :])
    assert "sevro run finished" in final and rows(final, "run") == [["4/4", "4", "0", "0"]]
    assert "4/4 trials" in final and "left" not in final
    assert done.stdout.splitlines()[0].startswith("case")  # the summary on stdout is unchanged


def test_json_on_a_terminal_keeps_stdout_one_document(sevro_project: SevroProject) -> None:
    case, host = slow_case(sevro_project, ms=100)
    done, screen = on_terminal(sevro_project, [case, "--host-config", host, "--json"])
    assert done.exit_code == 0
    assert json.loads(done.stdout)["exitCode"] == 0 and done.stdout.count("\n") == 1
    assert "sevro run" not in screen and HIDE_CURSOR not in screen, screen


def test_a_dumb_terminal_and_a_pipe_get_no_live_table(sevro_project: SevroProject) -> None:
    case, host = slow_case(sevro_project, ms=100)
    args = [case, "--host-config", host, "--trials", "2"]
    done, screen = on_terminal(sevro_project, args, term="dumb")
    assert done.exit_code == 0
    assert "sevro run" not in screen and HIDE_CURSOR not in screen, screen
    piped = sevro_project.sevro("run", *args, "--results-root", sevro_project.results)
    assert piped.exit_code == 0 and piped.stderr == ""  # pipes: exactly as before
    assert piped.stdout.splitlines()[0].startswith("case")


def test_ctrl_c_leaves_the_terminal_clean(sevro_project: SevroProject) -> None:
    case, host = slow_case(sevro_project, ms=3000)
    args = [case, "--host-config", host, "--trials", "3", "--jobs", "1", "-v"]
    done, screen = on_terminal(sevro_project, args, interrupt_on="remaining unknown")
    assert done.exit_code == 130, screen
    # the log's warning is printed above the table (the table erased first), not into it
    log_line = r"(?:\x1b\[2K|\n)(?:\x1b\[[0-9;]*m)*\d{4}-\d\d-\d\dT[^\n]*cancelling run"
    assert re.search(log_line, screen), screen
    assert screen.rindex(SHOW_CURSOR) > screen.rindex(HIDE_CURSOR)
    final = ANSI.sub("", screen[screen.rindex(SHOW_CURSOR) :])
    assert "sevro run stopped" in final, final


def test_an_experiment_shows_a_row_per_arm(sevro_project: SevroProject) -> None:
    require_sandbox()
    sevro_project.skill("skills/notes", "notes", "Release notes with a Highlights heading.")
    case, host = slow_case(sevro_project, ms=100)
    args = [case, "--skill", "skills/notes", "--baseline", "none", "--host-config", host]
    done, screen = on_terminal(sevro_project, [*args, "--trials", "2"])
    assert done.exit_code in (0, 1), screen
    final = ANSI.sub("", screen[screen.rindex(SHOW_CURSOR) :])
    assert rows(final, "baseline") == [["2/2", "2", "0", "0"]], final
    assert rows(final, "candidate") == [["2/2", "2", "0", "0"]], final
    assert "4/4 trials" in final
    assert len(rows(screen, "candidate")) >= 2  # live frames before the final table
