"""Every ``sevro`` command in Sevro contract seeds 000-002 runs as written (issue 19 item 5).

The commands come from ``data/seed_commands/seed-blocks.txt``, a verbatim copy of the seeds'
shell blocks (``extract.py`` says how it was made); ``commands.json`` lists each with the
substitutions that make it runnable here (placeholders, ``/absolute/path``, Sevro's
``bun src/cli.ts`` development entry point) and what it does today. The commands run in
``bash`` through the installed ``sevro`` against the real Codex and Claude Code CLIs and the
mock model server; a command whose part of Sevro is not built yet must fail exactly as listed,
so that list cannot rot silently.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sevro_core.testing import SevroProject, require_tool
from sevro_core.testing.mockmodel import Message, reply
from sevro_hosts_claude.testing import require_claude
from sevro_hosts_codex.testing import require_codex
from tests.e2e.helpers import assert_valid_evidence
from tests.e2e.test_sevro_flags import ADAPTER
from tests.extensions.conftest import REFERENCE

DATA = Path(__file__).parent / "data" / "seed_commands"
ANSWER = "Run `bun run dev`; the application listens on port 3000."
LOGIN = {
    "accessToken": "sk-ant-oat01-seed-0123456789",
    "expiresAt": None,
    "scopes": ["user:inference"],
}
pytestmark = pytest.mark.slow


def seed_blocks() -> dict[str, str]:
    """``## <seed> line <n>`` heading -> the shell block under it, verbatim."""
    text = (DATA / "seed-blocks.txt").read_text()
    found = re.findall(r"^## (\d{3} line \d+)\n\n```sh\n(.*?)\n```$", text, re.M | re.S)
    return dict(found)


def listed() -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = json.loads((DATA / "commands.json").read_text())["commands"]
    return entries


def _is_command(block: str) -> bool:
    return block.startswith(("sevro ", "bun src/cli.ts "))


def expected_entries(blocks: dict[str, str]) -> set[tuple[str, str | None]]:
    """What the seeds hold: each command block; each flag fragment inside every bundled-host
    command it says it replaces ``--case-file`` in; and the ``--dry`` first run seed 000 advises."""
    commands = {name for name, block in blocks.items() if _is_command(block)}
    fragments = {name for name, block in blocks.items() if block.startswith("--")}
    hosted = {n for n in commands if "--host " in blocks[n] and n.startswith("001")}
    out: set[tuple[str, str | None]] = {(name, None) for name in commands}
    out |= {(fragment, f"in {name}") for fragment in fragments for name in hosted}
    out.add(("000 line 521", "dry"))
    return out


def command_text(entry: dict[str, Any], blocks: dict[str, str], values: dict[str, str]) -> str:
    """The entry's command with its substitutions (each must apply) and the model route."""
    text = blocks[entry["block"]]
    variant = entry["variant"]
    if variant is not None and variant.startswith("in "):
        fragment = "\n".join(f"  {line}" for line in text.splitlines())
        base = blocks[variant.removeprefix("in ")]
        case_line = "  --case-file /absolute/path/case.json \\"
        assert case_line in base.splitlines()
        text = base.replace(case_line, fragment + " \\", 1)
    for old, new in entry["substitutions"]:
        assert old in text, f"{entry['block']}: substitution {old!r} no longer applies"
        text = text.replace(old, new.format(**values))
    if "--host " in text:
        text = text.replace("sevro run", f"sevro run --host-config {values['host_config']}", 1)
    return text


def test_the_fixture_lists_every_seed_command_once() -> None:
    blocks = seed_blocks()
    assert len(blocks) == 8, "seed-blocks.txt holds the 8 shell blocks of seeds 000-002"
    entries = [(e["block"], e["variant"]) for e in listed()]
    assert len(entries) == len(set(entries))
    assert set(entries) == expected_entries(blocks)
    for entry in listed():
        assert entry["expect"] in ("runs", "pending")
        assert (entry["expect"] == "pending") == ("reason" in entry and "fails" in entry)


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def _skill_evals(base: Path) -> Path:
    """Seed 000's ``skill-evals`` layout: the case, the source map and a committed repo."""
    root = base / "skill-evals"
    (root / "cases").mkdir(parents=True)
    (root / "cases" / "explain-startup.json").write_text(
        (DATA / "explain-startup.json").read_text()
    )
    repo = root / "fixture-repo"
    skill = repo / ".agents" / "skills" / "my-guide"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: my-guide\ndescription: Explains the repo.\n---\n")
    (repo / "README.md").write_text("`bun run dev` starts the application on port 3000.\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-qm", "init")
    (root / "sources.json").write_text(json.dumps({"fixture-repo": repo.as_uri()}))
    return root


def _absolute_path_dir(base: Path) -> Path:
    """What ``/absolute/path`` names in seed 001: a case, the adapter, project and results."""
    root = base / "absolute-path"
    (root / "project").mkdir(parents=True)
    case = {
        "id": "basic-graded",
        "prompt": "Return ready.",
        "fixture": {"files": {"README.md": "fixture\n"}},
        "checks": [
            {"id": "ready", "grader": "sevro.regex", "configuration": {"pattern": "^ready$"}}
        ],
        "requiredEvidence": [],
    }
    (root / "case.json").write_text(json.dumps(case))
    (root / "host_adapter.py").write_text(ADAPTER)
    (root / "auth.json").write_text(json.dumps({"OPENAI_API_KEY": "sk-seed-test-0123456789"}))
    # seed 001's extension: the Node reference extension (its case example-case), as argv
    node = os.path.realpath(require_tool("node"))
    (root / "extension-command.json").write_text(json.dumps([node, str(REFERENCE)]))
    return root


def _environment(base: Path, codex: str) -> dict[str, str]:
    home, codex_home = base / "home", base / "codex-home"
    home.mkdir()
    codex_home.mkdir()
    (codex_home / "auth.json").write_text(json.dumps({"OPENAI_API_KEY": "sk-seed-test-0123456"}))
    # The Claude login seed 001's command finds without a flag (Sevro reads the macOS keychain;
    # on Linux Claude Code saves it in ~/.claude/.credentials.json, the route before it).
    (home / ".claude").mkdir()
    (home / ".claude" / ".credentials.json").write_text(json.dumps({"claudeAiOauth": LOGIN}))
    path = [str(Path(sys.executable).parent), str(Path(codex).parent), "/usr/bin", "/bin"]
    unset = dict.fromkeys(("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CONFIG_DIR"), "")
    return {
        **os.environ,
        **unset,
        "HOME": str(home),
        "CODEX_HOME": str(codex_home),
        "PATH": ":".join(path),
    }


def _bash(text: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", text],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _host_config(project: SevroProject, name: str, server: Any, fmt: str) -> Path:
    config: dict[str, Any] = {"format": fmt, "turnTimeoutSeconds": 60}
    if fmt == "sevro.codex-host.v1":
        config["modelProvider"] = {"id": "mock", "baseUrl": server.base_url, "requestMaxRetries": 0}
    else:
        config |= {"baseUrl": server.origin, "maxRetries": 0}
    return project.write_json(name, config)


def _checked(entry: dict[str, Any], done: subprocess.CompletedProcess[str], cwd: Path) -> None:
    """A runnable command's outcome, by what it is."""
    where = f"{entry['block']} {entry['variant'] or ''}: {done.stderr}"
    assert done.returncode == 0, where
    assert "Traceback" not in done.stderr
    if entry["block"] == "000 line 539":
        assert "my-guide-explain-startup" in done.stdout
        return
    output = (cwd / "result.json").read_text() if "> result.json" in done.args[2] else done.stdout
    result = json.loads(output)
    run = assert_valid_evidence(result)
    dry = entry["variant"] == "dry"
    assert result["task"]["verdict"] == ("not_assessed" if dry else "passed"), where
    assert run["configuration"]["redacted"]["executionMode"] == ("dry" if dry else "executed")


def test_every_seed_command_runs_or_fails_as_listed(
    sevro_project: SevroProject, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    from sevro_core.testing.mockmodel import AnthropicMessages

    codex, claude = require_codex(), require_claude()
    blocks = seed_blocks()
    evals, absolute = _skill_evals(tmp_path), _absolute_path_dir(tmp_path)
    env = _environment(tmp_path, codex)
    replies = {"000 line 521": 3, "001 line 117": 1}
    for entry in listed():
        # a flag fragment runs in the bundled-host command it names (seed 001's extension)
        base = (entry["variant"] or "").removeprefix("in ") or entry["block"]
        count = replies.get(base, 0) if entry["variant"] != "dry" else 0
        server = mock_model([reply(Message(ANSWER if count > 1 else "ready"))] * count)
        claude_runs = base == "001 line 191"
        claude_server = mock_model(
            [reply(Message("ready"))] * claude_runs, protocols=(AnthropicMessages(),)
        )
        values = {
            "dir": str(absolute),
            "codex": codex,
            "claude": claude,
            "extension": str(REFERENCE),
            "host_config": shlex.quote(
                str(
                    _host_config(sevro_project, "codex.json", server, "sevro.codex-host.v1")
                    if "codex" in blocks[entry["block"]] or "117" in (entry["variant"] or "")
                    else _host_config(
                        sevro_project, "claude.json", claude_server, "sevro.claude-host.v1"
                    )
                )
            ),
        }
        cwd = evals if entry["block"].startswith("000") else absolute
        done = _bash(command_text(entry, blocks, values), cwd, env)
        if entry["expect"] == "runs":
            _checked(entry, done, cwd)
            assert server.remaining == 0 and not server.unexpected, entry["block"]
        else:
            code, message = entry["fails"]
            assert (done.returncode, message in done.stderr) == (code, True), done.stderr
            assert "Traceback" not in done.stderr
        if claude_runs:  # with the saved login, which reaches only the model's headers
            (request,) = claude_server.requests
            assert request.headers["authorization"] == f"Bearer {LOGIN['accessToken']}"
            assert LOGIN["accessToken"] not in json.dumps(json.loads(done.stdout))
        else:
            assert not claude_server.requests
