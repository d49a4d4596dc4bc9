"""Where a run came from: the runner build and the project revision (identity inputs)."""

from __future__ import annotations

import functools
import hashlib
import os
import subprocess
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

from sevro_core.canonical import hash_json
from sevro_core.errors import InvocationError
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
        elif path.is_file():
            untracked.append(
                {"path": name, "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
            )
    if not tracked and not untracked:
        return None
    return hash_json({"trackedPatch": hashlib.sha256(tracked).hexdigest(), "untracked": untracked})


def _project_files(root: Path, excluded: list[str]) -> list[dict[str, object]]:
    files: list[dict[str, object]] = []
    total = 0
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = Path(dirpath).relative_to(root).as_posix()
        dirnames[:] = sorted(
            d
            for d in dirnames
            if d != ".git" and (f"{rel_dir}/{d}" if rel_dir != "." else d) not in excluded
        )
        for name in sorted(filenames):
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                files.append({"path": rel, "symlink": os.readlink(path)})
                continue
            data = path.read_bytes()
            total += len(data)
            files.append(
                {
                    "path": rel,
                    "sha256": hashlib.sha256(data).hexdigest(),
                    "executable": os.access(path, os.X_OK),
                }
            )
            if len(files) > MAX_PROJECT_FILES or total > MAX_PROJECT_BYTES:
                raise InvocationError(
                    f"project root {root} is not a Git repository and holds more than "
                    f"{MAX_PROJECT_FILES} files or {MAX_PROJECT_BYTES} bytes; pass a smaller "
                    "--project-root"
                )
    return files
