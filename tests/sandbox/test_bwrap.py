"""The bubblewrap backend, run for real: what a sandboxed command can and cannot do."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest

from sevro_core.isolation.processes import DEFAULT_PATH
from sevro_core.plugin.protocols import NETWORK_LOCAL_HTTP
from sevro_core.testing import require_tool
from sevro_sandbox.bwrap import BubblewrapSandbox, bwrap_argv
from tests.sandbox.conftest import Layout, sandboxed


def processes() -> str:
    return subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=False).stdout


def test_the_argv_asks_for_every_isolation_feature(layout: Layout) -> None:
    argv = bwrap_argv("/usr/bin/bwrap", ["true"], layout.policy())
    for flag in (
        "--die-with-parent",
        "--new-session",
        "--unshare-user",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
    ):
        assert flag in argv
    assert argv[argv.index("--cap-drop") + 1] == "ALL"
    assert argv[argv.index("--ro-bind") : argv.index("--ro-bind") + 3] == ["--ro-bind", "/", "/"]
    assert argv[argv.index("--dev") + 1] == "/dev" and "--dev-bind" not in argv
    assert argv[-4:] == ["--chdir", str(layout.workspace), "--", "true"]
    local = bwrap_argv("/usr/bin/bwrap", ["true"], layout.policy(network=NETWORK_LOCAL_HTTP))
    assert "--unshare-net" in local, "localHttp keeps a private network namespace (loopback)"


def test_probe_runs_the_real_policy(bwrap: BubblewrapSandbox) -> None:
    probe = bwrap.probe()
    assert probe.available, probe.detail
    assert probe.version and probe.version[0].isdigit()


def test_probe_without_bwrap_says_how_to_install_it() -> None:
    probe = BubblewrapSandbox(binary="sevro-no-such-bwrap").probe()
    assert not probe.available and "apt-get install bubblewrap" in probe.detail


def test_workspace_writable_and_everything_else_read_only(
    bwrap: BubblewrapSandbox, layout: Layout
) -> None:
    done = sandboxed(
        bwrap,
        layout.policy(),
        'echo w > out && echo h > "$HOME/h" && echo t > "$1/t" && cat "$2/readable.txt" && '
        'if touch "$2/no" 2>/dev/null; then exit 9; fi && '
        "if touch /etc/sevro-no 2>/dev/null; then exit 10; fi && pwd",
        str(layout.tmpdir),
        str(layout.outside),
    )
    assert done.exit_code == 0, done.output
    assert done.output.decode().splitlines() == ["readable", str(layout.workspace)]
    assert (layout.workspace / "out").read_text() == "w\n"
    assert (layout.home / "h").exists() and (layout.tmpdir / "t").exists()
    assert not (layout.outside / "no").exists()


@pytest.mark.parametrize(
    "attempt",
    [
        'cat "$P/secret.txt"',
        'ls "$P"',
        'touch "$P/new"',
        'echo x > "$P/secret.txt"',
        'cat "$F"',
        'echo x >> "$F"',
        'ls "$W"',
        'cat "$W/sevro-case-peer/peer.txt"',
        'touch "$W/sevro-case-peer/new"',
        'mkdir "$W/sevro-case-new"',
    ],
)
def test_protected_roots_and_peers_are_unreadable_and_unwritable(
    bwrap: BubblewrapSandbox, layout: Layout, attempt: str
) -> None:
    done = sandboxed(
        bwrap,
        layout.policy(),
        f'P="$1" F="$2" W="$3"; {attempt}',
        str(layout.protected),
        str(layout.protected_file),
        str(layout.workspaces),
    )
    assert done.exit_code != 0, done.output
    for content in (b"protected-secret", b"file-secret", b"peer-secret"):
        assert content not in done.output
    assert (layout.protected / "secret.txt").read_text() == "protected-secret\n"
    assert layout.protected_file.read_text() == "file-secret\n"
    assert sorted(p.name for p in layout.protected.iterdir()) == ["secret.txt"]
    assert sorted(p.name for p in layout.peer.iterdir()) == ["peer.txt"]
    assert not (layout.workspaces / "sevro-case-new").exists()


def test_workspaces_created_later_are_hidden_too(bwrap: BubblewrapSandbox, layout: Layout) -> None:
    argv = bwrap.wrap(
        [
            "/bin/sh",
            "-c",
            'while [ ! -e go ]; do sleep 0.02; done; ls "$1"; cat "$1/sevro-case-late/s"',
            "sh",
            str(layout.workspaces),
        ],
        layout.policy(),
    )
    process = subprocess.Popen(
        argv,
        cwd=layout.workspace,
        env=dict(layout.policy().environment),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    late = layout.workspaces / "sevro-case-late"
    late.mkdir()
    (late / "s").write_text("late-secret\n")
    (layout.workspace / "go").touch()  # the host sees the workspace the sandbox writes
    output, _ = process.communicate(timeout=20)
    assert process.returncode != 0
    assert b"late-secret" not in output and b"Permission denied" in output


def test_the_environment_is_exactly_the_policys(bwrap: BubblewrapSandbox, layout: Layout) -> None:
    env = {"PATH": DEFAULT_PATH, "HOME": str(layout.home), "ONLY": "this"}
    done = sandboxed(bwrap, layout.policy(environment=env), "env")
    names = {line.split("=", 1)[0] for line in done.output.decode().splitlines()}
    assert names <= {"PATH", "HOME", "ONLY", "PWD", "SHLVL", "_"}, names


def test_the_host_network_is_unreachable(bwrap: BubblewrapSandbox, layout: Layout) -> None:
    require_tool("bash")
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        for network in ("none", NETWORK_LOCAL_HTTP):
            done = sandboxed(
                bwrap,
                layout.policy(network=network),
                f"exec bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}' 2>&1",
            )
            assert done.exit_code != 0, done.output
            outbound = sandboxed(
                bwrap,
                layout.policy(network=network),
                "exec bash -c 'exec 3<>/dev/tcp/192.0.2.1/80'",
                timeout_s=10,
            )
            assert outbound.exit_code != 0 and not outbound.timed_out
        server.settimeout(0.2)
        with pytest.raises(TimeoutError):
            server.accept()


def test_loopback_inside_the_sandbox_serves_local_http(
    bwrap: BubblewrapSandbox, layout: Layout
) -> None:
    python = shutil.which("python3", path=DEFAULT_PATH)
    if python is None:
        pytest.fail("python3 must be on the default PATH")
    script = (
        "import http.server, threading, urllib.request\n"
        "s = http.server.HTTPServer(('127.0.0.1', 0), http.server.SimpleHTTPRequestHandler)\n"
        "threading.Thread(target=s.serve_forever, daemon=True).start()\n"
        "open('index.html', 'w').write('served')\n"
        "print(urllib.request.urlopen(f'http://127.0.0.1:{s.server_port}/').read().decode())\n"
    )
    done = sandboxed(
        bwrap, layout.policy(network=NETWORK_LOCAL_HTTP), f'exec {python} -c "$1"', script
    )
    assert done.exit_code == 0, done.output
    assert done.output.decode().strip().endswith("served")


def test_own_pid_namespace_and_nothing_outlives_the_command(
    bwrap: BubblewrapSandbox, layout: Layout
) -> None:
    marker = f"sleep 34{os.getpid() % 1000}"
    done = sandboxed(
        bwrap,
        layout.policy(),
        f"(setsid {marker} >/dev/null 2>&1 &); ls /proc | grep -c '^[0-9]'; "
        f"test ! -e /proc/{os.getpid()} && ! cat /proc/1/environ 2>/dev/null",
    )
    assert done.exit_code == 0, done.output
    assert int(done.output.split()[0]) < 10
    time.sleep(0.2)
    assert marker not in processes()


def test_no_capabilities_so_hidden_roots_stay_hidden(
    bwrap: BubblewrapSandbox, layout: Layout
) -> None:
    done = sandboxed(
        bwrap,
        layout.policy(),
        'grep -q "^CapEff:\\s*0*$" /proc/self/status && ! umount "$1" 2>/dev/null && '
        '! cat "$1/secret.txt" 2>/dev/null && test -z "$(find /dev -type b)"',
        str(layout.protected),
    )
    assert done.exit_code == 0, done.output


def test_the_sandbox_dies_with_its_parent(bwrap: BubblewrapSandbox, layout: Layout) -> None:
    marker = f"sleep 35{os.getpid() % 1000}"
    argv = bwrap.wrap(["/bin/sh", "-c", f"exec {marker}"], layout.policy())
    parent = subprocess.Popen(
        [sys.executable, "-c", "import subprocess, sys; subprocess.run(sys.argv[1:])", *argv],
        cwd=layout.workspace,
        env=dict(layout.policy().environment),
    )
    deadline = time.monotonic() + 20
    while marker not in processes():
        assert time.monotonic() < deadline, "the sandboxed command never started"
        time.sleep(0.05)
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 10
    while marker in processes():
        assert time.monotonic() < deadline, "the sandbox outlived its parent"
        time.sleep(0.05)
