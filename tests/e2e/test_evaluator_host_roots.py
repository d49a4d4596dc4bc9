"""An agent CLI's own sandbox settings deny the evaluator directories too (issue 17, item 3):
a directory under a tree the CLI shows its commands (``/opt``, ``/usr``, ``/etc``) would
otherwise be readable by the agent. Judges keep the run's roots (they may read what checks
read). Dry runs: the configured candidate host records its protected roots in run.json."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from sevro_core.testing import SevroProject
from sevro_hosts_claude.testing import require_claude
from sevro_hosts_codex.testing import require_codex
from tests.core.evaluator_probes import evaluator_area
from tests.hosts_claude import helpers as claude
from tests.hosts_codex import helpers as codex

pytestmark = pytest.mark.slow


class _Server:
    """Only the address of a model server (a dry run reaches none)."""

    base_url = "http://127.0.0.1:9/v1"
    origin = "http://127.0.0.1:9"


def _roots(project: SevroProject, host: str, case: Path) -> list[str]:
    if host == "codex":
        args = [
            "--host", "codex", "--host-config", str(codex.host_config(project, _Server())),
            "--codex-bin", require_codex(), "--codex-api-key-env", codex.API_KEY_ENV,
        ]  # fmt: skip
        env = {codex.API_KEY_ENV: codex.API_KEY}
    else:
        args = claude.claude_args(project, require_claude(), _Server())
        env = {claude.API_KEY_ENV: claude.API_KEY}
    done = project.run(case, "--dry", *args, env=env)
    assert done.exit_code == 0, done.stdout + done.stderr
    (run,) = project.results.glob("*/run.json")
    document: dict[str, Any] = json.loads(run.read_text())
    shutil.rmtree(project.results)
    roots: list[str] = document["configuration"]["redacted"]["hostConfiguration"]["candidate"][
        "protectedRoots"
    ]
    return roots


@pytest.mark.parametrize("host", ["codex", "claude"])
def test_the_candidate_host_denies_the_evaluator_directories(
    sevro_project: SevroProject, tmp_path: Path, host: str
) -> None:
    case, gold, _ = evaluator_area(tmp_path / "area")
    assert str(gold) in _roots(sevro_project, host, case)
    plain = sevro_project.case()
    assert str(gold) not in _roots(sevro_project, host, plain), "the control: no evaluator"
