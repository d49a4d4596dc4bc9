"""Where a run came from: the runner build and the project revision (identity inputs)."""

from __future__ import annotations

import functools
import hashlib
import os
import stat
import subprocess
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

from attrs import frozen

from sevro_core.errors import InvocationError
from sevro_core.formats.canonical import hash_json
from sevro_core.limits import MIB

MAX_BUILD_FILES = 4096
MAX_PROJECT_FILES = 4096
MAX_PROJECT_BYTES = 64 * MIB
_GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "LC_ALL": "C",
    "GIT_OPTIONAL_LOCKS": "0",
}


def _package_root(module: ModuleType) -> Path | None:
    top = module.__name__.split(".")[0]
    import sys

    package = sys.modules.get(top)
    file = getattr(package, "__file__", None)
    return Path(file).resolve().parent if file else None


@functools.cache
def _tree_digest(root: Path) -> list[dict[str, str]]:
    files = []
    for path in sorted(root.rglob("*")):
        if path.suffix not in (".py", ".json", ".md", ".typed") or "__pycache__" in path.parts:
            continue
        if path.is_symlink() or not path.is_file():
            continue
        files.append(
            {
                "path": f"{root.name}/{path.relative_to(root).as_posix()}",
                "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            }
        )
        if len(files) > MAX_BUILD_FILES:
            raise InvocationError(f"runner package {root} holds more than {MAX_BUILD_FILES} files")
    return files


def runner_build_digest(modules: Iterable[ModuleType]) -> str:
    """Digest of the sevro code that ran: the core and every loaded plugin's package."""
    roots = {root for m in modules if (root := _package_root(m)) is not None}
    files = [entry for root in sorted(roots) for entry in _tree_digest(root)]
    return hash_json({"format": "sevro.build.v1", "files": sorted(files, key=lambda f: f["path"])})


@frozen
class ProvenanceChoice:
    """Sevro's provenance flags: ``--runner-checkout-root`` (a checked, canonical checkout) and
    the 64-hex ``--runner-build-digest`` / ``--project-digest`` overrides for fixtures."""

    checkout_root: Path | None = None
    build_digest: str | None = None
    project_digest: str | None = None


def check_checkout_root(root: Path) -> Path:
    """The canonical checkout, refused (exit 64) unless it is an absolute Git top level that
    holds the ``sevro_core`` actually running: a checkout's revision must be the code's."""
    import sevro_core

    if not root.is_absolute():
        raise InvocationError("--runner-checkout-root must be an absolute path", source=root)
    canonical = root.resolve()
    top = _git(canonical, "rev-parse", "--show-toplevel") if canonical.is_dir() else None
    if top is None or top.returncode != 0 or Path(top.stdout.decode().strip()) != canonical:
        raise InvocationError("--runner-checkout-root is not a Git checkout's top", source=root)
    running = Path(sevro_core.__file__).resolve()
    if not running.is_relative_to(canonical):
        raise InvocationError(
            f"--runner-checkout-root is not the running sevro (it runs from {running.parent})",
            source=root,
        )
    return canonical


def checkout_runner(root: Path, build_digest: str) -> dict[str, object]:
    """The runner as a source checkout: its revision and dirty-patch digest beside the digest
    of the code that ran."""
    head = _git(root, "rev-parse", "--verify", "-q", "HEAD^{commit}")
    revision = head.stdout.decode().strip() if head.returncode == 0 else None
    return {
        "source": "checkout",
        "root": root.as_uri(),
        "revision": revision,
        "dirtyPatchDigest": _dirty_patch_digest(root, [], has_head=revision is not None),
        "buildDigest": build_digest,
    }


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        ["git", "-C", str(root), *args],
        capture_output=True,
        env={**os.environ, **_GIT_ENV},
        check=False,
        timeout=60,
    )


def project_provenance(root: Path, excluded: Iterable[Path]) -> dict[str, object]:
    """The project's revision and dirty-patch digest, or a digest of its files without Git."""
    excluded_rel = []
    for path in excluded:
        try:
            excluded_rel.append(path.resolve().relative_to(root).as_posix())
        except ValueError:
            continue
    top = _git(root, "rev-parse", "--show-toplevel")
    if top.returncode == 0 and Path(top.stdout.decode().strip()).resolve() == root:
        head = _git(root, "rev-parse", "--verify", "-q", "HEAD^{commit}")
        revision = head.stdout.decode().strip() if head.returncode == 0 else None
        dirty = _dirty_patch_digest(root, excluded_rel, has_head=revision is not None)
        digest = hash_json(
            {"format": "sevro.project.v1", "revision": revision, "dirtyPatchDigest": dirty}
        )
        return {
            "root": root.as_uri(),
            "revision": revision,
            "dirtyPatchDigest": dirty,
            "digest": digest,
        }
    files = _project_files(root, excluded_rel)
    digest = hash_json({"format": "sevro.project.v1", "files": files})
    return {"root": root.as_uri(), "revision": None, "dirtyPatchDigest": None, "digest": digest}


def _dirty_patch_digest(root: Path, excluded: list[str], *, has_head: bool) -> str | None:
    pathspec = ["--", ".", *(f":(exclude){p}" for p in excluded)]
    tracked = b""
    if has_head:
        diff = _git(root, "diff", "--binary", "HEAD", *pathspec)
        tracked = diff.stdout
    others = _git(root, "ls-files", "-z", "--others", "--exclude-standard", *pathspec)
    untracked = []
    for name in sorted(n for n in others.stdout.decode(errors="surrogateescape").split("\0") if n):
        path = root / name
        if path.is_symlink():
            untracked.append({"path": name, "symlink": os.readlink(path)})
        elif (data := _read_regular(path)) is not None:
            untracked.append({"path": name, "sha256": hashlib.sha256(data).hexdigest()})
    if not tracked and not untracked:
        return None
    return hash_json({"trackedPatch": hashlib.sha256(tracked).hexdigest(), "untracked": untracked})


def _read_regular(path: Path) -> bytes | None:
    """The bytes of a regular file; ``None`` for anything else, which is never opened."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(os.dup(fd), "rb") as handle:
            return handle.read(MAX_PROJECT_BYTES + 1)
    finally:
        os.close(fd)


def _special_kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "other"


def _project_files(root: Path, excluded: list[str]) -> list[dict[str, object]]:
    """Every entry below ``root`` (iteratively, any depth), without Git.

    Files come in ``os.walk`` order (a directory's files, then its subdirectories). Symlinks are
    recorded by their target text; FIFOs, sockets and devices by their kind only, never opened
    (a FIFO would block start-up); directories count toward the bound too.
    """
    files: list[dict[str, object]] = []
    total = 0
    seen = 0
    pending = [""]
    while pending:
        rel_dir = pending.pop()
        directory = root / rel_dir if rel_dir else root
        try:
            names = sorted(os.listdir(directory))
        except OSError:  # recorded, so the identity still changes when it becomes readable
            files.append({"path": rel_dir, "unreadable": True})
            continue
        subdirectories = []
        for name in names:
            rel = f"{rel_dir}/{name}" if rel_dir else name
            seen += 1
            if seen > MAX_PROJECT_FILES or total > MAX_PROJECT_BYTES:
                raise InvocationError(
                    f"project root {root} is not a Git repository and holds more than "
                    f"{MAX_PROJECT_FILES} entries or {MAX_PROJECT_BYTES} bytes; pass a smaller "
                    "--project-root"
                )
            path = directory / name
            try:
                mode = os.lstat(path).st_mode
            except OSError:
                continue  # gone since the listing
            if stat.S_ISDIR(mode):
                if name != ".git" and rel not in excluded:
                    subdirectories.append(rel)
            elif stat.S_ISLNK(mode):
                files.append({"path": rel, "symlink": os.readlink(path)})
            elif not stat.S_ISREG(mode):
                files.append({"path": rel, "special": _special_kind(mode)})
            elif (data := _read_regular(path)) is not None:
                total += len(data)
                files.append(
                    {
                        "path": rel,
                        "sha256": hashlib.sha256(data).hexdigest(),
                        "executable": os.access(path, os.X_OK),
                    }
                )
        pending.extend(reversed(subdirectories))
    return files
