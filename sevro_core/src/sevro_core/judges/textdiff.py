"""The change a trial made to a fixture that is not a Git repository, as a Git-style diff.

Git fixtures give the advisory reviewer ``git diff`` from their base commit. Other fixtures
(inline files, the form skill-eval groups and skill-creator evals map to) have no base commit,
so the fixture is materialised again, without any arm, and its text files are compared with the
workspace's: a unified diff per changed file, under the same ``diff --git a/P b/P`` headers, so
the blind view withholds paths the same way. Both sides are read by the comparator's bounded
reader (UTF-8 text only, never following a symlink, ``.git`` skipped); a side beyond its bounds
marks the diff truncated rather than guessing.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Sequence
from pathlib import Path

from sevro_core.judges.advisory import is_withheld
from sevro_core.judges.subjects import BaseFiles, read_base_files

NO_NEWLINE = "\\ No newline at end of file\n"


def text_diff(
    before: BaseFiles, workspace: Path, withheld: Sequence[str] = ()
) -> tuple[bytes, bool]:
    """The workspace's change from ``before``, and whether either side was cut. Paths at or
    below ``withheld`` (where an arm's skills and context were mounted) are left out, as a Git
    fixture's diff leaves them out, so no judge learns from the diff which arm it reads."""
    after = read_base_files(workspace)
    sections = [
        "".join(_section(path, before.files.get(path), after.files.get(path)))
        for path in sorted(set(before.files) | set(after.files))
        if before.files.get(path) != after.files.get(path) and not is_withheld(path, withheld)
    ]
    return "".join(sections).encode("utf-8", "surrogateescape"), before.truncated or after.truncated


def _section(path: str, old: str | None, new: str | None) -> Iterator[str]:
    yield f"diff --git a/{path} b/{path}\n"
    if old is None:
        yield "new file mode 100644\n"
    elif new is None:
        yield "deleted file mode 100644\n"
    lines = difflib.unified_diff(
        _lines(old),
        _lines(new),
        "/dev/null" if old is None else f"a/{path}",
        "/dev/null" if new is None else f"b/{path}",
        n=3,
    )
    for line in lines:
        if line.startswith(("---", "+++")):
            yield line if line.endswith("\n") else line + "\n"
        elif line.endswith("\n"):
            yield line
        else:
            yield line + "\n" + NO_NEWLINE


def _lines(text: str | None) -> list[str]:
    return [] if text is None else text.splitlines(keepends=True)
