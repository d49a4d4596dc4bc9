"""Finding pi behind ``--pi-bin`` (or ``pi`` on PATH) and the Node.js that runs it.

pi is a Node.js script (``dist/cli.js``), not a native executable: sevro runs it as
``node cli.js`` inside its sandbox and mounts node's install prefix and the whole
``node_modules`` tree the package sits in (its dependencies are hoisted siblings).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from attrs import frozen

from sevro_core.api import BinaryError, NativeBinary, candidate_binary

TESTED_VERSION = "0.73.1"
PACKAGE = "@mariozechner/pi-coding-agent"
MIN_NODE = (20, 6)
"""pi 0.73.1's ``engines.node`` (``>=20.6.0``)."""
_NODE_VERSION_RE = re.compile(r"^v(\d+)\.(\d+)\.(\d+)")
_PI_VERSION_RE = re.compile(r"^\d+\.\d+\.\d+\S*$")


@frozen
class PiBinary(NativeBinary):
    """``native`` is node, ``tree`` the ``node_modules`` root holding pi and its dependencies."""

    script: Path
    """pi's ``dist/cli.js`` (canonical)."""
    node: Path
    """The Node.js executable (canonical; the same as ``native``)."""

    @property
    def node_prefix(self) -> Path:
        """node's install prefix (``/usr`` for ``/usr/bin/node``), mounted read-only."""
        return self.node.parent.parent


def locate(configured: str | None, node: str | None = None, *, need_node: bool = True) -> PiBinary:
    """``--pi-bin`` (cli.js or the ``.bin/pi`` link) or ``pi`` on PATH, and ``--pi-node`` or
    ``node`` on PATH; ``BinaryError`` with a fix when either is missing or unusable.
    ``need_node=False`` tolerates a missing node (the host applies ``--pi-node`` after the
    core's own lookup, which knows only ``--pi-bin``)."""
    real = candidate_binary(configured, "pi", "--pi-bin", PACKAGE)
    package = real.parent.parent
    if real.name != "cli.js" or real.parent.name != "dist" or package.name != "pi-coding-agent":
        raise BinaryError(
            f"{real} is not pi's dist/cli.js; pass --pi-bin pointing at "
            f"node_modules/{PACKAGE}/dist/cli.js (or the .bin/pi link to it)"
        )
    tree = package.parent.parent  # node_modules/@mariozechner/pi-coding-agent
    if tree.name != "node_modules":
        raise BinaryError(f"{real} does not lie in a node_modules tree (install it with npm)")
    found = _node(node, need_node)
    return PiBinary(native=found, tree=tree, script=real, node=found)


def _node(configured: str | None, need: bool) -> Path:
    if configured is not None:
        if not os.path.isfile(configured) or not os.access(configured, os.X_OK):
            raise BinaryError(f"--pi-node {configured} is not an executable file")
        return Path(configured).resolve()
    found = shutil.which("node")
    if found is None and not need:
        return Path("node")
    if found is None:
        raise BinaryError("node is not on PATH; install Node.js >= 20.6 or pass --pi-node")
    return Path(found).resolve()


def _run(argv: list[str], timeout: float) -> str:
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            timeout=timeout,
            env={"PATH": os.defpath, "LANG": "C.UTF-8", "PI_OFFLINE": "1"},
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BinaryError(f"{argv[0]} {' '.join(argv[1:])} failed: {exc}") from None
    if done.returncode != 0:
        raise BinaryError(f"{' '.join(argv)} exited {done.returncode}")
    # pi prints its version on stderr
    return (done.stdout + done.stderr).decode("utf-8", "replace").strip()[:200]


def node_version(binary: PiBinary, timeout: float = 20) -> str:
    """``node --version`` when it is at least ``MIN_NODE``; else ``BinaryError``."""
    text = _run([str(binary.node), "--version"], timeout)
    match = _NODE_VERSION_RE.match(text)
    if match is None:
        raise BinaryError(f"{binary.node} --version did not report a Node.js version")
    if (int(match.group(1)), int(match.group(2))) < MIN_NODE:
        raise BinaryError(f"{binary.node} is Node.js {text}; pi needs >= 20.6")
    return text


def version(binary: PiBinary, timeout: float = 30) -> str:
    """``node cli.js --version`` (for example ``0.73.1``), after the node check."""
    node_version(binary, timeout)
    text = _run([str(binary.node), str(binary.script), "--version"], timeout)
    if not _PI_VERSION_RE.match(text):
        raise BinaryError(f"{binary.script} --version did not report a pi version")
    return text
