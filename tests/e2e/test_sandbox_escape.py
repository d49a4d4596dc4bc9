"""The escape suite: a host command and a shell check try every way out, through the real CLI
and a real bubblewrap, and none works.

Each attempt runs twice per trial: as a scripted-host ``run`` step (role ``candidate``; its
exit code lands in ``sevro.commands``) and as a ``sevro.shell`` check that passes only when
the attempt fails inside a sandbox that really started. Two trials run at once, so each one
also probes a live peer. Secrets are planted in a fake HOME, the project, the results root, an
operator-protected root and a fake peer workspace, and put in sevro's own environment; at the
end not one retained file may contain them, and nothing planted may have changed.
"""

from __future__ import annotations

import os
import pwd
import secrets
import socket
import subprocess
from pathlib import Path

from sevro_core.testing import SevroProject, require_tool
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


def test_every_escape_attempt_fails(sevro_project: SevroProject, tmp_path: Path) -> None:
    require_tool("bwrap")
    require_tool("bash")
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
        if name.startswith(("read-", "list-")) and name != "read-live-peer":
            control = subprocess.run(
                ["sh", "-c", f"{prelude}; {command}"], capture_output=True, check=False
            )
            assert control.returncode == 0, f"{name} must work without a sandbox: {control}"

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
    assert sorted(p.name for p in workspaces.iterdir()) == ["sevro-case-planted"]
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
