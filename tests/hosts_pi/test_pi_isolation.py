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
