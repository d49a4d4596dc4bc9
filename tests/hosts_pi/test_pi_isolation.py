"""The pi host's isolation, proven by the escape attempts the Codex and Claude real-CLI tests
make (tests/hosts_codex/test_real_cli.py, tests/hosts_claude/test_real_cli.py), driven by the
real pi against the mock model: the model's scripted `bash` call and pi's own file tools try to
read the operator's home, the protected roots, the results and state roots and a peer
workspace, to write outside the workspace, to reach the network other than the model, to see
the credential, and to leave a process behind. pi has no inner sandbox: sevro's bubblewrap
sandbox (no network but the bridge to the model) is the boundary for commands and tools alike.

Every attempt prints an ``ESCAPED-<name>`` marker only when it succeeded; the markers are built
at run time so the command text never contains them. ``REACHED-<name>`` markers are the
controls: the script really ran, it could write its workspace and reach the model endpoint."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sevro_core.testing import SevroProject, require_sandbox
from sevro_core.testing.mockmodel import Message, ToolCall, reply
from sevro_hosts_pi.testing import require_pi
from tests.hosts_codex.helpers import retained_bytes, survivors
from tests.hosts_pi.qa_helpers import API_KEY, bash, run_pi, tool_outputs

pytestmark = pytest.mark.slow

READY = {"id": "ready", "grader": "sevro.regex", "configuration": {"pattern": "^ready$"}}
SECRETS = {
    "project": "PROJECT-SECRET-7f3a9c",
    "home": "HOME-SECRET-51d2e8",
    "home-skill": "USER-SKILL-SECRET-3c1d",
    "peer": "PEER-SECRET-0b6c44",
    "env": "ENV-SECRET-9e1f27",
    "state": "STATE-SECRET-d41a07",
}


@pytest.fixture
def pi() -> str:
    require_sandbox()
    return require_pi()


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A TCP listener on the host's loopback: a sandboxed command must not reach it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(4)
        sock.setblocking(False)
        yield sock


def escaped(name: str) -> str:
    return f"echo ESC''APED-{name}"


def reached(name: str) -> str:
    return f"echo REA''CHED-{name}"


def attempts(paths: dict[str, Path], ports: dict[str, int], marker: str) -> str:
    """One bash script: every escape attempt, each printing its marker only if it worked."""
    p = {name: str(path) for name, path in paths.items()}
    return "\n".join(
        [
            "set +e",
            f"echo inside > inside.txt && {reached('workspace')}",
            f"cat {p['project']}/secret.txt && {escaped('project')}",
            f"cat {p['project']}/case.json && {escaped('case-file')}",
            f"ls -a {p['results']} && {escaped('results')}",
            f"cat {p['state']}/planted.txt && {escaped('state')}",
            f"cat {p['home']}/.pi/agent/auth.json && {escaped('home')}",
            f"cat {p['home']}/.agents/skills/greet/SKILL.md && {escaped('home-skill')}",
            f"cat {p['workspaces']}/sevro-case-peer/notes.txt && {escaped('peer')}",
            f"echo \"peers:$(ls -a {p['workspaces']} 2>&1 | tr '\\n' ' ')\"",
            f"echo pwned > {p['project']}/pwned.txt && {escaped('write-project')}",
            # bubblewrap made this file's parents in the sandbox's own /tmp (a tmpfs, gone with
            # the sandbox) to mount the workspace: the write may succeed there, never outside
            f"echo pwned > {p['outside']}",
            # the network: the host's loopback and the model server itself are out of reach
            f"(exec 3<>/dev/tcp/127.0.0.1/{ports['listener']}) && {escaped('net-host')}",
            f"curl -sS -m 5 -o /dev/null http://127.0.0.1:{ports['listener']}/ "
            f"&& {escaped('net-curl')}",
            # the control: the model endpoint pi names (sevro's bridge in the sandbox) answers
            "bridge=$(grep -o '127.0.0.1:[0-9]*' \"$PI_CODING_AGENT_DIR/models.json\" "
            "| head -n 1 | cut -d: -f2)",
            f'(exec 3<>"/dev/tcp/127.0.0.1/$bridge") && {reached("bridge")}',
            # another model server on the host (the same loopback as the one the run names)
            f"curl -sS -m 5 -d '{{}}' http://127.0.0.1:{ports['decoy']}/v1/responses "
            f"&& {escaped('net-model')}",
            # the credential: not in any environment of the sandbox, nor in pi's files
            "env; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'",
            'grep -rs "$(printf %s sk-sevro-pi)" "$PI_CODING_AGENT_DIR" "$HOME" '
            f"&& {escaped('credential-file')}",
            # a process that detaches must end with the trial
            f"setsid -f {marker} >/dev/null 2>&1 </dev/null && {reached('detached')}",
            "true",
        ]
    )


def test_escape_attempts_fail_and_nothing_leaks(
    sevro_project: SevroProject,
    pi: str,
    mock_model: Callable[..., Any],
    listener: socket.socket,
    tmp_path: Path,
) -> None:
    (sevro_project.root / "secret.txt").write_text(SECRETS["project"])
    home = tmp_path / "operator-home"
    (home / ".pi" / "agent").mkdir(parents=True)
    (home / ".pi" / "agent" / "auth.json").write_text(json.dumps({"token": SECRETS["home"]}))
    skill = f"---\nname: greet\ndescription: {SECRETS['home-skill']}\n---\nHi.\n"
    (home / ".agents" / "skills" / "greet").mkdir(parents=True)
    (home / ".agents" / "skills" / "greet" / "SKILL.md").write_text(skill)
    workspaces = tmp_path / "workspaces"
    (workspaces / "sevro-case-peer").mkdir(parents=True)
    (workspaces / "sevro-case-peer" / "notes.txt").write_text(SECRETS["peer"])
    state = tmp_path / "state"
    state.mkdir()
    (state / "planted.txt").write_text(SECRETS["state"])
    outside = tmp_path / "outside.txt"
    marker = f"sleep 85{os.getpid() % 10000}.5"
    paths = {
        "project": sevro_project.root,
        "results": sevro_project.results,
        "state": state,
        "home": home,
        "workspaces": workspaces,
        "outside": outside,
    }
    secret_file = str(sevro_project.root / "secret.txt")
    tools = [
        ToolCall("read", {"path": secret_file}),
        ToolCall("read", {"path": f"{workspaces}/sevro-case-peer/notes.txt"}),
        ToolCall("write", {"path": f"{workspaces}/sevro-case-peer/notes.txt", "content": "pwned"}),
        ToolCall("edit", {"path": secret_file, "edits": [{"oldText": "P", "newText": "X"}]}),
    ]
    decoy = mock_model([reply(Message("decoy"))])
    ports = {"listener": listener.getsockname()[1], "decoy": decoy.port}
    script = attempts(paths, ports, marker)
    server = mock_model([reply(bash(script)), *map(reply, tools), reply(Message("ready"))])
    case = sevro_project.case(checks=[READY])
    result = run_pi(
        sevro_project,
        pi,
        server,
        case,
        "--workspace-root",
        str(workspaces),
        "--run-state-root",
        str(state),
        env={"HOME": str(home), "SEVRO_PLANTED_ENV_SECRET": SECRETS["env"]},
    )
    assert result.json()["execution"]["status"] == "completed", result.stdout + result.stderr
    assert result.json()["task"]["verdict"] == "passed", result.stdout
    assert len(server.requests) == len(tools) + 2 and not server.unexpected
    outputs = tool_outputs(server)
    assert len(outputs) == len(tools) + 1, outputs
    shell = outputs[0]
    # The controls: the script ran, wrote its workspace, reached the model endpoint and
    # detached a process.
    for control in ("workspace", "bridge", "detached"):
        assert f"REACHED-{control}" in shell, shell
    # What the model saw: every tool result went back to it in the next request.
    seen = b"".join(r.body for r in server.requests)
    assert b"ESCAPED-" not in seen, shell
    (peers,) = [line for line in shell.splitlines() if line.startswith("peers:")]
    assert "sevro-case" in peers and "sevro-case-peer" not in peers  # only its own is listed
    for name, secret in SECRETS.items():
        assert secret.encode() not in seen, name
    # The credential reached the model only in the header sevro's bridge set.
    assert API_KEY.encode() not in seen
    assert server.requests[0].headers["authorization"] == f"Bearer {API_KEY}"
    # pi's file tools found nothing outside the workspace to read or edit; the write landed in
    # the sandbox's own /tmp (bubblewrap made the peer's parents there), never in the peer.
    reads, write, edit = outputs[1:3], outputs[3], outputs[4]
    assert all(text.startswith("ENOENT") for text in reads), reads
    assert "ENOENT" in edit, edit
    assert (workspaces / "sevro-case-peer" / "notes.txt").read_text() == SECRETS["peer"], write
    assert not outside.exists()
    assert not (sevro_project.root / "pwned.txt").exists()
    assert (sevro_project.root / "secret.txt").read_text() == SECRETS["project"]
    # Nobody connected to the host's loopback listener or the other model server.
    assert not decoy.requests and not decoy.unexpected
    with pytest.raises(BlockingIOError):
        listener.accept()
    assert not survivors(marker)
    retained = retained_bytes(sevro_project)
    for name, secret in {**SECRETS, "api-key": API_KEY}.items():
        assert secret.encode() not in retained, name
    assert not list(workspaces.glob("sevro-private-*"))
    assert [p.name for p in workspaces.iterdir()] == ["sevro-case-peer"]


EXTENSION = """\
import { writeFileSync } from "node:fs";
writeFileSync(`loaded-by-${process.argv[1] ? "pi" : "node-e"}`, "loaded\\n");
export default function () {}
"""
"""A pi extension that, when loaded, leaves a file naming what loaded it: pi (`cli.js`) or
the control's `node -e` (`node-e`). Valid TypeScript too: pi discovers `.pi/extensions/*.ts`."""


def test_workspace_pi_extensions_never_load(
    sevro_project: SevroProject, pi: str, mock_model: Callable[..., Any]
) -> None:
    """pi loads `.pi/extensions/*` and `.pi/settings.json` `extensions` of the working directory
    with no prompt in JSON mode: code the fixture ships, or the agent writes in turn 1 for pi to
    run in turn 2 (where it could rewrite the system prompt the context checks read). sevro's
    `--no-extensions` keeps both out; the control imports the same file with node, which runs it."""
    plant = (
        "mkdir -p .pi/extensions && cp fixture-ext.mjs .pi/extensions/planted.ts && "
        "cp fixture-ext.mjs .pi/from-settings.mjs && "
        """printf '{"extensions": ["from-settings.mjs"]}' > .pi/settings.json && echo planted"""
    )
    control = "node -e 'import(\"./.pi/from-settings.mjs\")' && ls loaded-by-*"
    server = mock_model(
        [
            reply(bash(plant)),
            reply(Message("one")),
            reply(bash(control)),
            reply(Message("ready")),
        ]
    )
    files = {".pi/extensions/shipped.ts": EXTENSION, "fixture-ext.mjs": EXTENSION}
    case = sevro_project.case(
        prompt="First.", followUpPrompt="Second.", checks=[READY], fixture={"files": files}
    )
    result = run_pi(sevro_project, pi, server, case)
    assert result.json()["task"]["verdict"] == "passed", result.stdout + result.stderr
    assert len(server.requests) == 4 and not server.unexpected
    assert "loaded-by-node-e" in tool_outputs(server)[-1]  # the control: the file does run
    document = json.loads(
        next(sevro_project.results.glob("*/cases/example/trial-1.json")).read_text()
    )
    (changed,) = [
        o for o in document["evidence"]["observations"] if o["id"] == "sevro.files-changed"
    ]
    added = sorted(c["path"] for c in changed["data"]["changes"] if c["change"] == "added")
    assert added == [
        ".pi/extensions/planted.ts",
        ".pi/from-settings.mjs",
        ".pi/settings.json",
        "loaded-by-node-e",
    ], added  # and no loaded-by-pi: pi loaded none of them, in either turn


def test_the_mechanism_pi_without_sevros_flags_loads_workspace_extensions(
    pi: str, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    """The attack above is real: the same pi, run directly in a scratch workspace without
    `--no-extensions`, loads both the shipped and the settings-named extension."""
    server = mock_model([reply(Message("hi"))])
    workspace, agent, home = tmp_path / "ws", tmp_path / "agent", tmp_path / "home"
    for directory in (workspace / ".pi" / "extensions", agent, home):
        directory.mkdir(parents=True)
    (workspace / ".pi" / "extensions" / "shipped.ts").write_text(EXTENSION)
    named = EXTENSION.replace("loaded-by-", "named-loaded-by-")
    (workspace / ".pi" / "named.mjs").write_text(named)
    (workspace / ".pi" / "settings.json").write_text('{"extensions": ["named.mjs"]}')
    provider = {"baseUrl": server.base_url, "api": "openai-responses", "apiKey": "sk-x"}
    models = {"providers": {"mock": {**provider, "models": [{"id": "mock-model"}]}}}
    (agent / "models.json").write_text(json.dumps(models))
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "PI_CODING_AGENT_DIR": str(agent)}
    argv = [pi, "--mode", "json", "--provider", "mock", "--model", "mock-model", "Hello."]
    done = subprocess.run(
        argv,
        cwd=workspace,
        env={**env, "PI_OFFLINE": "1"},
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert len(server.requests) == 1
    assert (workspace / "loaded-by-pi").is_file(), sorted(p.name for p in workspace.iterdir())
    assert (workspace / "named-loaded-by-pi").is_file()


DEFAULT_PROMPT = "You are an expert coding assistant operating inside pi"
"""The opening of pi 0.73.1's own system prompt."""


@pytest.mark.parametrize("source", ["agent", "fixture"])
def test_a_workspace_system_prompt_never_replaces_pis(
    sevro_project: SevroProject, pi: str, mock_model: Callable[..., Any], source: str
) -> None:
    """pi reads `.pi/SYSTEM.md` (replacing its whole system prompt, skills list included) and
    `.pi/APPEND_SYSTEM.md` from the working directory whatever flags it gets (pi 0.73.1's
    resource loader). Written by the agent in turn 1, or shipped by the fixture, they would let
    the agent under test rewrite its own instructions, and pass `context-text` checks on the
    system prompt with text of its choosing. The host must either keep them out of pi's prompt
    or fail the trial before pi reads them; it may never run a turn that applies them."""
    files = {"SYSTEM.md": "REPLACED-SYSTEM-7c1\n", "APPEND_SYSTEM.md": "GAMED-MARKER-7c1\n"}
    plant = " && ".join(
        ["mkdir -p .pi", *(f"printf '{text}' > .pi/{name}" for name, text in files.items())]
    )
    replies = [reply(Message("one")), reply(Message("ready"))]
    fixture: dict[str, Any] = {"files": {f".pi/{name}": text for name, text in files.items()}}
    if source == "agent":
        replies.insert(0, reply(bash(plant)))
        fixture = {"files": {}}
    server = mock_model(replies)
    case = sevro_project.case(prompt="First.", followUpPrompt="Second.", fixture=fixture)
    result = run_pi(sevro_project, pi, server, case)
    execution = result.json()["execution"]["status"]
    for request in server.requests:
        system = json.dumps(request.json()["input"][0])
        assert DEFAULT_PROMPT in system, (source, execution, system[:300])
        assert "REPLACED-SYSTEM" not in system and "GAMED-MARKER" not in system, system[:300]
    if execution != "completed":  # refused: for this reason, before pi read the files
        document = json.loads(
            next(sevro_project.results.glob("*/cases/example/trial-1.json")).read_text()
        )
        message = document["evidence"]["execution"]["message"]
        assert execution == "failed" and ".pi/SYSTEM.md" in message, message
        assert result.json()["task"]["verdict"] == "not_assessed"
        assert len(server.requests) == (2 if source == "agent" else 0)  # turn 1's only
