"""Host Unix sockets, run for real: a listener outside the sandbox is never reachable inside it.

Every test holds a real listener and proves, without the sandbox, that the same client reaches
it (the control), so a client that cannot connect at all would fail the test.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from sevro_core.isolation.processes import DEFAULT_PATH
from sevro_sandbox.bwrap import BubblewrapSandbox, bwrap_argv, without_host_sockets
from sevro_sandbox.sockets import RUNTIME_DIRECTORIES, bound_paths, host_sockets
from tests.sandbox.conftest import Layout

CLIENT = """
import socket, sys
for target in sys.argv[1:]:
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(5)
    try:
        client.connect(target.replace("@", "\\0", 1) if target.startswith("@") else target)
        print("connected", target)
    except OSError as exc:
        print("blocked", target, exc.errno)
"""


def python() -> str:
    found = shutil.which("python3", path=DEFAULT_PATH)
    if found is None:
        pytest.fail("python3 must be on the default PATH")
    return found


@contextmanager
def listening(address: str) -> Iterator[socket.socket]:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(address.replace("@", "\0", 1) if address.startswith("@") else address)
    server.listen()
    try:
        yield server
    finally:
        server.close()
        if not address.startswith("@"):
            Path(address).unlink(missing_ok=True)


def connect(argv_prefix: Sequence[str], cwd: Path, targets: Sequence[str]) -> dict[str, str]:
    done = subprocess.run(
        [*argv_prefix, python(), "-c", CLIENT, *targets],
        cwd=cwd,
        env={"PATH": DEFAULT_PATH, "LANG": "C.UTF-8"},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return {line.split()[1]: line.split()[0] for line in done.stdout.splitlines()}


def inside(binary: str, layout: Layout, runtime_dirs: Sequence[Path] | None = None) -> list[str]:
    """The bwrap prefix for a command, cut before ``--`` plus the separator."""
    argv = bwrap_argv(binary, ["true"], layout.policy(), runtime_dirs)
    return argv[: argv.index("--") + 1]


def test_a_host_socket_outside_every_hidden_root_is_unreachable(
    bwrap: BubblewrapSandbox, layout: Layout
) -> None:
    """``outside`` is readable in the sandbox: only /dev/null over the socket stops connect()."""
    path = str(layout.outside / "daemon.sock")
    with listening(path):
        assert connect([], layout.workspace, [path]) == {path: "connected"}
        assert Path(path) in host_sockets()
        binary = bwrap.binary()
        assert binary is not None
        assert connect(inside(binary, layout, ()), layout.workspace, [path]) == {path: "blocked"}


def test_sockets_in_runtime_directories_are_hidden_even_when_created_later(
    bwrap: BubblewrapSandbox, layout: Layout
) -> None:
    runtime = layout.root / "run"
    (runtime / "user").mkdir(parents=True)
    early, late = str(runtime / "docker.sock"), str(runtime / "user" / "bus")
    binary = bwrap.binary()
    assert binary is not None
    script = f'while [ ! -e go ]; do sleep 0.02; done; exec {python()} -c "$1" "$2" "$3"'
    with listening(early):
        sandbox = subprocess.Popen(
            [
                *inside(binary, layout, (runtime,)),
                "/bin/sh",
                "-c",
                script,
                "sh",
                CLIENT,
                early,
                late,
            ],
            cwd=layout.workspace,
            env={"PATH": DEFAULT_PATH},
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            with listening(late):
                assert connect([], layout.workspace, [early, late]) == {
                    early: "connected",
                    late: "connected",
                }
                (layout.workspace / "go").touch()
                output, _ = sandbox.communicate(timeout=30)
        finally:
            sandbox.kill()
            sandbox.wait()
    results = {line.split()[1]: line.split()[0] for line in output.splitlines()}
    assert results == {early: "blocked", late: "blocked"}


def test_sockets_under_the_workspace_root_and_in_the_workspace_are_unreachable(
    bwrap: BubblewrapSandbox, layout: Layout
) -> None:
    """A peer's socket (hidden root) and a host process's socket in this very workspace."""
    peer = str(layout.peer / "peer.sock")
    own = str(layout.workspace / "host.sock")
    binary = bwrap.binary()
    assert binary is not None
    with listening(peer), listening(own):
        assert connect([], layout.workspace, [peer, own]) == {peer: "connected", own: "connected"}
        assert connect(inside(binary, layout, ()), layout.workspace, [peer, own]) == {
            peer: "blocked",
            own: "blocked",
        }


def test_abstract_sockets_stay_in_the_hosts_network_namespace(
    bwrap: BubblewrapSandbox, layout: Layout
) -> None:
    name = f"@sevro-abstract-{secrets.token_hex(6)}"
    binary = bwrap.binary()
    assert binary is not None
    with listening(name):
        assert connect([], layout.workspace, [name]) == {name: "connected"}
        assert connect(inside(binary, layout, ()), layout.workspace, [name]) == {name: "blocked"}


def test_the_sandbox_keeps_its_own_unix_sockets(bwrap: BubblewrapSandbox, layout: Layout) -> None:
    """Hiding the host's sockets must not break a local server the command starts itself."""
    server = (
        "import socket, os\n"
        "s = socket.socket(socket.AF_UNIX); s.bind('own.sock'); s.listen()\n"
        "c = socket.socket(socket.AF_UNIX); c.connect('own.sock')\n"
        "a, _ = s.accept(); c.sendall(b'ping'); print(a.recv(4).decode())\n"
        "p = socket.socket(socket.AF_UNIX); p.bind('\\0sevro-own'); p.listen()\n"
        "q = socket.socket(socket.AF_UNIX); q.connect('\\0sevro-own'); print('abstract')\n"
    )
    binary = bwrap.binary()
    assert binary is not None
    done = subprocess.run(
        [*inside(binary, layout), python(), "-c", server],
        cwd=layout.workspace,
        env={"PATH": DEFAULT_PATH},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ping", "abstract"]


def test_the_default_runtime_directories_are_hidden(
    bwrap: BubblewrapSandbox, layout: Layout
) -> None:
    """Every sandbox hides the host's ``/run`` (``/var/run`` is usually the same directory);
    where this test may bind there (as root, or in the user's runtime directory), a real
    listener proves it."""
    assert "/run" in RUNTIME_DIRECTORIES and "/var/run" in RUNTIME_DIRECTORIES
    prefix = bwrap.wrap(["true"], layout.policy())
    prefix = prefix[: prefix.index("--") + 1]
    hidden = {prefix[i + 1] for i, arg in enumerate(prefix) if arg == "--tmpfs"}
    remounted = {prefix[i + 1] for i, arg in enumerate(prefix) if arg == "--remount-ro"}
    for runtime in {os.path.realpath(p) for p in ("/run", "/var/run") if os.path.isdir(p)}:
        assert runtime in hidden and runtime in remounted, runtime
    candidates = [Path("/run"), Path(f"/run/user/{os.getuid()}")]
    writable = next((p for p in candidates if os.access(p, os.W_OK | os.X_OK)), None)
    if writable is None:
        return
    path = str(writable / f"sevro-test-{secrets.token_hex(6)}.sock")
    with listening(path):
        assert connect([], layout.workspace, [path]) == {path: "connected"}
        assert connect(prefix, layout.workspace, [path]) == {path: "blocked"}


def test_only_named_sockets_are_read_from_the_table() -> None:
    table = (
        b"Num       RefCount Protocol Flags    Type St Inode Path\n"
        b"0000000000000000: 00000002 00000000 00010000 0001 01 1001 /run/dbus/system_bus_socket\n"
        b"0000000000000000: 00000002 00000000 00010000 0001 01 1002 @/tmp/.X11-unix/X0\n"
        b"0000000000000000: 00000003 00000000 00000000 0001 03 1003\n"
        b"0000000000000000: 00000002 00000000 00010000 0001 01 1004 /srv/a b.sock\n"
        b"0000000000000000: 00000002 00000000 00010000 0001 01 1005 relative.sock\n"
    )
    assert bound_paths(table) == ["/run/dbus/system_bus_socket", "/srv/a b.sock"]


def test_a_table_too_large_to_hide_refuses_the_sandbox(tmp_path: Path) -> None:
    table = tmp_path / "unix"
    with table.open("wb") as handle:
        handle.truncate(17 * 1024 * 1024)
    with pytest.raises(OSError, match="cannot all be hidden"):
        host_sockets(table=table)


def test_sockets_below_a_hidden_root_need_no_mount_of_their_own(layout: Layout) -> None:
    """Only sockets that would otherwise be visible cost a mount."""
    hidden = str(layout.protected / "hidden.sock")
    visible = str(layout.outside / "visible.sock")
    with listening(hidden), listening(visible):
        roots = without_host_sockets(layout.policy(), ()).protected_roots
    assert Path(visible) in roots and Path(hidden) not in roots
