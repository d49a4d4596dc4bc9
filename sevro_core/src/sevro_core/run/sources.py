"""Case sources: local repositories that repository fixtures clone, declared by the operator.

``--case-source-root DIR`` bounds where sources may live; ``--case-source-map-file FILE`` maps
source ids to ``file:///`` URLs: a directory (a repository a fixture clones) or a regular file
(an extension's ``sourceRef`` preparation artifact). Every URL is canonicalised (symlinks
resolved) and must stay inside the root, so a case can only name what the operator put there.
What fixture providers receive, :class:`~sevro_core.plugin.protocols.CaseSources`, sits with
their protocols.
"""

from __future__ import annotations

import re
import urllib.parse
from pathlib import Path

from sevro_core.errors import InvocationError, join_pointer
from sevro_core.formats.jsonio import read_json_file
from sevro_core.limits import MAX_CASE_SOURCE_MAP_BYTES, MAX_CASE_SOURCES
from sevro_core.plugin.protocols import CaseSources

SOURCE_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
_SOURCE_ID_RE = re.compile(SOURCE_ID_PATTERN)
MAX_SOURCE_ID_LENGTH = 128


def load_case_sources(root: Path | None, map_file: Path | None) -> CaseSources | None:
    """Read and check the source map; both flags or neither (``InvocationError``, exit 64)."""
    if root is None and map_file is None:
        return None
    if root is None or map_file is None:
        raise InvocationError(
            "--case-source-root and --case-source-map-file must be given together"
        )
    try:
        canonical_root = root.resolve(strict=True)
    except OSError:
        raise InvocationError("--case-source-root does not exist", source=root) from None
    if not canonical_root.is_dir():
        raise InvocationError("--case-source-root is not a directory", source=root)
    document = read_json_file(map_file, MAX_CASE_SOURCE_MAP_BYTES, what="case source map")
    if not isinstance(document, dict):
        raise InvocationError(
            "a case source map is a JSON object of source id -> file:/// URL", source=map_file
        )
    if len(document) > MAX_CASE_SOURCES:
        raise InvocationError(f"more than {MAX_CASE_SOURCES} sources", source=map_file)
    sources = {}
    for source_id, url in document.items():
        pointer = join_pointer("", source_id)
        if len(source_id) > MAX_SOURCE_ID_LENGTH or not _SOURCE_ID_RE.fullmatch(source_id):
            raise InvocationError(
                f"source id must match {SOURCE_ID_PATTERN} (at most {MAX_SOURCE_ID_LENGTH} "
                "characters)",
                source=map_file,
                pointer=pointer,
            )
        sources[source_id] = _source_path(url, canonical_root, map_file, pointer)
    return CaseSources(root=canonical_root, map_file=map_file.resolve(), sources=sources)


def _source_path(url: object, root: Path, map_file: Path, pointer: str) -> Path:
    def refuse(message: str) -> InvocationError:
        return InvocationError(message, source=map_file, pointer=pointer)

    if not isinstance(url, str):
        raise refuse("must be a file:/// URL string")
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "file" or parts.netloc or parts.query or parts.fragment:
        raise refuse(f"{url!r} is not a file:/// URL without host, query or fragment")
    path = Path(urllib.parse.unquote(parts.path, errors="strict"))
    if not path.is_absolute() or "\0" in str(path):
        raise refuse(f"{url!r} does not name an absolute path")
    try:
        canonical = path.resolve(strict=True)
    except OSError:
        raise refuse(f"{url!r} does not exist") from None
    if not canonical.is_relative_to(root):
        raise refuse(f"{url!r} resolves to {canonical}, outside --case-source-root {root}")
    if not (canonical.is_dir() or canonical.is_file()):
        raise refuse(f"{url!r} is neither a directory nor a regular file")
    return canonical
