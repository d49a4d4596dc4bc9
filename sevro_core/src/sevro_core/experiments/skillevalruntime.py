"""skill-eval ``runtime`` profiles, loaded strictly into a :class:`RuntimeProfile`.

The rules are skill-eval's (the ``Runtime Profile`` section of its definition schema): exact
keys, ``host`` ``pi`` (``piflow`` refused by name: sevro has no such host), ``session`` a
boolean, extension bundles of one entry file and one or more contained directory resources
snapshotted once here (so both arms get the same bytes and an edit after load changes nothing),
``environment.literal`` non-secret and recorded, ``environment.inherit`` names whose values
are never persisted and must be set now. Where skill-eval is silent sevro is strict (nested or
repeated resources, variable-name syntax, the launch-control list): see docs/skill-eval.md.
Every problem is one :class:`InvocationError` naming the file and the JSON pointer (exit 64).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from sevro_core.errors import InvocationError, join_pointer
from sevro_core.experiments.sources import DirectorySource, read_source
from sevro_core.formats.canonical import hash_json, sha256_hex
from sevro_core.formats.jsonio import JsonValue
from sevro_core.isolation.runtime import INJECTION, REFUSED_PREFIXES, RUNNER_OWNED, SHELL_STARTUP
from sevro_core.limits import (
    MAX_SKILLEVAL_ENVIRONMENT,
    MAX_SKILLEVAL_EXTENSION_BYTES,
    MAX_SKILLEVAL_EXTENSION_FILES,
    MAX_SKILLEVAL_EXTENSIONS,
    MAX_SKILLEVAL_LITERAL_CHARS,
    MAX_SKILLEVAL_SNAPSHOT_BYTES,
)
from sevro_core.models import ExtensionBundle, RuntimeProfile

RUNTIME_HOSTS = ("pi", "piflow")
"""skill-eval's runtime host names; sevro runs only ``pi``."""
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_SECRET_LIKE = re.compile(
    r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|AUTH|COOKIE|PRIVATE|SESSION_ID"
)
"""Literal names refused as secret-like: a literal value is recorded in evidence."""
LAUNCH_CONTROL = frozenset(
    {
        *RUNNER_OWNED,
        *SHELL_STARTUP,
        *INJECTION,
        "PATH",
        "SHELL",
        "USER",
        "LOGNAME",
        "PWD",
        "OLDPWD",
        "PI_CODING_AGENT_DIR",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "NO_PROXY",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
    }
)
"""Names that steer how the host and its tools start, load code or reach the network."""
LAUNCH_PREFIXES = (*REFUSED_PREFIXES, "NODE_", "NPM_CONFIG_", "PI_", "XDG_", "LC_")


def check_keys(
    document: Any, required: frozenset[str], optional: frozenset[str], shown: Path, base: str = ""
) -> None:
    """Exactly ``required`` and some of ``optional``; a JSON object."""
    if not isinstance(document, dict):
        raise InvocationError("must be a JSON object", source=shown, pointer=base)
    for key in document:
        if key not in required and key not in optional:
            raise InvocationError(
                f"unknown field {key[:80]!r}", source=shown, pointer=join_pointer(base, key)
            )
    for key in sorted(required):
        if key not in document:
            raise InvocationError(f"missing field {key!r}", source=shown, pointer=base)


def lexical(value: str, shown: Path, pointer: str) -> None:
    """Slash-separated, relative, no empty, ``.`` or ``..`` parts, no backslash or NUL."""
    parts = value.split("/")
    if (
        not value
        or len(value) > 1024
        or value.startswith("/")
        or "\\" in value
        or "\x00" in value
        or any(part in ("", ".", "..") for part in parts)
    ):
        raise InvocationError(
            f"path {value[:200]!r} must be a relative slash-separated path without empty, "
            "'.' or '..' parts",
            source=shown,
            pointer=pointer,
        )


def contained(path: Path, root: Path, shown: Path, pointer: str, *, must_exist: bool) -> Path:
    """The canonical path, refused when it leaves ``root`` (a symlink out counts)."""
    resolved = path.resolve()
    if resolved != root and root not in resolved.parents:
        raise InvocationError(
            f"{PurePosixPath(path)} resolves outside the definition root {root}",
            source=shown,
            pointer=pointer,
        )
    if must_exist and not resolved.exists():
        raise InvocationError(
            f"{PurePosixPath(path)} does not exist", source=shown, pointer=pointer
        )
    return resolved


def contained_path(value: Any, root: Path, shown: Path, pointer: str) -> str:
    """A declared path: a lexically safe relative string that exists inside ``root``."""
    if not isinstance(value, str):
        raise InvocationError("a path is a string", source=shown, pointer=pointer)
    lexical(value, shown, pointer)
    contained(root / value, root, shown, pointer, must_exist=True)
    return value


class RuntimeContext:
    """What loading one definition shares across its groups' runtimes: the parent environment
    inherited names must be set in, and the bytes of every bundle snapshotted so far (a suite's
    bundles stay in memory together, so they are bounded together)."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self.environ = environ
        self.snapshot_bytes = 0

    def charge(self, bundle: ExtensionBundle, shown: Path, pointer: str) -> None:
        self.snapshot_bytes += sum(len(data) for data in bundle.files.values())
        if self.snapshot_bytes > MAX_SKILLEVAL_SNAPSHOT_BYTES:
            raise InvocationError(
                f"the definition's extension bundles hold more than "
                f"{MAX_SKILLEVAL_SNAPSHOT_BYTES} bytes together",
                source=shown,
                pointer=pointer,
            )


def load_runtime(
    value: Any, root: Path, shown: Path, pointer: str, context: RuntimeContext
) -> RuntimeProfile:
    """The group's ``runtime``; inherited names must be set in ``context.environ`` (checked
    now, their values never kept)."""
    check_keys(
        value,
        frozenset({"host"}),
        frozenset({"session", "extensions", "environment"}),
        shown,
        pointer,
    )
    host = value["host"]
    if host == "piflow":
        raise InvocationError(
            "sevro has no piflow host (runtime.host pi is supported)",
            source=shown,
            pointer=join_pointer(pointer, "host"),
        )
    if host not in RUNTIME_HOSTS:
        raise InvocationError(
            "runtime.host is pi or piflow", source=shown, pointer=join_pointer(pointer, "host")
        )
    session = value.get("session", False)
    if type(session) is not bool:
        raise InvocationError(
            "runtime.session is true or false",
            source=shown,
            pointer=join_pointer(pointer, "session"),
        )
    extensions = _extensions(value.get("extensions", []), root, shown, f"{pointer}/extensions")
    for index, bundle in enumerate(extensions):
        context.charge(bundle, shown, f"{pointer}/extensions/{index}")
    literal, inherit = _environment(
        value.get("environment", {}), shown, f"{pointer}/environment", context.environ
    )
    return RuntimeProfile(host, session, extensions, literal, inherit)


def _extensions(value: Any, root: Path, shown: Path, pointer: str) -> tuple[ExtensionBundle, ...]:
    if not isinstance(value, list) or len(value) > MAX_SKILLEVAL_EXTENSIONS:
        raise InvocationError(
            f"runtime.extensions is an array of at most {MAX_SKILLEVAL_EXTENSIONS} bundles",
            source=shown,
            pointer=pointer,
        )
    bundles: list[ExtensionBundle] = []
    for index, item in enumerate(value):
        where = join_pointer(pointer, index)
        bundle = _bundle(item, root, shown, where)
        if any(b.entry == bundle.entry for b in bundles):
            raise InvocationError(
                f"extension entry {bundle.entry!r} is declared twice",
                source=shown,
                pointer=f"{where}/entry",
            )
        bundles.append(bundle)
    return tuple(bundles)


def _bundle(item: Any, root: Path, shown: Path, pointer: str) -> ExtensionBundle:
    check_keys(item, frozenset({"entry", "resources"}), frozenset(), shown, pointer)
    entry = contained_path(item["entry"], root, shown, f"{pointer}/entry")
    if not (root / entry).is_file():
        raise InvocationError(
            f"extension entry {entry!r} is not a regular file",
            source=shown,
            pointer=f"{pointer}/entry",
        )
    resources = item["resources"]
    if not isinstance(resources, list) or not resources:
        raise InvocationError(
            "resources is a non-empty array of directories",
            source=shown,
            pointer=f"{pointer}/resources",
        )
    files: dict[str, bytes] = {}
    declared: list[str] = []
    for index, resource in enumerate(resources):
        where = join_pointer(pointer, "resources", index)
        path = contained_path(resource, root, shown, where)
        if any(_nested(path, other) or _nested(other, path) for other in declared):
            raise InvocationError(
                f"resource {path!r} repeats or nests another resource of this bundle",
                source=shown,
                pointer=where,
            )
        declared.append(path)
        if not (root / path).is_dir():
            raise InvocationError(
                f"resource {path!r} is not a directory", source=shown, pointer=where
            )
        for name, data in _snapshot(root / path, shown, where):
            files[f"{path}/{name}"] = data
            _bounded(files, shown, where)
    if not any(_nested(r, entry) for r in declared):
        for _, data in _snapshot(root / entry, shown, f"{pointer}/entry"):
            files[entry] = data
            _bounded(files, shown, f"{pointer}/entry")
    if entry not in files:
        raise InvocationError(
            f"extension entry {entry!r} is not among its resources' files (a .git entry?)",
            source=shown,
            pointer=f"{pointer}/entry",
        )
    return ExtensionBundle(entry=entry, files=files, digest=bundle_digest(files))


def _nested(parent: str, child: str) -> bool:
    return child == parent or child.startswith(parent + "/")


def _snapshot(path: Path, shown: Path, pointer: str) -> list[tuple[str, bytes]]:
    """One resource's files, read bounded with no link followed (a link is refused)."""
    try:
        tree = read_source(DirectorySource(path))
    except InvocationError as error:
        raise InvocationError(error.message, source=shown, pointer=pointer) from None
    return [(entry.path, entry.data) for entry in tree.files]


def _bounded(files: Mapping[str, bytes], shown: Path, pointer: str) -> None:
    if len(files) > MAX_SKILLEVAL_EXTENSION_FILES:
        raise InvocationError(
            f"an extension bundle has more than {MAX_SKILLEVAL_EXTENSION_FILES} files",
            source=shown,
            pointer=pointer,
        )
    if sum(len(data) for data in files.values()) > MAX_SKILLEVAL_EXTENSION_BYTES:
        raise InvocationError(
            f"an extension bundle holds more than {MAX_SKILLEVAL_EXTENSION_BYTES} bytes",
            source=shown,
            pointer=pointer,
        )


def bundle_digest(files: Mapping[str, bytes]) -> str:
    """``sha256:<hex>`` of the canonical JSON ``[[path, sha256hex], ...]`` sorted by path."""
    listing: list[JsonValue] = [[path, sha256_hex(files[path])] for path in sorted(files)]
    return f"sha256:{hash_json(listing)}"


def _environment(
    value: Any, shown: Path, pointer: str, environ: Mapping[str, str]
) -> tuple[dict[str, str], tuple[str, ...]]:
    check_keys(value, frozenset(), frozenset({"literal", "inherit"}), shown, pointer)
    literal = value.get("literal", {})
    if not isinstance(literal, dict):
        raise InvocationError(
            "environment.literal is an object of strings",
            source=shown,
            pointer=f"{pointer}/literal",
        )
    inherit = value.get("inherit", [])
    if not isinstance(inherit, list):
        raise InvocationError(
            "environment.inherit is an array of names", source=shown, pointer=f"{pointer}/inherit"
        )
    if len(literal) + len(inherit) > MAX_SKILLEVAL_ENVIRONMENT:
        raise InvocationError(
            f"more than {MAX_SKILLEVAL_ENVIRONMENT} environment variables",
            source=shown,
            pointer=pointer,
        )
    for name, text in literal.items():
        where = join_pointer(pointer, "literal", name)
        _name(name, shown, where, secret=True)
        if not isinstance(text, str) or "\x00" in text or len(text) > MAX_SKILLEVAL_LITERAL_CHARS:
            raise InvocationError(
                f"a literal value is a string of at most {MAX_SKILLEVAL_LITERAL_CHARS} "
                "characters without NUL",
                source=shown,
                pointer=where,
            )
    names: list[str] = []
    for index, name in enumerate(inherit):
        where = join_pointer(pointer, "inherit", index)
        _name(name, shown, where, secret=False)
        if name in names:
            raise InvocationError(f"{name} is inherited twice", source=shown, pointer=where)
        if name in literal:
            raise InvocationError(
                f"{name} is both literal and inherited", source=shown, pointer=where
            )
        if name not in environ:
            raise InvocationError(
                f"missing inherited variable {name} invalidates the variant",
                source=shown,
                pointer=where,
            )
        names.append(name)
    return dict(literal), tuple(names)


def _name(name: Any, shown: Path, pointer: str, *, secret: bool) -> None:
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
        raise InvocationError(
            f"{str(name)[:80]!r} is not a variable name ([A-Za-z_][A-Za-z0-9_]*)",
            source=shown,
            pointer=pointer,
        )
    upper = name.upper()
    if upper in LAUNCH_CONTROL or upper.startswith(LAUNCH_PREFIXES):
        raise InvocationError(
            f"{name} is a launch-control or loader variable, which a runtime may not set",
            source=shown,
            pointer=pointer,
        )
    if secret and _SECRET_LIKE.search(upper):
        raise InvocationError(
            f"{name} looks like a secret: a literal is recorded in evidence (inherit it instead)",
            source=shown,
            pointer=pointer,
        )
