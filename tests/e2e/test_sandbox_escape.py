"""The escape suite: a host command and a shell check try every way out, through the real CLI
and a real bubblewrap, and none works.

Each attempt runs twice per trial: as a scripted-host ``run`` step (role ``candidate``; its
exit code lands in ``sevro.commands``) and as a ``sevro.shell`` check that passes only when
the attempt fails inside a sandbox that really started. Two trials run at once, so each one
also probes a live peer. Secrets are planted in a fake HOME, the project, the results root, an
operator-protected root, a fake peer workspace under this run's own root and another under the
default root (the system temp directory a concurrent run uses), and put in sevro's own
environment; at the end not one retained file may contain them, and nothing planted may have
changed. Real Unix-socket listeners wait in the host's ``/run``, the temp directory, a readable
directory, the workspace root and the abstract namespace; not one may see a connection.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from sevro_core.testing import SevroProcess, SevroProject, require_tool, start_sevro
from tests.e2e.helpers import assert_valid_evidence, trial_evidence


def plant(path: Path, content: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    return path


def snapshot(*roots: Path) -> dict[Path, bytes | None]:
    return {
        p: (p.read_bytes() if p.is_file() else None)
        for root in roots
        for p in sorted([root, *root.rglob("*")])
    }


CONNECT = (
    "python3 -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); "
    'a = sys.argv[1]; s.connect("\\0" + a[1:] if a[0] == "@" else a)\' '
)


@contextmanager
def unix_listener(address: str) -> Iterator[socket.socket]:
    """A real listener; ``@name`` is an abstract socket."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind("\0" + address[1:] if address.startswith("@") else address)
    server.listen(16)
    try:
        yield server
    finally:
        server.close()
        if not address.startswith("@"):
            Path(address).unlink(missing_ok=True)


def accepted(server: socket.socket) -> int:
    """How many connections are waiting, taking them all."""
    server.settimeout(0.1)
    count = 0
    while True:
        try:
            connection, _ = server.accept()
        except TimeoutError:
            return count
        connection.close()
        count += 1


@contextmanager
def default_root_peer(secret: str) -> Iterator[Path]:
    """A peer workspace under the default workspace root, as a concurrent run leaves it."""
    peer = Path(tempfile.mkdtemp(prefix="sevro-case-"))
    try:
        plant(peer / "peer.txt", f"{secret}\n")
        yield peer
    finally:
        shutil.rmtree(peer)


def runtime_directory() -> Path | None:
    """The host's /run, or the user's runtime directory under it, when a test may bind there."""
    for candidate in (Path("/run"), Path(f"/run/user/{os.getuid()}")):
        if os.access(candidate, os.W_OK | os.X_OK):
            return candidate
    return None


def socket_addresses(readable: Path, workspace_root: Path) -> dict[str, str]:
    """Where the host's listeners wait: the host's ``/run`` when a test may bind there, the
    temp directory, a readable directory, the workspace root and the abstract namespace."""
    token = secrets.token_hex(6)
    sockets = {
        "connect-tmp-socket": f"{tempfile.gettempdir()}/sevro-escape-{token}.sock",
        "connect-readable-dir-socket": str(readable / "daemon.sock"),
        "connect-workspace-root-socket": str(workspace_root / "daemon.sock"),
        "connect-abstract-socket": f"@sevro-escape-{token}",
    }
    runtime = runtime_directory()
    if runtime is not None:
        sockets["connect-run-socket"] = str(runtime / f"sevro-escape-{token}.sock")
    return sockets


def test_without_the_sandbox_the_sockets_and_the_default_root_peer_are_reached(
    sevro_project: SevroProject, tmp_path: Path
) -> None:
    """The control run: under ``--sandbox none`` the same run steps and shell checks reach every
    listener and the peer under the default root, so their failure in the escape run is the
    sandbox's doing, not a broken probe."""
    require_tool("python3")
    workspaces, readable = tmp_path / "workspaces", tmp_path / "outside"
    workspaces.mkdir()
    readable.mkdir()
    with ExitStack() as stack:
        peer = stack.enter_context(default_root_peer("peer data"))
        sockets = socket_addresses(readable, workspaces)
        listeners = {n: stack.enter_context(unix_listener(a)) for n, a in sockets.items()}
        attempts = {name: CONNECT + f'"{address}"' for name, address in sockets.items()}
        attempts["read-default-root-peer"] = f'cat "{peer}/peer.txt"'
        steps = [{"run": {"command": c, "timeoutMs": 10_000}} for c in attempts.values()]
        host = sevro_project.script(default=[[*steps, {"reply": {"text": "done"}}]])
        checks = [
            {"id": f"reached-{name}", "grader": "sevro.shell", "configuration": {"run": command}}
            for name, command in attempts.items()
        ]
        case = sevro_project.case(fixture={"files": {"README.md": "fixture\n"}}, checks=checks)
        done = sevro_project.run(
            case, "--host-config", host, "--workspace-root", workspaces, "--sandbox", "none"
        )
        assert done.exit_code == 0, (done.stdout, done.stderr)
        evidence = trial_evidence(done.json())
        assert evidence["sandbox"]["isolated"] is False
        commands = next(o for o in evidence["observations"] if o["id"] == "sevro.commands")
        assert [c["exitCode"] for c in commands["data"]["commands"]] == [0] * len(attempts)
        assert {c["status"] for c in evidence["checks"]} == {"passed"}
        reached = {name: accepted(server) for name, server in listeners.items()}
        assert reached == dict.fromkeys(listeners, 2), "one run step and one check each"


def test_every_escape_attempt_fails(sevro_project: SevroProject, tmp_path: Path) -> None:
    require_tool("bwrap")
    require_tool("bash")
    require_tool("python3")
    with ExitStack() as stack:
        escape_attempts(sevro_project, tmp_path, stack)


def escape_attempts(sevro_project: SevroProject, tmp_path: Path, stack: ExitStack) -> None:
    secret = f"sevro-escape-{secrets.token_hex(16)}"
    home = tmp_path / "home"
    credential = plant(home / ".ssh" / "id_rsa", f"-----BEGIN KEY-----\n{secret}\n")
    plant(home / ".codex" / "auth.json", f'{{"token": "{secret}"}}\n')
    plant(home / ".aws" / "credentials", f"aws_secret_access_key = {secret}\n")
    project = sevro_project.root
    plant(project / "answers.txt", f"{secret}\n")
    results = sevro_project.results
    plant(results / "earlier-run" / "evidence.json", f'{{"secret": "{secret}"}}\n')
    extra = tmp_path / "operator-private"
    plant(extra / "notes.txt", f"{secret}\n")
    workspaces = tmp_path / "workspaces"
    peer = plant(workspaces / "sevro-case-planted" / "peer.txt", f"{secret}\n").parent
    outside = tmp_path / "outside"
    plant(outside / "public.txt", "public\n")
    account_home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    default_peer = stack.enter_context(default_root_peer(secret))
    sockets = socket_addresses(outside, workspaces)
    listeners = {name: stack.enter_context(unix_listener(a)) for name, a in sockets.items()}

    targets = {
        "P": project,
        "R": results,
        "H": home,
        "X": extra,
        "W": workspaces,
        "O": outside,
        "A": account_home,
    }
    prelude = " ".join(f'{k}="{v}"' for k, v in targets.items())
    attempts = {
        "read-credential": 'cat "$H/.ssh/id_rsa"',
        "read-cli-auth": 'cat "$H/.codex/auth.json"',
        "read-cloud-credentials": 'cat "$H/.aws/credentials"',
        "list-home": 'ls "$H"',
        "list-account-home": 'ls "$A"',
        "read-project": 'cat "$P/answers.txt"',
        "read-case-file": 'cat "$P/case.json"',
        "list-project": 'ls "$P"',
        "read-results": 'cat "$R/earlier-run/evidence.json"',
        "list-results": 'ls "$R"',
        "read-operator-root": 'cat "$X/notes.txt"',
        "list-workspaces": 'ls "$W"',
        "read-planted-peer": 'cat "$W/sevro-case-planted/peer.txt"',
        "read-live-peer": 'cat "$W"/sevro-case-*/live-peer.txt',
        "write-credential": 'echo pwned >> "$H/.ssh/id_rsa"',
        "write-home": 'touch "$H/pwned"',
        "write-project": 'touch "$P/pwned"',
        "write-results": 'touch "$R/pwned"',
        "exfiltrate-to-results": 'cat "$H/.ssh/id_rsa" > "$R/leak"',
        "write-operator-root": 'touch "$X/pwned"',
        "write-peer": 'touch "$W/sevro-case-planted/pwned"',
        "new-workspace": 'mkdir "$W/sevro-case-forged"',
        "write-outside": 'touch "$O/pwned"',
        "write-system": "touch /etc/sevro-pwned",
        "init-environ": "cat /proc/1/environ",
        "environment-secret": f"env | grep -q {secret[:20]}",
        "host-loopback": f"bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}'",
        "outbound-tcp": "bash -c 'exec 3<>/dev/tcp/192.0.2.1/80'",
        "follow-symlink": "cat planted-link",
        "follow-symlink-dir": "ls planted-dir-link/",
        "read-default-root-peer": f'cat "{default_peer}/peer.txt"',
        "list-default-root": f'ls -a "{default_peer.parent}" | grep -q "^{default_peer.name}$"',
        **{name: CONNECT + f'"{address}"' for name, address in sockets.items()},
    }
    if account_home == Path("/") or not account_home.is_dir():
        del attempts["list-account-home"]
    setup = [
        {"write": {"path": "live-peer.txt", "content": "peer data\n"}},
        {"run": {"command": f'ln -s "{credential}" planted-link'}},
        {"run": {"command": f'ln -s "{project}" planted-dir-link'}},
        {"run": {"command": "setsid sleep 7391 >/dev/null 2>&1 < /dev/null &"}},
    ]
    steps = [
        {"run": {"command": f"{prelude}; {command}", "timeoutMs": 10_000}}
        for command in attempts.values()
    ]
    host = sevro_project.script(default=[[*setup, *steps, {"reply": {"text": "done"}}]])
    checks = [
        {
            "id": f"blocked-{name}",
            "grader": "sevro.shell",
            "configuration": {"run": f"{prelude}; ! ( {command} ) >/dev/null 2>&1"},
        }
        for name, command in attempts.items()
    ]
    checks.append(
        {
            "id": "background-check",
            "grader": "sevro.shell",
            "configuration": {"run": "setsid sleep 7392 >/dev/null 2>&1 < /dev/null &"},
        }
    )
    case = sevro_project.case(fixture={"files": {"README.md": "fixture\n"}}, checks=checks)
    before = snapshot(home, project, results, extra, peer, outside)
    for name, command in attempts.items():
        if name.startswith(("read-", "list-", "connect-")) and name != "read-live-peer":
            control = subprocess.run(
                ["sh", "-c", f"{prelude}; {command}"], capture_output=True, check=False
            )
            assert control.returncode == 0, f"{name} must work without a sandbox: {control}"
    assert {name: accepted(server) for name, server in listeners.items()} == dict.fromkeys(
        listeners, 1
    ), "each control reached its listener once"

    done = sevro_project.run(
        case,
        "--host-config",
        host,
        "--trials",
        "2",
        "--jobs",
        "2",
        "--workspace-root",
        workspaces,
        "--protected-root",
        extra,
        env={"HOME": str(home), "SEVRO_ESCAPE_SECRET": secret, "OPENAI_API_KEY": secret},
    )
    listener.settimeout(0.1)
    try:
        connection, _ = listener.accept()
        connection.close()
        raise AssertionError("a sandboxed command reached the host's loopback")
    except TimeoutError:
        pass
    finally:
        listener.close()
    reached = {name: accepted(server) for name, server in listeners.items()}
    assert reached == dict.fromkeys(listeners, 0), "a sandboxed command reached a host socket"

    assert done.exit_code == 0, (done.stdout, done.stderr)
    result = done.json()
    run = assert_valid_evidence(result)
    for index in range(2):
        evidence = trial_evidence(result, trial=index)
        assert evidence["sandbox"]["isolated"] and evidence["sandbox"]["backend"] == (
            "sevro.sandbox.bwrap"
        )
        commands = next(o for o in evidence["observations"] if o["id"] == "sevro.commands")
        exit_codes = [c["exitCode"] for c in commands["data"]["commands"]]
        assert exit_codes[:3] == [0, 0, 0], "the symlinks and the background process were made"
        for name, code in zip(attempts, exit_codes[3:], strict=True):
            assert code != 0, f"host step {name} succeeded"
        statuses = {c["id"]: c["status"] for c in evidence["checks"]}
        assert set(statuses.values()) == {"passed"}, statuses
        observed = {o["id"]: o["data"] for o in evidence["observations"]}
        assert observed["sevro.observation.shell.blocked-read-credential"]["exitCode"] == 0

    assert_only_this_run_was_added(before, snapshot(home, project, results, extra, peer, outside))
    assert not (workspaces / "sevro-case-forged").exists()
    assert not Path("/etc/sevro-pwned").exists()
    assert sorted(p.name for p in workspaces.iterdir()) == ["daemon.sock", "sevro-case-planted"]
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True)
    assert "sleep 7391" not in ps.stdout and "sleep 7392" not in ps.stdout

    run_dir = Path(result["evidencePath"]).parent
    retained = [p for p in run_dir.rglob("*") if p.is_file()]
    assert retained and run["trials"]
    for path in retained:
        assert secret.encode() not in path.read_bytes(), f"the secret leaked into {path}"
    assert secret not in done.stdout and secret not in done.stderr


def assert_only_this_run_was_added(
    before: dict[Path, bytes | None], after: dict[Path, bytes | None]
) -> None:
    """Nothing planted changed or vanished; the only new files are this run's evidence."""
    changed = [p for p in before if p not in after or after[p] != before[p]]
    assert changed == [], changed
    added = [p for p in after if p not in before]
    run_dirs = {p.parent for p in added if p.name == "run.json"}
    assert len(run_dirs) == 1, added
    (run_dir,) = run_dirs
    state = run_dir.parent / ".sevro-state"  # the run-state database beside the runs
    assert all(
        p == run_dir or p.is_relative_to(run_dir) or p.is_relative_to(state) for p in added
    ), added


def test_a_live_workspace_under_the_default_root_is_hidden_from_a_run_with_its_own_root(
    sevro_project: SevroProject, tmp_path: Path
) -> None:
    """Two concurrent runs: one keeps a live workspace under the default root (the temp
    directory) while the other, using its own ``--workspace-root``, tries to read it from a run
    step and a shell check."""
    require_tool("bwrap")
    secret = f"sevro-live-peer-{secrets.token_hex(12)}"
    peer_project = SevroProject((tmp_path / "peer-project").resolve())
    peer_project.root.mkdir()
    peer_host = peer_project.script(
        default=[
            [
                {"write": {"path": "live-default.txt", "content": f"{secret}\n"}},
                {"run": {"command": "while [ ! -e release ]; do sleep 0.1; done"}},
                {"reply": {"text": "done"}},
            ]
        ]
    )
    peer_case = peer_project.case()
    peer_args = ["run", peer_case, "--json", "--host-config", peer_host]
    peer_args += ["--results-root", peer_project.results]
    with start_sevro(peer_args, cwd=peer_project.root) as peer:
        live = wait_for_live_workspace(Path(tempfile.gettempdir()), secret, peer)
        attempts = {
            "read-live-default-peer": f'cat "{live}/live-default.txt"',
            "list-default-root": f'ls -a "{live.parent}" | grep -q "^{live.name}$"',
        }
        for name, command in attempts.items():
            control = subprocess.run(["sh", "-c", command], capture_output=True, check=False)
            assert control.returncode == 0, f"{name} must work without a sandbox: {control}"
        steps = [{"run": {"command": c, "timeoutMs": 10_000}} for c in attempts.values()]
        host = sevro_project.script(default=[[*steps, {"reply": {"text": "done"}}]])
        checks = [
            {
                "id": f"blocked-{name}",
                "grader": "sevro.shell",
                "configuration": {"run": f"! ( {command} ) >/dev/null 2>&1"},
            }
            for name, command in attempts.items()
        ]
        workspaces = tmp_path / "workspaces"
        workspaces.mkdir()
        done = sevro_project.run(
            sevro_project.case(checks=checks), "--host-config", host, "--workspace-root", workspaces
        )
        (live / "release").touch()
        finished = peer.finish(timeout=120)
        assert finished.exit_code == 0, finished
    assert done.exit_code == 0, (done.stdout, done.stderr)
    evidence = trial_evidence(done.json())
    commands = next(o for o in evidence["observations"] if o["id"] == "sevro.commands")
    assert all(c["exitCode"] != 0 for c in commands["data"]["commands"])
    assert {c["status"] for c in evidence["checks"]} == {"passed"}
    assert secret not in done.stdout


def wait_for_live_workspace(root: Path, secret: str, peer: SevroProcess) -> Path:
    """The peer run's workspace under ``root``, found by the secret it wrote there."""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        assert peer.poll() is None, peer.finish()
        for candidate in root.glob("sevro-case-*/live-default.txt"):
            with contextlib.suppress(OSError):
                if secret in candidate.read_text():
                    return candidate.parent
        time.sleep(0.1)
    raise AssertionError("the peer run never wrote its live workspace")
