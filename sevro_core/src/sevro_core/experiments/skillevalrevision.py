"""skill-eval's description-only rule: two versions of a skill differ only in ``description``.

A ``type: description`` group asks whether a new description changes when the agent reads the
skill; any other difference (body, resources, other front matter) would confound the answer, so
it is refused before anything runs.
"""

from __future__ import annotations

from sevro_core.experiments.bundles import SKILL_FILE, parse_front_matter
from sevro_core.experiments.sources import SourceTree


def description_only_difference(baseline: SourceTree, candidate: SourceTree) -> str | None:
    """None when the trees are equal except the front matter ``description``; else what differs."""
    files = {entry.path: entry for entry in baseline.files}
    others = {entry.path: entry for entry in candidate.files}
    if set(files) != set(others):
        changed = sorted(set(files) ^ set(others))
        return f"their files differ ({', '.join(changed[:5])})"
    for path, entry in files.items():
        other = others[path]
        if path == SKILL_FILE:
            continue
        if (entry.mode, entry.sha256) != (other.mode, other.sha256):
            return f"resource {path} differs"
    before, after = files[SKILL_FILE].data, others[SKILL_FILE].data
    if _body(before) != _body(after):
        return f"the {SKILL_FILE} body differs"
    front, other_front = (
        parse_front_matter(data, f"{tree.source.describe()}/{SKILL_FILE}")
        for data, tree in ((before, baseline), (after, candidate))
    )
    front.pop("description", None)
    other_front.pop("description", None)
    if front != other_front:
        keys = sorted(k for k in {*front, *other_front} if front.get(k) != other_front.get(k))
        return f"front matter {', '.join(keys[:5])} differs"
    return None


def _body(data: bytes) -> bytes:
    """Everything after the closing ``---`` line of the front matter."""
    lines = data.removeprefix(b"\xef\xbb\xbf").splitlines(keepends=True)
    closing = next(
        (i for i, line in enumerate(lines[1:], 1) if line.rstrip(b"\r\n") == b"---"), len(lines)
    )
    return b"".join(lines[closing + 1 :])
